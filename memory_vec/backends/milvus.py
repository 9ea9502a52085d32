"""Milvus backend: Milvus Lite by a local path, or a Milvus server by URI.

Tenancy: a partition key ``owner`` (the user id, or one shared value for
agent/global records), so a user-scoped query touches the user's partition
plus the shared one. Milvus 2.3 servers misroute ``upsert`` on partition-key
collections (measured with 2.3.5), so before 2.4 the key is off and user
scope is a scalar filter; ``backend_options={"partition_key": bool}`` overrides.

Filters are built by :mod:`._milvus_expr` (escaped literals; pymilvus'
``get(ids=)``/``delete(ids=)`` paste ids unescaped, so they are never used)
and every returned row is re-checked with ``RecordFilter.matches``.

Reads are ``"Session"`` (a read waits until the engine applied this client's
last write); ``open`` makes what was acknowledged before it visible with one
``"Strong"`` read (:mod:`._milvus_consistency`). A filtered search that comes
back short is completed exactly (:mod:`._milvus_search`). Forget: Milvus Lite
keeps deleted rows in its files until :meth:`MilvusBackend.purge` rewrites the
collection (:mod:`._milvus_rewrite`); a server keeps them until its compaction.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_vec._model.errors import ConfigError, EmbeddingModelMismatchError, InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec.backends import _milvus_client, _milvus_schema, _names
from memory_vec.backends import _milvus_consistency as consistency
from memory_vec.backends._milvus_errors import Translate
from memory_vec.backends._milvus_expr import filter_expression
from memory_vec.backends._milvus_lock import LiteLock
from memory_vec.backends._milvus_rewrite import ReadGate, recover, rewrite
from memory_vec.backends._milvus_rows import request_batches, to_row
from memory_vec.backends._milvus_scan import RowReader
from memory_vec.backends._milvus_schema import SCHEMA_VERSION
from memory_vec.backends._milvus_search import search
from memory_vec.backends.base import (
    EVERY_RECORD,
    BackendLimits,
    BaseBackend,
    PurgeReport,
    RecordFilter,
    ScoredRecord,
    check_dimension,
    checked_vectors,
    chunks,
    oldest_first,
    stacked,
)

if TYPE_CHECKING:
    from memory_vec._model.config import MemoryConfig

#: The collection property that names the working state its processes use (claim_working_state).
_PROP_STATE = "memvec.working_state"

__all__ = ["SCHEMA_VERSION", "MilvusBackend"]


class MilvusBackend(BaseBackend):
    """Vectors and records in a Milvus collection (Lite or server).

    Example:
        >>> backend = MilvusBackend("./.memory_vec/milvus.db")          # doctest: +SKIP
        >>> backend.open(dimension=384, model_id="multilingual-e5-small")  # doctest: +SKIP
        >>> server = MilvusBackend("http://127.0.0.1:19530", token="root:Milvus")  # doctest: +SKIP

    A Milvus Lite path is single-process: a second process opening it gets
    :class:`~memory_vec._model.errors.StoreLockedError`. Use a server (or Milvus
    Lite's ``milvus-lite server``) to share a store between processes.
    """

    name = "milvus"
    vector_reads = True
    resettable = True
    # Measured on Milvus Lite 3.2.2 and a Milvus 2.3.5 server (tests/backends/test_milvus_*):
    # VARCHAR max_length counts UTF-8 bytes on the server (characters on Lite), so text is
    # 65535 bytes and ids 1024 (the schema's max_length); the server refuses a JSON field
    # over 65536 bytes (Lite has no limit). pymilvus encodes JSON integers up to 2**64 - 1
    # and both engines accept 500 levels of nesting: the library's int64 range and depth stay.
    limits = BackendLimits(
        max_text_bytes=_milvus_schema.TEXT_BYTES, max_id_bytes=_milvus_schema.ID_BYTES, max_metadata_bytes=65536
    )

    def __init__(
        self,
        uri: str,
        *,
        collection: str = "memory_vec",
        token: str | None = None,
        db_name: str | None = None,
        timeout: float = 10.0,
        index_type: str | None = None,
        index_params: dict[str, Any] | None = None,
        search_params: dict[str, Any] | None = None,
        partition_key: bool | None = None,
        num_partitions: int = 64,
        batch_size: int = 1000,
        consistency_level: str | None = None,
        exact_fallback_limit: int = 50_000,
    ) -> None:
        """Create the backend; nothing is contacted until :meth:`open`.

        Args:
            uri: ``http(s)://host:port`` of a server, or a local path (Milvus Lite).
            collection: Collection name.
            token: ``user:password`` or an API key for a server.
            db_name: Database on a server (default database when None).
            timeout: Seconds per call before :class:`BackendTimeoutError`.
            index_type: Vector index (default HNSW; Milvus Lite also takes FLAT, IVF_FLAT).
            index_params: Build parameters, e.g. ``{"M": 16, "efConstruction": 200}``.
            search_params: Search parameters, e.g. ``{"ef": 64}``.
            partition_key: Partition by owner; None picks per engine (see module doc).
            num_partitions: Partitions of the partition key.
            batch_size: Rows per upsert/delete request (large writes are chunked).
            consistency_level: Reads' consistency: "Session" (the default: read your own
                writes by waiting for them), "Strong", "Bounded" or "Eventually" (the last
                two may miss this client's own recent writes; see module doc).
            exact_fallback_limit: Most matching rows scored exactly when a filtered search
                comes back short (0 turns the fallback off).
        """
        self.uri = uri
        self.collection = self.given_name = collection  # a server may need another (_names)
        self.is_server = uri.startswith(("http://", "https://"))
        consistency_level = consistency.check_level(consistency_level or "Session")
        self.persistent = True
        # A Lite path is one process at a time; a server is shared.
        self.supports_multiprocess = self.is_server
        self._token = token
        self._db_name = db_name
        self._timeout = timeout
        self._index_type = (index_type or "HNSW").upper()
        self._index_params = dict(index_params or {})
        if self._index_type == "HNSW":
            self._index_params.setdefault("M", 16)
            self._index_params.setdefault("efConstruction", 200)
        self._search_params = dict(search_params or ({"ef": 128} if self._index_type == "HNSW" else {}))
        self._partition_key = partition_key
        self._num_partitions = num_partitions
        self._batch = max(1, batch_size)
        self._consistency = consistency_level
        self._exact_limit = max(0, int(exact_fallback_limit))
        self._client: Any = None
        self._client_pid = 0  # the process that connected it (a forked child reconnects)
        self._lock_handle: LiteLock | None = None
        self._dimension: int | None = None
        self._model_id: str | None = None
        self._mutex = threading.RLock()
        self._pk_enabled = False
        self._barrier_after_delete = False
        self._gate = ReadGate()  # reads wait while purge() swaps the collection
        self._dirty = True  # rows may have been deleted since the last purge (unknown before it)
        self._unflushed = 0  # Milvus Lite rows written since the last flush

    @classmethod
    def from_config(cls, config: MemoryConfig) -> MilvusBackend:
        """Build from :class:`~memory_vec.MemoryConfig` (``url`` None → Lite under ``persist_dir``)."""
        options = dict(config.backend_options)
        known = set(inspect.signature(cls).parameters) - {"uri", "collection", "timeout"}  # those come from config
        if "own_writes_window" in options:  # 0.1's overlay of own writes is gone: reads are Session
            options.pop("own_writes_window")
            warnings.warn(
                "Milvus backend_options['own_writes_window'] is ignored since 0.2 (reads use the engine's "
                "Session consistency) and will be refused in 0.3",
                DeprecationWarning,
                stacklevel=2,
            )
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"MemoryConfig.backend_options: unknown Milvus option(s) {unknown}; known: {sorted(known)}"
            )
        uri = config.url or os.path.join(config.persist_dir, "milvus.db")
        return cls(uri, collection=config.collection, timeout=config.backend_timeout, **options)

    # --- lifecycle -----------------------------------------------------------------
    def open(self, *, dimension: int, model_id: str) -> None:
        """Create the collection on first use, or verify the one that exists: EmbeddingModelMismatchError
        (another model's vectors: still opened for reading them, as reembed does), SchemaMismatchError,
        StoreLockedError (another process holds this Milvus Lite path), BackendUnavailableError."""
        with self._mutex:
            client = self._connect()
            if not self.is_server:
                recover(
                    client, self.collection, data_dir=self._data_dir(), timeout=self._timeout, translate=self._translate
                )
            with self._translate("open the collection"):
                self.collection = _names.milvus_collection(client, self.given_name, self.is_server, self._timeout)
                before_2_4 = consistency.server_before_2_4(client, is_server=self.is_server, timeout=self._timeout)
                exists = client.has_collection(self.collection, timeout=self._timeout)
                if not exists:
                    try:
                        pk = self._partition_key if self._partition_key is not None else not before_2_4
                        _milvus_schema.create(
                            client,
                            self.collection,
                            dimension=dimension,
                            model_id=model_id,
                            partition_key=pk,
                            num_partitions=self._num_partitions,
                            index_type=self._index_type,
                            index_params=self._index_params,
                            timeout=self._timeout,
                            scope_index=("Trie" if before_2_4 else "INVERTED") if self.is_server else None,
                        )
                    except Exception:  # another process may have created it first: verify that one
                        if not client.has_collection(self.collection, timeout=self._timeout):
                            raise
                info = client.describe_collection(self.collection, timeout=self._timeout)
            mismatch = None
            try:
                _milvus_schema.verify(
                    info, collection=self.collection, uri=self.uri, dimension=dimension, model_id=model_id
                )
            except EmbeddingModelMismatchError as exc:  # open for reading what it holds (reembed), then raise
                mismatch, (dimension, model_id) = exc, _milvus_schema.stored_space(info)
            self._pk_enabled = any(f.get("is_partition_key") for f in info.get("fields", []))
            _milvus_schema.load(
                client,
                self.collection,
                index_type=self._index_type,
                index_params=self._index_params,
                timeout=self._timeout,
                translate=self._translate,
            )
            self._barrier_after_delete = consistency.barrier_after_delete(self._consistency, before_2_4=before_2_4)
            self._read_one(client, "Strong")  # rows acknowledged before this open are visible to Session reads
            self._dimension, self._model_id = dimension, model_id
            if mismatch is not None:
                raise mismatch

    def claim_working_state(self, identity: str, *, replace: bool = False) -> str:
        """A server's collection records it in its properties (see ``BaseBackend``)."""
        if not self.is_server:
            return identity  # Milvus Lite: this process owns the path (a file lock)
        with self._mutex:
            client = self._ready()
            with self._translate("record the working state"):
                props = client.describe_collection(self.collection, timeout=self._timeout).get("properties") or {}
                recorded = props.get(_PROP_STATE)
                if isinstance(recorded, str) and recorded and not replace:
                    return recorded
                client.alter_collection_properties(
                    self.collection, properties={_PROP_STATE: identity}, timeout=self._timeout
                )
            return identity

    def _read_one(self, client: Any, level: str) -> None:
        consistency.read_barrier(client, self.collection, level, timeout=self._timeout, translate=self._translate)

    def close(self) -> None:
        """Release the client (and the Lite file lock). Safe to call twice."""
        with self._mutex:
            client, self._client = self._client, None
            if client is not None:  # best effort; the lock is released regardless
                _milvus_client.close(client, connected_by=self._client_pid)
            if self._lock_handle is not None:
                self._lock_handle.release()
                self._lock_handle = None

    def drop(self) -> None:
        """Delete the collection and everything in it."""
        with self._mutex:
            client = self._connect()
            with self._translate("drop the collection"):
                if client.has_collection(self.collection, timeout=self._timeout):
                    client.drop_collection(self.collection, timeout=self._timeout)
            self._dimension = self._model_id = None

    def flush(self) -> None:
        """Seal fresh writes into persisted segments (the engine indexes them in the background)."""
        with self._mutex:
            client = self._ready()
            with self._translate("flush"):
                client.flush(self.collection, timeout=self._timeout)

    def purge(self) -> PurgeReport:
        """After deletes: rewrite a Milvus Lite collection without its deleted rows.

        Copies the remaining rows to a new collection that replaces the old
        one (see :mod:`._milvus_rewrite`): the time grows with the rows that
        remain; writes and reads wait meanwhile. Skipped when nothing was
        deleted since the last purge of this instance. Needs no ``open()``:
        ``MilvusBackend("/path/x.db", collection=NAME).purge()`` purges a
        stopped ``milvus-lite server``'s data directory (a path ending in .db).
        For a server, nothing is done here: the report says what it keeps.
        """
        if self.is_server:
            note = (
                f"milvus server {self.uri}: deleted rows stay in the server's files (a Milvus server: until "
                "compaction and garbage collection, and in its message queue until retention ends; a "
                "milvus-lite server: until its stopped data directory is purged; see the README)"
            )
            return PurgeReport(False, 0, (note,))
        with self._mutex, self._gate.exclusive():
            if not self._dirty:
                return PurgeReport(True, 0, ("milvus-lite: nothing deleted since the last purge",))
            client = self._connect()
            result = rewrite(
                client,
                self.collection,
                data_dir=self._data_dir(),
                batch=self._batch,
                timeout=self._timeout,
                num_partitions=self._num_partitions,
                index_type=self._index_type,
                index_params=self._index_params,
                translate=self._translate,
            )
            self._dirty = False
            if self._dimension is not None:
                self._read_one(client, "Strong")
        notes = [f"milvus-lite: collection rewritten without its deleted rows ({result.rows} rows copied)"]
        notes += [f"milvus-lite: could not remove {folder}" for folder in result.leftovers]
        return PurgeReport(not result.leftovers, len(result.leftovers), tuple(notes))

    def _data_dir(self) -> str | None:
        """Milvus Lite's directory of the default database (where collection folders are)."""
        return None if self.is_server or self._db_name else os.path.abspath(self.uri)

    @property
    def model_id(self) -> str | None:
        return self._model_id

    @property
    def read_staleness(self) -> float:
        """Seconds another client's write may stay invisible to this one's reads
        (0 with "Strong" and on Milvus Lite, which one process owns); see
        :data:`~._milvus_consistency.OTHERS_BOUND_S`."""
        return 0.0 if self._consistency == "Strong" or not self.is_server else consistency.OTHERS_BOUND_S

    def _connect(self) -> Any:
        if self._client is not None and self._client_pid == os.getpid():
            return self._client
        inherited = self._client is not None  # a forked child's copy of the parent's (see _milvus_client)
        if inherited:
            _milvus_client.abandon(self._client)
        elif not self.is_server:
            if os.path.isfile(self.uri):
                raise InvalidInputError(f"Milvus Lite path {self.uri!r} is a file; it must be a directory")
            self._lock_handle = LiteLock.acquire(self.uri)
        try:
            with self._translate(f"connect to Milvus at {self.uri}"):
                # A server's connection is our own: pymilvus otherwise shares one per address in a
                # process, made with whatever options the first client (the app's own) gave it.
                self._client = _milvus_client.connect(
                    self.uri,
                    timeout=self._timeout,
                    token=self._token,
                    db_name=self._db_name,
                    dedicated=inherited or self.is_server,
                )
                self._client_pid = os.getpid()
        except BaseException:
            self._client = None
            if self._lock_handle is not None and not inherited:
                self._lock_handle.release()
                self._lock_handle = None
            raise
        return self._client

    def _ready(self) -> Any:
        if self._client is None or self._dimension is None:
            raise InvalidInputError("open() the Milvus backend before using it")
        return self._connect()

    # --- writes ---------------------------------------------------------------------
    def reset(self, *, dimension: int, model_id: str) -> None:
        """Delete every record and re-create the collection for another embedder (``reembed``)."""
        with self._mutex:
            self.drop()
            self.open(dimension=dimension, model_id=model_id)

    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        self._upsert(records, vectors, new=False)

    def insert_new(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        # A fresh id has no row in another partition: no read before the write.
        self._upsert(records, vectors, new=True)

    def _upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray, *, new: bool) -> None:
        vectors = checked_vectors(records, vectors)
        with self._mutex:
            client = self._ready()
            if len(records):
                check_dimension(vectors.shape[1], self._dimension, self._model_id)
            if not np.all(np.isfinite(vectors)):
                raise InvalidInputError("upsert got a vector with NaN or infinite values")
            # The last occurrence of an id wins, as in a sequence of upserts.
            latest = {r.id: i for i, r in enumerate(records)}
            rows = [to_row(records[i], vectors[i]) for i in latest.values()]
            moved = self._moved_ids(client, rows) if self._pk_enabled and not new else []
            self._dirty = self._dirty or bool(moved)  # a moved row leaves its old copy in the files
            self._write(client, rows, moved)
            if not self.is_server:
                self._unflushed += len(rows)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        """Change stored fields of existing records; the stored vectors are kept."""
        with self._mutex:
            client = self._ready()
            latest = {r.id: r for r in records}
            if not latest:
                return
            stored = {
                row["id"]: (row["vector"], row["owner"])
                for row in self._reader(client).rows_by_ids(
                    list(latest), ["id", "owner", "vector"], action="read records to update"
                )
            }
            rows = [to_row(latest[i], np.asarray(stored[i][0], dtype=np.float32)) for i in latest if i in stored]
            moved = [r["id"] for r in rows if self._pk_enabled and stored[r["id"]][1] != r["owner"]]
            self._dirty = self._dirty or bool(moved)
            self._write(client, rows, moved)

    def _moved_ids(self, client: Any, rows: list[dict[str, Any]]) -> list[str]:
        # A record whose partition-key value changes is deleted first: an upsert
        # only replaces rows inside the partition the new value hashes to.
        owners = {
            row["id"]: row["owner"]
            for row in self._reader(client).rows_by_ids(
                [r["id"] for r in rows], ["id", "owner"], action="read records before upsert"
            )
        }
        return [r["id"] for r in rows if r["id"] in owners and owners[r["id"]] != r["owner"]]

    def _write(self, client: Any, rows: list[dict[str, Any]], moved: list[str]) -> None:
        for doomed in chunks(moved, self._batch):
            with self._translate("move records between partitions"):
                client.delete(self.collection, filter=filter_expression(None, doomed), timeout=self._timeout)
        for chunk in request_batches(rows, self._batch):
            with self._translate(f"upsert {len(chunk)} records"):
                client.upsert(self.collection, chunk, timeout=self._timeout)

    # --- reads ----------------------------------------------------------------------
    def _before_read(self, client: Any) -> None:
        """Milvus Lite searches unflushed rows by rebuilding a memtable snapshot
        per query (seconds at 10k rows): after a bulk write, one flush before the
        next read moves them into indexed segments (once, not after every batch of
        an import)."""
        if not self.is_server and self._unflushed >= self._batch:
            with self._mutex:
                if self._unflushed >= self._batch:
                    with self._translate("flush"):
                        client.flush(self.collection, timeout=self._timeout)
                    self._unflushed = 0

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        with self._mutex:
            client = self._ready()
            if ids is None and where is None:
                raise InvalidInputError("delete() needs ids, where, or both (refusing to delete everything)")
            # Resolve the exact rows first: engines differ in what delete() reports.
            doomed = [r.id for r in self._rows(client, where or EVERY_RECORD, ids)]
            self._dirty = self._dirty or bool(doomed)
            for chunk in chunks(doomed, self._batch):
                with self._translate(f"delete {len(chunk)} records"):
                    client.delete(self.collection, filter=filter_expression(None, chunk), timeout=self._timeout)
            if doomed and self._barrier_after_delete:
                self._read_one(client, "Strong")
            return len(doomed)

    # --- reads ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _reading(self) -> Iterator[Any]:
        """The client for a read: a bulk write flushed first, then inside the purge gate
        (never waiting for the mutex inside the gate: purge holds both)."""
        with self._mutex:
            client = self._ready()
        self._before_read(client)
        with self._gate.reading():
            yield client

    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._reading() as client:
            return search(
                self._reader(client),
                q,
                k,
                where,
                search_params=self._search_params,
                exact_limit=self._exact_limit,
            )

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        with self._reading() as client:
            by_id = {r.id: r for r in self._rows(client, where or EVERY_RECORD, ids)} if ids else {}
        return [by_id[i] for i in dict.fromkeys(ids) if i in by_id]

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        with self._reading() as client:
            out = self._rows(client, where, None)
        return oldest_first(out, limit)

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        """The records of :meth:`scan` with their stored vectors (as written), rows aligned: float32
        of shape ``(len(records), dimension)``; order unspecified. Paged."""
        with self._reading() as client:
            merged, dimension = list(self._reader(client).with_vectors(where)), self._dimension
        return [record for record, _ in merged], stacked([vector for _, vector in merged], dimension)

    def count(self, where: RecordFilter | None = None) -> int:
        where = where or EVERY_RECORD
        with self._reading() as client:
            if any(not isinstance(v, str) for v in where.metadata.values()):
                return len(self._rows(client, where, None))  # needs the client-side check
            with self._translate("count"):
                rows = client.query(
                    self.collection,
                    filter=filter_expression(where, partition_key=self._pk_enabled),
                    output_fields=["count(*)"],
                    consistency_level=self._consistency,
                    timeout=self._timeout,
                )
        return int(rows[0]["count(*)"]) if rows else 0

    def _rows(self, client: Any, where: RecordFilter, ids: Sequence[str] | None) -> list[MemoryRecord]:
        return list(self._reader(client).records(where, ids))

    def _reader(self, client: Any) -> RowReader:
        return RowReader(
            client,
            self.collection,
            self._consistency,
            self._timeout,
            self._batch,
            self.is_server,
            self._translate,
            self._pk_enabled,
        )

    # --- errors -------------------------------------------------------------------------
    def _translate(self, action: str) -> Translate:
        return Translate(self.uri, self.collection, self._timeout, action)
