"""Milvus backend: Milvus Lite by a local path, or a Milvus server by URI.

Tenancy: the collection has a partition key ``owner`` (the user id, or one
shared value for agent/global records), so a user-scoped query touches the
user's partition plus the shared one instead of the whole collection.
Milvus 2.3 servers misroute ``upsert`` on partition-key collections (rows
land in the wrong partition and filtered reads miss them; measured with
2.3.5), so on servers older than 2.4 the key is off and user scope is a
plain scalar filter. ``backend_options={"partition_key": bool}`` overrides.

Filters are built by :mod:`._milvus_expr` (escaped literals; see there why
not ``filter_params``; pymilvus' own ``get(ids=)``/``delete(ids=)`` paste
ids into single quotes unescaped, so they are never used here) and every returned row is re-checked with
``RecordFilter.matches``.

Consistency: reads use ``"Session"`` by default: a process always reads its
own writes (pymilvus keeps the last write timestamp per collection), and
:meth:`MilvusBackend.open` makes one ``"Strong"`` read, so whatever was
acknowledged before a process opened the store is visible to it. Writes of
other processes after that become visible within the server's time tick.
A 2.3 server does not return a delete's timestamp, so there a delete ends
with one ``"Strong"`` read (an upsert's later timestamp covers the deletes
before it).
A 2.3 server does not return a delete's timestamp, so there a delete ends
with one ``"Strong"`` read.
``"Strong"`` on every read waits for that tick each time (~400 ms per read on
a 2.3.5 server, measured); ``backend_options={"consistency_level": "Strong"}``
asks for it anyway.

Filtered search completeness: an approximate search with a narrow filter
(one user among many, no partition key) can return fewer rows than match;
2.3.5 returned 1.6 of a user's 10 rows at 10k. When a search returns fewer
than it asked for, there are no more rows than it asked for, so
:meth:`MilvusBackend.query` reads them all with their vectors (a user's
memories, not the collection; at most ``exact_fallback_limit``) and scores
them exactly.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    BackendError,
    ConfigError,
    BackendTimeoutError,
    BackendUnavailableError,
    DependencyMissingError,
    EmbeddingModelMismatchError,
    InvalidInputError,
    SchemaMismatchError,
    StoreLockedError,
)
from ..records import MemoryRecord
from ._milvus_expr import SHARED_OWNER, filter_expression, literal
from ._milvus_lock import LiteLock
from .base import BaseBackend, RecordFilter, ScoredRecord

if TYPE_CHECKING:
    from ..config import MemoryConfig

__all__ = ["MilvusBackend", "SCHEMA_VERSION"]

SCHEMA_VERSION = "1"
_PROP_MODEL, _PROP_DIM, _PROP_SCHEMA = "memvec.model_id", "memvec.dimension", "memvec.schema_version"
_ID_BYTES = 1024  # 256 characters (MAX_ID_LENGTH) of up to 4 UTF-8 bytes
_TEXT_BYTES = 65535
_MAX_TOPK = 16384  # Milvus' limit on limit/offset
_SCALARS = ("id", "owner", "user_id", "session_id", "agent_id", "role", "kind", "visibility", "timestamp",
            "seq", "importance", "superseded", "valid_to", "superseded_by", "archived", "pinned", "expire_at",
            "subject", "text", "metadata", "attrs")
_OUTPUT = list(_SCALARS)
_EVERYTHING = RecordFilter(include_superseded=True, include_archived=True)
_CONSISTENCY = ("Session", "Strong", "Bounded", "Eventually")


def _require_pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DependencyMissingError(
            "The Milvus backend needs pymilvus (and milvus-lite for a local path): "
            "pip install 'memory-vec[milvus]'"
        ) from exc
    return pymilvus


class MilvusBackend(BaseBackend):
    """Vectors and records in a Milvus collection (Lite or server).

    Example:
        >>> backend = MilvusBackend("./.memory_vec/milvus.db")          # doctest: +SKIP
        >>> backend.open(dimension=384, model_id="multilingual-e5-small")  # doctest: +SKIP
        >>> server = MilvusBackend("http://127.0.0.1:19530", token="root:Milvus")  # doctest: +SKIP

    Async use: ``await backend.aquery(vector, k=5, where=...)`` runs the
    sync call in a worker thread (from :class:`BaseBackend`).

    A Milvus Lite path is single-process: a second process opening it gets
    :class:`~memory_vec.errors.StoreLockedError`. Use a server (or Milvus
    Lite's ``milvus-lite server``) to share a store between processes.
    """

    name = "milvus"

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
        consistency_level: str = "Session",
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
            consistency_level: Reads' consistency: "Session" (default: read your own writes),
                "Strong", "Bounded" or "Eventually" (see module doc).
            exact_fallback_limit: Most matching rows scored exactly when a filtered search
                comes back short (0 turns the fallback off).
        """
        if consistency_level not in _CONSISTENCY:
            raise ConfigError(
                f"Milvus backend_options['consistency_level'] = {consistency_level!r} is not one of "
                f"{list(_CONSISTENCY)}"
            )
        self.uri = uri
        self.collection = collection
        self.is_server = uri.startswith(("http://", "https://"))
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
        self._lock_handle: LiteLock | None = None
        self._dimension: int | None = None
        self._model_id: str | None = None
        self._mutex = threading.RLock()
        self._pk_enabled = False
        self._barrier_after_delete = False

    @classmethod
    def from_config(cls, config: MemoryConfig) -> MilvusBackend:
        """Build from :class:`~memory_vec.MemoryConfig` (``url`` None → Lite under ``persist_dir``)."""
        options = dict(config.backend_options)
        known = {"token", "db_name", "index_type", "index_params", "search_params", "partition_key",
                 "num_partitions", "batch_size", "consistency_level", "exact_fallback_limit"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"MemoryConfig.backend_options: unknown Milvus option(s) {unknown}; known: {sorted(known)}"
            )
        uri = config.url or os.path.join(config.persist_dir, "milvus.db")
        return cls(uri, collection=config.collection, timeout=config.backend_timeout, **options)

    # --- lifecycle -----------------------------------------------------------------
    def open(self, *, dimension: int, model_id: str) -> None:
        """Create the collection on first use, or verify the one that exists.

        Raises:
            EmbeddingModelMismatchError: The collection holds another model's vectors.
            SchemaMismatchError: The collection was not made by this version.
            StoreLockedError: Another process holds this Milvus Lite path.
            BackendUnavailableError: The server cannot be reached or rejected the credentials.
        """
        with self._mutex:
            client = self._connect()
            with self._translate("open the collection"):
                before_2_4 = self._server_before_2_4(client)
                exists = client.has_collection(self.collection, timeout=self._timeout)
                if not exists:
                    try:
                        pk = self._partition_key if self._partition_key is not None else not before_2_4
                        self._create(client, dimension, model_id, partition_key=pk)
                    except Exception:
                        # Another process may have created it first; verify that one.
                        if not client.has_collection(self.collection, timeout=self._timeout):
                            raise
                info = client.describe_collection(self.collection, timeout=self._timeout)
            self._verify(info, dimension, model_id)
            self._pk_enabled = any(f.get("is_partition_key") for f in info.get("fields", []))
            self._load(client)
            # 2.3 servers answer a delete without its timestamp, so a Session
            # read would not wait for it: a Strong read after each delete does.
            self._barrier_after_delete = self._consistency == "Session" and before_2_4
            self._read_one(client, "Strong")  # rows acknowledged before this open are visible to Session reads
            self._dimension, self._model_id = dimension, model_id

    def _read_one(self, client: Any, level: str) -> None:
        # A read at ``level`` waits until the server has applied the writes
        # that level covers ("Strong": all before it; "Session": this
        # process'); later reads of this process see at least that state.
        with self._translate("read the collection"):
            client.query(self.collection, filter='id != ""', output_fields=["id"], limit=1,
                         consistency_level=level, timeout=self._timeout)

    def _load(self, client: Any) -> None:
        # Another process may have created the collection a moment ago and not
        # yet its index (MilvusClient creates, then indexes, then loads): wait
        # for the index, and create it if its creator died in between.
        deadline = time.monotonic() + max(self._timeout, 30.0)
        while True:
            try:
                with self._translate("load the collection"):
                    client.load_collection(self.collection, timeout=self._timeout)
                return
            except BackendError as exc:
                if "index not found" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
            time.sleep(0.5)
            try:
                if not client.list_indexes(self.collection, timeout=self._timeout):
                    index = client.prepare_index_params()
                    index.add_index("vector", index_type=self._index_type, metric_type="COSINE",
                                    params=self._index_params)
                    client.create_index(self.collection, index, timeout=self._timeout)
            except Exception:  # the creator's index request may win the race; loading tells
                pass

    def close(self) -> None:
        """Release the client (and the Lite file lock). Safe to call twice."""
        with self._mutex:
            client, self._client = self._client, None
            if client is not None:
                try:
                    client.close()
                except Exception:  # closing is best effort
                    pass
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

    @property
    def model_id(self) -> str | None:
        return self._model_id

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        pymilvus = _require_pymilvus()
        kwargs: dict[str, Any] = {"uri": self.uri, "timeout": self._timeout}
        if self._token:
            kwargs["token"] = self._token
        if self._db_name:
            kwargs["db_name"] = self._db_name
        if not self.is_server:
            if os.path.isfile(self.uri):
                raise InvalidInputError(f"Milvus Lite path {self.uri!r} is a file; it must be a directory")
            self._lock_handle = LiteLock.acquire(self.uri)
        try:
            with self._translate(f"connect to Milvus at {self.uri}"):
                self._client = pymilvus.MilvusClient(**kwargs)
        except BaseException:
            if self._lock_handle is not None:
                self._lock_handle.release()
                self._lock_handle = None
            raise
        return self._client

    def _server_before_2_4(self, client: Any) -> bool:
        if not self.is_server:
            return False
        version = str(client.get_server_version(timeout=self._timeout)).lstrip("v")
        try:
            major, minor = (int(x) for x in version.split(".")[:2])
        except ValueError:
            return False
        return (major, minor) < (2, 4)

    def _create(self, client: Any, dimension: int, model_id: str, *, partition_key: bool) -> None:
        from pymilvus import DataType, MilvusClient

        pk = partition_key
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False,
                                            description=f"memory-vec records ({model_id}, {dimension}-d)")
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=_ID_BYTES)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
        schema.add_field("owner", DataType.VARCHAR, max_length=_ID_BYTES, is_partition_key=pk)
        for name in ("user_id", "session_id", "agent_id", "superseded_by", "subject"):
            schema.add_field(name, DataType.VARCHAR, max_length=_ID_BYTES)
        for name in ("role", "kind", "visibility"):
            schema.add_field(name, DataType.VARCHAR, max_length=64)
        for name in ("timestamp", "importance", "valid_to", "expire_at"):
            schema.add_field(name, DataType.DOUBLE)
        schema.add_field("seq", DataType.INT64)
        for name in ("superseded", "archived", "pinned"):
            schema.add_field(name, DataType.BOOL)
        schema.add_field("text", DataType.VARCHAR, max_length=_TEXT_BYTES)
        schema.add_field("metadata", DataType.JSON)
        schema.add_field("attrs", DataType.JSON)  # exact nullable fields, source ids, recall stats
        index = client.prepare_index_params()
        index.add_index("vector", index_type=self._index_type, metric_type="COSINE", params=self._index_params)
        extra: dict[str, Any] = {"num_partitions": self._num_partitions} if pk else {}
        client.create_collection(
            self.collection, schema=schema, index_params=index, consistency_level="Session",
            properties={_PROP_MODEL: model_id, _PROP_DIM: str(dimension), _PROP_SCHEMA: SCHEMA_VERSION},
            timeout=self._timeout, **extra,
        )

    def _verify(self, info: dict[str, Any], dimension: int, model_id: str) -> None:
        props = info.get("properties") or {}
        fields = {f["name"]: f for f in info.get("fields", [])}
        missing = [name for name in (*_SCALARS, "vector") if name not in fields]
        if props.get(_PROP_SCHEMA) != SCHEMA_VERSION or missing:
            raise SchemaMismatchError(
                f"Milvus collection {self.collection!r} at {self.uri} was not created by memory-vec schema "
                f"version {SCHEMA_VERSION} (found version {props.get(_PROP_SCHEMA)!r}, missing fields "
                f"{missing}). Use another collection name (MemoryConfig.collection) or drop this one."
            )
        stored_dim = int(fields["vector"].get("params", {}).get("dim", props.get(_PROP_DIM, 0)))
        stored_model = props.get(_PROP_MODEL)
        if (stored_model, stored_dim) != (model_id, dimension):
            raise EmbeddingModelMismatchError(
                f"Milvus collection {self.collection!r} holds vectors of {stored_model!r} (dimension "
                f"{stored_dim}); it was opened with {model_id!r} (dimension {dimension}). Use the same "
                "embedding model, another collection name, or re-embed the collection."
            )

    def _ready(self) -> Any:
        if self._client is None or self._dimension is None:
            raise InvalidInputError("open() the Milvus backend before using it")
        return self._client

    # --- writes ----------------------------------------------------------------------
    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(records) != len(vectors):
            raise InvalidInputError(f"upsert got {len(records)} records and {len(vectors)} vectors")
        with self._mutex:
            client = self._ready()
            if len(records) and vectors.shape[1] != self._dimension:
                raise EmbeddingModelMismatchError(
                    f"vector dimension {vectors.shape[1]} does not match the collection's {self._dimension} "
                    f"({self._model_id!r})"
                )
            if not np.all(np.isfinite(vectors)):
                raise InvalidInputError("upsert got a vector with NaN or infinite values")
            # The last occurrence of an id wins, as in a sequence of upserts.
            latest = {r.id: i for i, r in enumerate(records)}
            rows = [_to_row(records[i], vectors[i]) for i in latest.values()]
            moved = self._moved_ids(client, rows) if self._pk_enabled else []
            self._write(client, rows, moved)
            if not self.is_server and len(rows) >= self._batch:
                # Milvus Lite searches unflushed rows by rebuilding a memtable
                # snapshot per query (seconds at 10k rows); a flush after a
                # bulk write moves them into indexed segments.
                with self._translate("flush"):
                    client.flush(self.collection, timeout=self._timeout)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        """Change stored fields of existing records; the stored vectors are kept."""
        with self._mutex:
            client = self._ready()
            latest = {r.id: r for r in records}
            if not latest:
                return
            stored: dict[str, dict[str, Any]] = {}
            for chunk in _chunks(list(latest), self._batch):
                with self._translate("read records to update"):
                    for row in client.query(self.collection, filter=filter_expression(None, chunk),
                                            output_fields=["id", "owner", "vector"], consistency_level=self._consistency,
                                            timeout=self._timeout):
                        stored[row["id"]] = row
            rows = [_to_row(latest[i], np.asarray(stored[i]["vector"], dtype=np.float32))
                    for i in latest if i in stored]
            moved = [r["id"] for r in rows if self._pk_enabled and stored[r["id"]]["owner"] != r["owner"]]
            self._write(client, rows, moved)

    def _moved_ids(self, client: Any, rows: list[dict[str, Any]]) -> list[str]:
        # A record whose partition-key value changes is deleted first: an upsert
        # only replaces rows inside the partition the new value hashes to.
        moved: list[str] = []
        for chunk in _chunks(rows, self._batch):
            with self._translate("read records before upsert"):
                found = client.query(self.collection, filter=filter_expression(None, [r["id"] for r in chunk]),
                                     output_fields=["id", "owner"], consistency_level=self._consistency,
                                     timeout=self._timeout)
            owners = {row["id"]: row["owner"] for row in found}
            moved.extend(r["id"] for r in chunk if r["id"] in owners and owners[r["id"]] != r["owner"])
        return moved

    def _write(self, client: Any, rows: list[dict[str, Any]], moved: list[str]) -> None:
        for chunk in _chunks(moved, self._batch):
            with self._translate("move records between partitions"):
                client.delete(self.collection, filter=filter_expression(None, chunk), timeout=self._timeout)
        for chunk in _chunks(rows, self._batch):
            with self._translate(f"upsert {len(chunk)} records"):
                client.upsert(self.collection, chunk, timeout=self._timeout)

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        with self._mutex:
            client = self._ready()
            if ids is None and where is None:
                raise InvalidInputError("delete() needs ids, where, or both (refusing to delete everything)")
            # Resolve the exact rows first: engines differ in what delete() reports.
            doomed = [r.id for r in self._iter_rows(client, where or _EVERYTHING, ids)]
            for chunk in _chunks(doomed, self._batch):
                with self._translate(f"delete {len(chunk)} records"):
                    client.delete(self.collection, filter=filter_expression(None, chunk), timeout=self._timeout)
            if doomed and self._barrier_after_delete:
                self._read_one(client, "Strong")
            return len(doomed)

    # --- reads ------------------------------------------------------------------------
    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._mutex:
            client = self._ready()
        if k <= 0:
            return []
        expr = filter_expression(where)
        limit = min(k, _MAX_TOPK)
        while True:
            params = dict(self._search_params)
            if "ef" in params:  # HNSW refuses ef below the number of results asked for
                params["ef"] = max(int(params["ef"]), limit)
            with self._translate("search"):
                result = client.search(
                    self.collection, data=[q.tolist()], limit=limit, filter=expr, output_fields=_OUTPUT,
                    search_params={"metric_type": "COSINE", "params": params},
                    consistency_level=self._consistency, timeout=self._timeout,
                )
            raw = list(result[0]) if result else []
            hits = []
            for hit in raw:
                record = _from_row(hit.get("entity") or hit)
                if where.matches(record):
                    hits.append(ScoredRecord(record, float(hit["distance"])))
            if len(raw) < limit and self._exact_limit:
                exact = self._exact_if_short(client, q, k, where)
                if exact is not None:
                    return exact
            # Client-side checks may drop rows (metadata on numbers); widen until k or exhausted.
            if len(hits) >= k or len(raw) < limit or limit >= _MAX_TOPK:
                hits.sort(key=lambda h: -h.similarity)
                return hits[:k]
            limit = min(limit * 4, _MAX_TOPK)

    def _exact_if_short(self, client: Any, q: np.ndarray, k: int, where: RecordFilter) -> list[ScoredRecord] | None:
        """Score every matching row after a search came back short (None: too many rows to).

        One filtered read of the rows with their vectors: a separate count
        first cost as much again on Milvus Lite (~170 ms per filtered read at
        100k rows), and on a server both are a few milliseconds.
        """
        records, vectors = [], []
        for record, row in self._iter_matching(client, where, None, _OUTPUT, with_vectors=True):
            if len(records) >= self._exact_limit:
                return None
            records.append(record)
            vectors.append(row["vector"])
        if not records:
            return []
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
        scores = (matrix @ q) / np.maximum(norms, 1e-12)
        top = np.argsort(-scores, kind="stable")[:k]
        return [ScoredRecord(records[i], float(scores[i])) for i in top]

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        with self._mutex:
            client = self._ready()
        if not ids:
            return []
        by_id = {r.id: r for r in self._iter_rows(client, where or _EVERYTHING, ids)}
        return [by_id[i] for i in dict.fromkeys(ids) if i in by_id]

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        with self._mutex:
            client = self._ready()
        out = list(self._iter_rows(client, where, None))
        out.sort(key=lambda r: (r.timestamp, r.seq, r.id))
        return out if limit is None else out[:limit]

    def count(self, where: RecordFilter | None = None) -> int:
        with self._mutex:
            client = self._ready()
        where = where or _EVERYTHING
        if any(not isinstance(v, str) for v in where.metadata.values()):
            return sum(1 for _ in self._iter_rows(client, where, None))  # needs the client-side check
        expr = filter_expression(where)
        with self._translate("count"):
            rows = client.query(self.collection, filter=expr, output_fields=["count(*)"],
                                consistency_level=self._consistency, timeout=self._timeout)
        return int(rows[0]["count(*)"]) if rows else 0

    def _iter_rows(self, client: Any, where: RecordFilter, ids: Sequence[str] | None) -> Iterator[MemoryRecord]:
        for record, _row in self._iter_matching(client, where, ids, _OUTPUT):
            yield record

    def _iter_matching(self, client: Any, where: RecordFilter, ids: Sequence[str] | None,
                       fields: list[str], *, with_vectors: bool = False) -> Iterator[tuple[MemoryRecord, dict[str, Any]]]:
        if with_vectors:
            fields = [*fields, "vector"]
        if ids is not None:
            for chunk in _chunks(list(dict.fromkeys(ids)), self._batch):
                expr = filter_expression(where, chunk)
                with self._translate("query"):
                    rows = client.query(self.collection, filter=expr, output_fields=fields,
                                        consistency_level=self._consistency, timeout=self._timeout)
                for row in rows:
                    record = _from_row(row)
                    if where.matches(record):
                        yield record, row
            return
        # Our own primary-key cursor: pymilvus' query_iterator pastes the last
        # id into its next filter unescaped, which breaks on hostile ids.
        # With iterator=True both engines return each page in id order.
        # pymilvus sends iterator pages with the collection's default level
        # (Session, set at create) and no guarantee timestamp, which a server
        # reads as Strong (a ~400 ms wait per page on 2.3). One Session read
        # first waits for this process' writes; then pages need no wait.
        page_ts: dict[str, int] = {}
        if self.is_server and self._consistency != "Strong":  # Milvus Lite reads its own state
            self._read_one(client, self._consistency)
            page_ts["guarantee_timestamp"] = 1
        expr = filter_expression(where)
        last: str | None = None
        while True:
            parts = [f"({expr})"] if expr else []
            parts.append(f"id > {literal(last)}" if last is not None else 'id != ""')
            with self._translate("scan"):
                rows = client.query(self.collection, filter=" and ".join(parts), limit=self._batch,
                                    output_fields=fields, consistency_level=self._consistency, iterator="True",
                                    timeout=self._timeout, **page_ts)
            for row in rows:
                record = _from_row(row)
                if where.matches(record):
                    yield record, row
            if len(rows) < self._batch:
                return
            last = max(row["id"] for row in rows)

    # --- errors -------------------------------------------------------------------------
    def _translate(self, action: str) -> _Translate:
        return _Translate(self, action)


