"""Remove what an embedded Chroma store keeps of deleted records in its files.

Chroma 1.x writes every add, upsert and update, with the full document and
metadata, to a write-ahead log: the ``embeddings_queue`` table of
``chroma.sqlite3``. It prunes the log only up to what its vector index has
checkpointed, which happens every ``sync_threshold`` (default 1000) writes
of the collection; until then a deleted record's text stays in the log.
``chroma vacuum`` prunes to the same checkpoint, so it does not help, and
Chroma has no call that removes one record from its log. :func:`purge` does
it in the file, in three steps:

1. In one transaction, delete every log entry of a record that a later entry
   of the log deletes. The delete entries stay (they hold only the record's
   id). On open, Chroma replays the log from the vector index's checkpoint;
   without the removed entries the replay ends in the same collection, since
   each of them was followed by its record's delete (a delete of a record the
   index never had is a no-op).
2. Merge the full-text index (FTS5 ``optimize``): its older segments keep the
   terms of deleted documents until a merge.
3. ``VACUUM`` the file: the pages Chroma freed when it deleted rows still
   hold their bytes (its connections do not use ``secure_delete``).

A vector index that has not reached its first checkpoint is written by
Chroma (its hnswlib) at its full capacity, the unused part straight from
uninitialised memory: bytes of whatever the process handled before,
including text of records deleted since (seen in tests: log entries of a
forgotten user in ``data_level0.bin`` after a re-open in the same process).
:func:`scrub_index` zeroes that unused capacity; the purge and every open of
an embedded store run it.

This reads Chroma's private schema: a layout it does not know raises
:class:`~memory_vec._model.errors.BackendError` instead of guessing. Run it while
nothing else uses the store: the backend's own process (the embedded store
is locked to it), or a Chroma server's directory with the server stopped.
"""

from __future__ import annotations

import os
import sqlite3
import struct
from collections.abc import Iterator
from contextlib import closing, contextmanager

from memory_vec._model.errors import BackendError
from memory_vec.backends.base import PurgeReport

__all__ = ["purge", "scrub_index"]

_DELETE = 3  # the operation code of a delete in Chroma's log (0 add, 1 update, 2 upsert)
_LOG_COLUMNS = {"seq_id", "operation", "topic", "id"}
_FTS = "embedding_fulltext_search"
# hnswlib's header.bin starts: int32 version, then size_t offsetLevel0, max_elements,
# cur_element_count, size_data_per_element (little-endian on every platform Chroma ships).
_HEADER = struct.Struct("<iQQQQ")
_HEADER_VERSION = 1


def purge(path: str, collection_id: str, *, timeout: float = 30.0) -> PurgeReport:
    """Purge the log of collection ``collection_id`` in the store at ``path``; see the module doc.

    Returns:
        What was done, and ``residue``: log entries still holding a record the
        collection no longer has, counted after the purge (0 when clean).
    """
    db_file = os.path.join(path, "chroma.sqlite3")
    if not os.path.isfile(db_file):
        raise BackendError(f"Cannot purge the Chroma store at {path}: no chroma.sqlite3 there")
    with _connection(db_file, timeout) as conn:
        _check_layout(conn, db_file)
        topics = [
            t for (t,) in conn.execute("SELECT DISTINCT topic FROM embeddings_queue") if t.endswith("/" + collection_id)
        ]
        removed = 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            for topic in topics:
                removed += conn.execute(
                    "DELETE FROM embeddings_queue WHERE seq_id IN ("
                    " SELECT q.seq_id FROM embeddings_queue AS q JOIN ("
                    "  SELECT id, MAX(seq_id) AS deleted_at FROM embeddings_queue"
                    "  WHERE topic = ? AND operation = ? GROUP BY id) AS d ON q.id = d.id"
                    " WHERE q.topic = ? AND q.operation <> ? AND q.seq_id < d.deleted_at)",
                    (topic, _DELETE, topic, _DELETE),
                ).rowcount
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        has_fts = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (_FTS,)).fetchone() is not None
        if has_fts:
            conn.execute(f"INSERT INTO {_FTS}({_FTS}) VALUES ('optimize')")
        conn.execute("VACUUM")
        residue = sum(_stale_entries(conn, topic, collection_id) for topic in topics)
        free_pages = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        scrubbed = _scrub(conn, path, collection_id)
    notes = [
        f"chroma: {removed} log entries of deleted records removed"
        + (", full-text index merged" if has_fts else "")
        + ", chroma.sqlite3 vacuumed"
        + (f", {scrubbed} bytes of unused vector-index capacity zeroed" if scrubbed else ""),
        (
            "chroma: the vector index files may keep the vectors (not the text) of deleted records "
            "as deleted slots until Chroma rebuilds the index"
        ),
    ]
    if free_pages:
        notes.append(f"chroma: {free_pages} free pages left after VACUUM")
    return PurgeReport(residue == 0 and free_pages == 0, residue + free_pages, tuple(notes))


