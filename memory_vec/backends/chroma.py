"""Chroma backend: an embedded ``PersistentClient`` or a Chroma server.

One collection per ``MemoryConfig.collection`` holds every user; user scope
is a ``where`` on ``user_id``, which Chroma resolves before it searches the
allowed vectors only. A row is the text as document, the fields a filter
narrows on as metadata keys, the rest as one JSON string (:mod:`._chroma_rows`).
Filters become ``where`` dicts, never strings; the caller's metadata is
matched on the rows.

An embedded store is one process's: the first to open ``persist_dir/chroma``
holds a file lock until ``close()``, and another gets
:class:`StoreLockedError` instead of a diverging store (a server serves many).
Vectors are always passed in: no embedding function, nothing downloads.

Forget: Chroma keeps deleted text in its write-ahead log and free pages;
:meth:`ChromaBackend.purge` removes it from an embedded store
(:mod:`._chroma_purge`); a server's directory only with the server stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_vec._model.errors import BackendError, ConfigError, InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec.backends import _chroma_lock, _chroma_purge
from memory_vec.backends._chroma_collection import (
    HNSW_KEYS,
    SCHEMA_VERSION,
    check_compatible,
    chroma_name,
    connect,
    get_or_create,
)
from memory_vec.backends._chroma_collection import import_chromadb as import_chromadb
from memory_vec.backends._chroma_errors import Translate, is_not_found
from memory_vec.backends._chroma_filters import NothingMatches, owner_wheres, where_clause
from memory_vec.backends._chroma_query import query_where, score_ids
from memory_vec.backends._chroma_rows import clear_stale_keys, decode, encode, rewritten, rows_with_vectors, zip_page
from memory_vec.backends.base import (
    EVERY_RECORD,
    BackendLimits,
    BaseBackend,
    PurgeReport,
    RecordFilter,
    ScoredRecord,
    check_dimension,
    checked_vectors,
    not_opened_for_writes,
    oldest_first,
    stacked,
)

if TYPE_CHECKING:
    from memory_vec._model.config import MemoryConfig

__all__ = ["SCHEMA_VERSION", "ChromaBackend"]

log = logging.getLogger("memory_vec")
_OPTIONS = ("headers", "tenant", "database", "hnsw", "ssl", "exact_limit")
_PAGE = 5000  # rows per get() page when scanning


# A user's scope of at most this many rows is scored exactly: at 100k rows the turn is 27 % faster
# than Chroma's filtered HNSW search and no longer grows with other users' data (1.28x for 10x the
# collection, against 1.98x); at 10k it costs ~10 % more (benchmarks/RESULTS.md, "Chroma's exact_limit").
DEFAULT_EXACT_LIMIT = 500


_META_STATE = "memory_vec_working_state"


class ChromaBackend(BaseBackend):
    """Memories in Chroma, embedded or on a server.

    Example:
        >>> backend = ChromaBackend(path="./.memory_vec/chroma")          # doctest: +SKIP
        >>> backend = ChromaBackend(url="http://127.0.0.1:8000",           # doctest: +SKIP
        ...                         headers={"Authorization": "Bearer t"})
        >>> backend.open(dimension=384, model_id="multilingual-e5-small")  # doctest: +SKIP

    From config (what ``MemoryCore`` does): ``MemoryConfig(backend="chroma")``
    for the embedded store under ``persist_dir/chroma``, plus
    ``url="https://host:port"`` for a server. ``backend_options`` may hold
    ``headers``, ``tenant``, ``database`` and ``hnsw`` (e.g.
    ``{"max_neighbors": 32, "ef_construction": 200, "ef_search": 100}``).
    """

    name = "chroma"
    vector_reads = True
    resettable = True
    persistent = True
    # Measured with chromadb 1.5.9, embedded and `chroma run`: documents of 32 MB, ids of 1 MB and
    # metadata strings of 8 MB round-trip, so no size limit is Chroma's own. Integer keys are
    # 64-bit (2**63 breaks equality filters, -2**63 - 1 comes back as a float embedded and is
    # refused by a server). The caller's metadata is JSON in a row; the library's 64-bit bound holds.
    limits = BackendLimits(int_min=-(2**63), int_max=2**63 - 1)

    def __init__(
        self,
        *,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        collection: str = "memory_vec",
        headers: dict[str, str] | None = None,
        tenant: str | None = None,
        database: str | None = None,
        hnsw: dict[str, Any] | None = None,
        exact_limit: int = DEFAULT_EXACT_LIMIT,
    ) -> None:
        if (path is None) == (url is None):
            raise ConfigError("ChromaBackend needs exactly one of path= (embedded) or url= (server)")
        unknown = sorted(set(hnsw or {}) - set(HNSW_KEYS))
        if unknown:
            raise ConfigError(f"backend_options.hnsw: unknown keys {unknown}; allowed: {', '.join(HNSW_KEYS)}")
        self.path = os.path.abspath(path) if path is not None else None
        self.url = url
        self.collection_name = chroma_name(collection)  # a name Chroma refuses is mapped (_names)
        self.headers = dict(headers or {})
        self.tenant = tenant
        self.database = database
        self.hnsw = dict(hnsw or {})
        # A query scope (one user's rows, the shared rows) of at most this many rows is scored
        # exactly instead of by Chroma's filtered HNSW search (see _chroma_query).
        if isinstance(exact_limit, bool) or not isinstance(exact_limit, int) or not 0 <= exact_limit <= 100_000:
            raise ConfigError(
                f"Chroma backend option exact_limit must be an integer from 0 to 100000, got {exact_limit!r}"
            )
        self.exact_limit = exact_limit
        # A server serialises writers itself; an embedded store is one process only.
        self.supports_multiprocess = url is not None
        self._lock = threading.RLock()
        self._client: Any = None
        self._collection: Any = None
        self._verified = False  # collection matches the embedder given to open()
        self._dimension: int | None = None
        self._model_id: str | None = None
        self._max_batch = 1000

    @classmethod
    def from_config(cls, config: MemoryConfig) -> ChromaBackend:
        options = dict(config.backend_options)
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(
                f"MemoryConfig.backend_options: got {unknown} for backend 'chroma'; allowed: {', '.join(_OPTIONS)}"
            )
        common: dict[str, Any] = {
            "collection": config.collection,
            "headers": options.get("headers"),
            "tenant": options.get("tenant"),
            "database": options.get("database"),
            "hnsw": options.get("hnsw"),
        }
        if "exact_limit" in options:
            common["exact_limit"] = options["exact_limit"]
        if config.url is None:
            return cls(path=os.path.join(config.persist_dir, "chroma"), **common)
        return cls(url=config.url, **common)

    # --- lifecycle -------------------------------------------------------------------------
    def open(self, *, dimension: int, model_id: str) -> None:
        """Create the collection for this embedder, or check the existing one.

        Raises:
            EmbeddingModelMismatchError: the collection holds another model's vectors.
            SchemaMismatchError: the collection was not made by this memory-vec version.
            StoreLockedError: another process has the embedded store open.
            BackendUnavailableError: the server cannot be reached.
        """
        with self._lock, self._translated("open the collection"):
            self._connect()
            collection = get_or_create(self._client, self.collection_name, dimension, model_id, self.hnsw)
            self._collection = collection
            check_compatible(collection, self.collection_name, self.url or self.path, dimension, model_id)
            if self.path is not None:
                # Reading makes Chroma (re)write a new vector index now, with unused capacity
                # from uninitialised memory: zero that (see _chroma_purge).
                collection.count()
                try:
                    _chroma_purge.scrub_index(self.path, str(collection.id))
                except BackendError as exc:  # the store works without it; purge() tries again
                    log.warning("memory-vec: could not zero the unused vector-index capacity: %s", exc)
            self._dimension, self._model_id, self._verified = dimension, model_id, True

    def reset(self, *, dimension: int, model_id: str) -> None:
        """Delete every record and re-create the collection for another embedder (see ``reembed``)."""
        self.drop()
        self.open(dimension=dimension, model_id=model_id)

    def drop(self) -> None:
        """Delete the collection and everything in it (tests, ``forget`` of a whole store)."""
        with self._lock, self._translated("drop the collection"):
            self._connect()
            try:
                self._client.delete_collection(self.collection_name)
            except Exception as exc:  # a missing collection is what we want anyway
                if not is_not_found(exc):
                    raise
            self._collection = None
            self._verified = False

    def close(self) -> None:
        """Release the client and, for an embedded store, the process lock."""
        with self._lock:
            client, self._client, self._collection, self._verified = self._client, None, None, False
            if client is not None and not _chroma_lock.keep_if_inherited(self.path, client):
                with contextlib.suppress(Exception):  # closing is best effort; the lock is what matters
                    client.close()
            if self.path is not None and client is not None:
                _chroma_lock.release(self.path)

    def purge(self) -> PurgeReport:
        """After deletes: remove deleted records' text from the embedded store's files.

        Removes their entries from Chroma's write-ahead log, merges the
        full-text index and vacuums ``chroma.sqlite3`` (see :mod:`._chroma_purge`);
        the cost grows with the file (VACUUM rewrites it). Needs no ``open()``,
        so an operator can purge a Chroma server's directory with the server
        stopped: ``ChromaBackend(path=DIR, collection=NAME).purge()``. For a
        server (``url``) nothing is done here: the report says what it keeps.
        """
        if self.path is None:
            note = (
                f"chroma server {self.url}: deleted records stay in the server's write-ahead log and "
                "free pages (chroma.sqlite3 under its --path) until its vector index checkpoints; to remove "
                "them, stop the server and run ChromaBackend(path=DIR, collection=...).purge() on its directory"
            )
            return PurgeReport(False, 0, (note,))
        with self._lock, self._translated("purge deleted records"):
            self._connect()
            collection = self._collection or self._client.get_collection(self.collection_name, embedding_function=None)
            return _chroma_purge.purge(self.path, str(collection.id))

    @property
    def model_id(self) -> str | None:
        return self._model_id

    # --- writes ----------------------------------------------------------------------------
    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        self._write(records, vectors, new=False)

    def insert_new(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        # No old metadata to clear: one call instead of a get and an upsert.
        self._write(records, vectors, new=True)

    def _write(self, records: Sequence[MemoryRecord], vectors: np.ndarray, *, new: bool) -> None:
        vectors = checked_vectors(records, vectors)
        if not records:
            return
        if len({r.id for r in records}) != len(records):
            raise InvalidInputError("upsert got the same record id twice in one batch")
        collection = self._writable()
        check_dimension(vectors.shape[1], self._dimension, self._model_id)
        encoded = [encode(r) for r in records]  # encoding errors surface before anything is written
        with self._lock, self._translated("write records"):
            for start in range(0, len(records), self._max_batch):
                end = start + self._max_batch
                ids = [r.id for r in records[start:end]]
                metadatas = encoded[start:end]
                if not new:
                    stored = collection.get(ids=ids, include=["metadatas"])
                    metadatas = clear_stale_keys(dict(zip(stored["ids"], stored["metadatas"])), ids, metadatas)
                collection.upsert(
                    ids=ids,
                    embeddings=vectors[start:end],
                    metadatas=metadatas,
                    documents=[r.text for r in records[start:end]],
                )

    def update(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        collection = self._writable()
        records = list({r.id: r for r in records}.values())  # an id given twice: the last version, as in sequence
        encoded = {r.id: encode(r) for r in records}  # encoding errors surface before anything is written
        with self._lock, self._translated("update records"):
            for start in range(0, len(records), self._max_batch):
                chunk = list(records[start : start + self._max_batch])
                stored = collection.get(ids=[r.id for r in chunk], include=["metadatas", "documents"])
                old = {row_id: (doc, meta) for row_id, doc, meta in zip_page(stored)}
                chunk = [r for r in chunk if r.id in old]  # update() never creates rows
                same_text = [r.id for r in chunk if old[r.id][0] == r.text]
                if same_text:
                    # Metadata only: Chroma leaves the row's vector and its index entry alone
                    # (one row at 10k rows: ~4 ms, against ~9 ms with the vector passed back).
                    collection.update(ids=same_text, metadatas=rewritten(old, same_text, encoded))
                new_text = [r.id for r in chunk if old[r.id][0] != r.text]
                if not new_text:
                    continue
                # Chroma re-embeds a changed document unless it gets vectors: pass the stored ones.
                page = collection.get(ids=new_text, include=["embeddings"])
                if page["ids"]:  # not deleted in between
                    texts = {r.id: r.text for r in chunk}
                    collection.update(
                        ids=page["ids"],
                        metadatas=rewritten(old, page["ids"], encoded),
                        documents=[texts[i] for i in page["ids"]],
                        embeddings=np.asarray(page["embeddings"], dtype=np.float32),
                    )

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        collection = self._readable()
        with self._lock, self._translated("delete records"):
            doomed = [row_id for row_id, _, _ in self._rows(collection, where, ids, include=[])]
            for start in range(0, len(doomed), self._max_batch):
                collection.delete(ids=doomed[start : start + self._max_batch])
            return len(doomed)

    # --- reads -----------------------------------------------------------------------------
    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        collection = self._writable()
        q = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        try:
            chroma_where = where_clause(where)
        except NothingMatches:
            return []
        if where.ids is not None:
            return score_ids(collection, q[0], where, max_batch=self._max_batch, translate=self._translated)[:k]
        narrows = [chroma_where] if where.user_id is None else owner_wheres(where)
        return query_where(
            collection,
            q,
            k,
            where,
            narrows,
            translate=self._translated,
            exact_limit=self.exact_limit,
            max_batch=self._max_batch,
        )

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        if not ids:
            return []
        collection = self._readable()
        where = where or EVERY_RECORD
        with self._translated("get records"):
            # By id only, filtered here: Chroma's metadata filter costs
            # hundreds of ms at 10k rows even when the ids are known.
            rows = self._rows(collection, None, ids, include=["metadatas", "documents"])
            found = {r.id: r for r in (decode(*row) for row in rows) if where.matches(r)}
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        collection = self._readable()
        with self._translated("scan records"):
            out = [
                decode(row_id, doc, meta)
                for row_id, doc, meta in self._rows(collection, where, None, include=["metadatas", "documents"])
            ]
        return oldest_first(out, limit)

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        """Every record matching ``where`` with its stored vector, rows aligned."""
        collection = self._readable()
        records: list[MemoryRecord] = []
        rows: list[np.ndarray] = []
        with self._translated("scan records with vectors"):
            if where.user_id is not None and where.ids is None:
                # A user's scope (a replica's load): each owner narrow is one equality,
                # read with the vectors in one pass and checked here (owner_wheres).
                seen: set[str] = set()
                for narrow in owner_wheres(where):
                    for row_id, doc, meta, vector in rows_with_vectors(collection, narrow, page=_PAGE):
                        record = decode(row_id, doc, meta)
                        if row_id not in seen and where.matches(record):
                            seen.add(row_id)
                            records.append(record)
                            rows.append(np.asarray(vector, dtype=np.float32))
            else:
                found = {
                    row_id: decode(row_id, doc, meta)
                    for row_id, doc, meta in self._rows(collection, where, None, include=["metadatas", "documents"])
                }
                ids = list(found)
                for start in range(0, len(ids), self._max_batch):
                    page = collection.get(ids=ids[start : start + self._max_batch], include=["embeddings"])
                    for row_id, vector in zip(page["ids"], page["embeddings"]):
                        records.append(found[row_id])  # a row deleted in between is left out
                        rows.append(np.asarray(vector, dtype=np.float32))
        return records, stacked(rows, self._dimension)

    def count(self, where: RecordFilter | None = None) -> int:
        collection = self._readable()
        with self._translated("count records"):
            if where is None:
                return int(collection.count())
            return sum(1 for _ in self._rows(collection, where, None, include=[]))

    # --- internals -------------------------------------------------------------------------
    def _rows(
        self, collection: Any, where: RecordFilter | None, ids: Sequence[str] | None, *, include: list[str]
    ) -> Iterator[tuple[str, Any, Any]]:
        """Matching rows as (id, document, metadata), paged so no response grows unbounded."""
        try:
            chroma_where = where_clause(where) if where is not None else None
        except NothingMatches:
            return
        if where is not None and where.metadata:
            # Caller metadata is not a key of its own (._chroma_rows): check it on the rows.
            include = sorted({*include, "metadatas", "documents"})
            scope_rows = self._rows(collection, dataclasses.replace(where, metadata={}), ids, include=include)
            yield from (row for row in scope_rows if where.matches(decode(*row)))
            return
        if ids is not None:
            wanted = list(dict.fromkeys(ids))
            if where is not None and where.ids is not None:
                wanted = [i for i in wanted if i in set(where.ids)]
            for start in range(0, len(wanted), self._max_batch):
                page = collection.get(ids=wanted[start : start + self._max_batch], where=chroma_where, include=include)
                yield from zip_page(page)
            return
        id_filter = list(where.ids) if where is not None and where.ids is not None else None
        offset = 0
        while True:
            page = collection.get(ids=id_filter, where=chroma_where, include=include, limit=_PAGE, offset=offset)
            rows = list(zip_page(page))
            yield from rows
            if len(rows) < _PAGE:
                return
            offset += _PAGE

    def claim_working_state(self, identity: str, *, replace: bool = False) -> str:
        """A server's collection records it in its metadata (see ``BaseBackend``)."""
        if self.url is None:
            return identity  # embedded: this process owns the directory (a file lock)
        with self._lock, self._translated("record the working state"):
            collection = self._readable()
            metadata = dict(collection.metadata or {})
            recorded = metadata.get(_META_STATE)
            if isinstance(recorded, str) and recorded and not replace:
                return recorded
            metadata[_META_STATE] = identity
            collection.modify(metadata=metadata)  # replaces the whole metadata: the other keys kept
            return identity

    def check_usable(self) -> None:
        _chroma_lock.check_not_inherited(self.path)

    def _readable(self) -> Any:
        # Reads work on a collection opened with another model too, so that
        # reembed() can read the stored texts; writes and queries do not.
        if self._collection is None:
            raise BackendError("open() the Chroma backend before using it")
        self.check_usable()
        return self._collection

    def _writable(self) -> Any:
        collection = self._readable()
        if not self._verified:
            raise not_opened_for_writes("Chroma", self.collection_name)
        return collection

    def _connect(self) -> None:
        self.check_usable()
        if self._client is not None:
            return
        self._client, self._max_batch = connect(
            path=self.path, url=self.url, headers=self.headers, tenant=self.tenant, database=self.database
        )

    def _translated(self, action: str) -> Translate:
        return Translate(self.url or self.path, action)