class _Translate:
    """Turn driver exceptions into memory-vec errors, always ``from exc``."""

    def __init__(self, backend: MilvusBackend, action: str) -> None:
        self.backend, self.action = backend, action

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None or isinstance(exc, (BackendError, InvalidInputError, StoreLockedError)):
            return False
        if not isinstance(exc, Exception):
            return False
        where = f"Milvus at {self.backend.uri} (collection {self.backend.collection!r})"
        text = f"{exc}".lower()
        if "deadline" in text or "timeout" in text or "timed out" in text:
            raise BackendTimeoutError(
                f"{where} did not answer within {self.backend._timeout}s while trying to {self.action}: {exc}"
            ) from exc
        if any(s in text for s in ("auth", "credential", "password", "permission denied")):
            raise BackendUnavailableError(
                f"{where} rejected the credentials while trying to {self.action}: check "
                f"backend_options['token'] ('user:password' or an API key). Driver said: {exc}"
            ) from exc
        if any(s in text for s in ("connect", "unavailable", "not ready", "closed channel")) or _is_grpc_error(exc):
            raise BackendUnavailableError(
                f"{where} is unreachable while trying to {self.action}: {exc}. Check that the server "
                "is running and the URL (MemoryConfig.url) is right."
            ) from exc
        raise BackendError(f"{where} failed to {self.action}: {exc}") from exc