@contextmanager
def _connection(db_file: str, timeout: float) -> Iterator[sqlite3.Connection]:
    try:
        with closing(sqlite3.connect(db_file, timeout=timeout, isolation_level=None)) as conn:
            conn.execute("PRAGMA secure_delete=ON")
            yield conn
    except sqlite3.Error as exc:
        raise BackendError(
            f"Could not purge the Chroma log in {db_file}: {type(exc).__name__}: {exc}. "
            "Nothing else may use the store meanwhile (stop a Chroma server first)."
        ) from exc


def _check_layout(conn: sqlite3.Connection, db_file: str) -> None:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(embeddings_queue)")}
    segments = {row[1] for row in conn.execute("PRAGMA table_info(segments)")}
    if not columns >= _LOG_COLUMNS or not {"id", "scope", "collection"} <= segments:
        raise BackendError(
            f"{db_file} does not have the log layout memory-vec knows (chromadb 1.x: embeddings_queue with "
            f"{sorted(_LOG_COLUMNS)}); its deleted records were not purged from the log. Check the chromadb "
            "version, or run `chroma vacuum` with the store closed."
        )


def _stale_entries(conn: sqlite3.Connection, topic: str, collection_id: str) -> int:
    """Log entries (other than deletes) of records the collection's metadata segment no longer has."""
    (n,) = conn.execute(
        "SELECT COUNT(*) FROM embeddings_queue AS q WHERE q.topic = ? AND q.operation <> ? AND NOT EXISTS ("
        " SELECT 1 FROM embeddings AS e JOIN segments AS s ON e.segment_id = s.id"
        " WHERE s.collection = ? AND s.scope = 'METADATA' AND e.embedding_id = q.id)",
        (topic, _DELETE, collection_id),
    ).fetchone()
    return int(n)


def scrub_index(path: str, collection_id: str, *, timeout: float = 30.0) -> int:
    """Zero the unused capacity of the collection's vector index files; how many bytes were zeroed.

    Only bytes past the elements the on-disk header counts are touched, so
    the index Chroma loads stays the same. An unknown header version is left alone.
    """
    db_file = os.path.join(path, "chroma.sqlite3")
    if not os.path.isfile(db_file):
        return 0
    with _connection(db_file, timeout) as conn:
        return _scrub(conn, path, collection_id)


def _scrub(conn: sqlite3.Connection, path: str, collection_id: str) -> int:
    zeroed = 0
    for (segment_id,) in conn.execute(
        "SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'", (collection_id,)
    ).fetchall():
        folder = os.path.join(path, str(segment_id))
        try:
            with open(os.path.join(folder, "header.bin"), "rb") as f:
                header = f.read(_HEADER.size)
        except OSError:  # no index written yet
            continue
        if len(header) < _HEADER.size:
            continue
        version, _, _, count, per_element = _HEADER.unpack(header)
        if version != _HEADER_VERSION:
            continue
        zeroed += _zero_tail(os.path.join(folder, "data_level0.bin"), count * per_element)
        zeroed += _zero_tail(os.path.join(folder, "length.bin"), count * 4)  # one float32 per element
    return zeroed


def _zero_tail(file: str, start: int) -> int:
    """Overwrite ``file`` from byte ``start`` to its end with zeros (in place: its size stays)."""
    try:
        size = os.path.getsize(file)
    except OSError:
        return 0
    if size <= start:
        return 0
    with open(file, "r+b") as f:
        f.seek(start)
        left = size - start
        while left:
            n = min(left, 1 << 20)
            f.write(bytes(n))
            left -= n
        f.flush()
        os.fsync(f.fileno())
    return size - start