def _is_grpc_error(exc: BaseException) -> bool:
    try:
        import grpc
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, grpc.RpcError)


# --- rows ------------------------------------------------------------------------------
def _to_row(record: MemoryRecord, vector: np.ndarray) -> dict[str, Any]:
    if len(record.text.encode("utf-8")) > _TEXT_BYTES:
        raise InvalidInputError(
            f"record {record.id!r}: text is {len(record.text.encode('utf-8'))} bytes; Milvus stores at most "
            f"{_TEXT_BYTES} bytes (lower max_content_bytes)"
        )
    for name in ("id", "user_id", "session_id"):
        if len(getattr(record, name).encode("utf-8")) > _ID_BYTES:
            raise InvalidInputError(f"record {record.id[:40]!r}: {name} is longer than {_ID_BYTES} bytes")
    return {
        "id": record.id,
        "vector": vector.tolist(),
        "owner": record.user_id if record.visibility == "private" else SHARED_OWNER,
        "user_id": record.user_id,
        "session_id": record.session_id,
        # Columns for filtering; the exact (nullable) values live in attrs.
        "agent_id": record.agent_id or "",
        "role": record.role,
        "kind": record.kind,
        "visibility": record.visibility,
        "timestamp": float(record.timestamp),
        "seq": int(record.seq),
        "importance": float(record.importance),
        "superseded": record.valid_to is not None,
        "valid_to": float(record.valid_to) if record.valid_to is not None else 0.0,
        "superseded_by": _clip(record.superseded_by or ""),
        "archived": bool(record.archived),
        "pinned": bool(record.pinned),
        "expire_at": float(record.expire_at) if record.expire_at is not None and math.isfinite(record.expire_at)
        else 0.0,
        "subject": _clip(record.subject or ""),
        "text": record.text,
        "metadata": dict(record.metadata),
        "attrs": {
            "agent_id": record.agent_id,
            "valid_to": record.valid_to,
            "superseded_by": record.superseded_by,
            "subject": record.subject,
            "expire_at": record.expire_at,
            "source_ids": list(record.source_ids),
            "recall_count": record.recall_count,
            "last_recalled_at": record.last_recalled_at,
        },
    }


def _clip(value: str) -> str:
    data = value.encode("utf-8")
    return value if len(data) <= _ID_BYTES else data[:_ID_BYTES].decode("utf-8", "ignore")


def _from_row(row: dict[str, Any]) -> MemoryRecord:
    attrs = row.get("attrs") or {}
    if isinstance(attrs, (str, bytes)):
        attrs = json.loads(attrs)
    metadata = row.get("metadata") or {}
    if isinstance(metadata, (str, bytes)):
        metadata = json.loads(metadata)
    return MemoryRecord(
        id=row["id"],
        text=row["text"],
        role=row["role"],
        user_id=row["user_id"],
        session_id=row["session_id"],
        timestamp=float(row["timestamp"]),
        kind=row["kind"],
        seq=int(row["seq"]),
        agent_id=attrs.get("agent_id"),
        importance=float(row["importance"]),
        metadata=dict(metadata),
        valid_to=attrs.get("valid_to"),
        superseded_by=attrs.get("superseded_by"),
        visibility=row["visibility"],
        subject=attrs.get("subject"),
        source_ids=list(attrs.get("source_ids") or []),
        pinned=bool(row["pinned"]),
        expire_at=attrs.get("expire_at"),
        archived=bool(row["archived"]),
        recall_count=int(attrs.get("recall_count") or 0),
        last_recalled_at=attrs.get("last_recalled_at"),
    )


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
