"""``VectorSummaryStore``: a LangGraph ``BaseStore`` backed by memory-vec.

LangChain 1.x agents (``create_agent(..., store=...)``) and LangGraph graphs
(``graph.compile(store=...)``) keep long-term memory in a ``BaseStore``. This
one keeps every item as one memory-vec record in any memory-vec backend
(in-process, Chroma, Milvus) and ranks ``search(query=...)`` with memory-vec's
recall: cosine similarity fused with BM25 keywords (Chinese included), plus
the recency / importance weights and threshold of the :class:`MemoryConfig`.
Record layout and the namespace rule: :mod:`langchain_memory_vec._store_items`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    validate_op_namespace,
)
from typing_extensions import Self

from langchain_memory_vec._store_items import (
    MARKER,
    NamespaceScopeError,
    StoredItem,
    UserScope,
    build_record,
    check_filter,
    check_index_paths,
    check_keys,
    check_ttl_config,
    index_text,
    matches_filter,
    matches_namespace,
    record_id,
)
from memory_vec import MemoryConfig
from memory_vec._model.errors import ConfigError, InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec._rules.bm25 import BM25Index, IndexedDoc
from memory_vec._rules.conflict import ConflictAction, ConflictResolver, ExistingFact, ExtractedFact
from memory_vec._rules.facts import subject_key
from memory_vec._rules.ranking import Candidate, ScorePolicy, rank
from memory_vec.backends import Backend, RecordFilter, create_backend
from memory_vec.backends.base import BackendLimits
from memory_vec.embeddings import Embedder, get_embedder
from memory_vec.embeddings.models import LangChainEmbedder

__all__ = ["NamespaceScopeError", "VectorSummaryStore"]

logger = logging.getLogger(__name__)
_ALL = RecordFilter(metadata={MARKER: 1}, include_superseded=True, include_archived=True)
_INDEX_KEYS = ("dims", "embed", "fields")


class VectorSummaryStore(BaseStore):
    """A LangGraph ``BaseStore`` on memory-vec: per-user items, hybrid semantic search, TTL.

    Scope: the namespace element at ``user_position`` (default 1, i.e.
    ``("memories", user_id, ...)``) is the memory-vec user. A search or a
    namespace listing whose prefix does not name one user raises
    :class:`NamespaceScopeError` unless the store is built with
    ``allow_cross_user=True`` (admin tools). ``put`` on an existing
    (namespace, key) replaces the value, keeping ``created_at``.

    A search reads the live items of its user (filters and the namespace
    prefix are applied here, then every candidate is scored exactly), so it
    suits per-user memories of up to some thousands of items.

    Setup::

        from langchain.agents import create_agent
        from memory_vec import MemoryConfig
        from langchain_memory_vec.store import VectorSummaryStore

        store = VectorSummaryStore(MemoryConfig(backend="chroma", persist_dir="./mem",
                                                collection="agent_store"))
        store.put(("memories", "alice"), "diet", {"text": "Alice is vegetarian"})
        store.search(("memories", "alice"), query="what does she eat?", limit=3)
        agent = create_agent(model, tools, store=store)

    Async: ``await store.aput(...)``, ``await store.asearch(...)`` run the
    same batch in a worker thread that keeps the caller's context, so the
    event loop never blocks on the embedder or the backend.

    Args:
        config: memory-vec settings: backend, embedding model, ranking
            weights (``hybrid``, ``ranking.bm25_weight``, ``recency_weight``, ...) and
            ``score_threshold`` (default 0: a search returns ``limit`` items).
            Give the store a collection of its own.
        backend: a ready backend instead of one built from ``config`` (then
            the caller closes it).
        embedder: a memory-vec embedder instead of ``config.embedding_model``.
        index: ``InMemoryStore``-style ``{"dims": ..., "embed": ..., "fields": [...]}``;
            ``fields`` defaults to ``["$"]`` (the whole value as JSON text),
            ``embed`` is a LangChain ``Embeddings`` (or what
            ``langgraph.store.base.ensure_embeddings`` accepts).
        ttl: a LangGraph ``TTLConfig`` (``default_ttl`` minutes,
            ``refresh_on_read``, ``sweep_interval_minutes`` for
            :meth:`start_ttl_sweeper`). Expired items are hidden at once and
            removed by :meth:`sweep_ttl`.
        user_position: which namespace element is the user id.
        allow_cross_user: let searches and listings span users (admin only).
        conflict_overwrite: the current-value rule of the core, for items: an
            indexed item whose text updates another item of the same namespace
            ("budget is now 8000" after "budget is 5000", under another key)
            supersedes it. ``search`` then returns only the current one; ``get``
            by key still returns what was put under that key; the older record
            is marked superseded (its ``superseded_by``, and ``lg_superseded_by``
            naming the newer key, in its metadata); deleting the newer item
            makes the older current again. Events, other entities, and past,
            planned, reported or hypothetical statements never supersede.
            Default True; ``False`` keeps every key as put.
        clock: epoch seconds (tests pass a fake clock for TTL).
    """

    supports_ttl = True

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        backend: Backend | None = None,
        embedder: Embedder | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        user_position: int = 1,
        allow_cross_user: bool = False,
        conflict_overwrite: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(user_position, bool) or not isinstance(user_position, int) or user_position < 0:
            raise ConfigError(f"VectorSummaryStore.user_position: got {user_position!r}; expected an int >= 0")
        self.config = config or MemoryConfig()
        self.scope = UserScope(user_position, allow_cross_user)
        options: dict[str, Any] = dict(index or {})
        check_keys(options, _INDEX_KEYS, "index")
        self.embedder = self._resolve_embedder(embedder, options.get("embed"))
        if options.get("dims") is not None and options["dims"] != self.embedder.dimension:
            raise ConfigError(
                f"VectorSummaryStore.index['dims']: got {options['dims']!r}; the embedder "
                f"{self.embedder.model_id!r} makes {self.embedder.dimension}-d vectors"
            )
        try:
            self.index_fields = check_index_paths(
                options.get("fields") or ["$"], where="VectorSummaryStore.index['fields']"
            )
        except InvalidInputError as exc:
            raise ConfigError(str(exc)) from exc
        self.index_config = cast(IndexConfig, {"dims": self.embedder.dimension, "fields": list(self.index_fields)})
        self.ttl_config = check_ttl_config(ttl)
        self._owns_backend = backend is None
        self.backend: Backend = backend if backend is not None else create_backend(self.config)
        self.backend.open(dimension=self.embedder.dimension, model_id=self.embedder.model_id)
        self.limits: BackendLimits = getattr(self.backend, "limits", None) or BackendLimits()
        c = self.config
        self.policy = ScorePolicy(
            half_life_days=c.decay_half_life_days,
            recency_weight=c.recency_weight,
            importance_weight=c.importance_weight,
            bm25_weight=c.ranking.bm25_weight if c.hybrid else 0.0,
            threshold=c.score_threshold or 0.0,
            collapse_duplicates=False,  # equal texts under two keys are two items
        )
        threshold = c.conflict_threshold
        if threshold is None:
            threshold = float(getattr(self.embedder, "conflict_threshold", 0.8))
        self.resolver = ConflictResolver(threshold, detector=c.conflict_detector) if conflict_overwrite else None
        self._clock = clock
        self._last = 0.0
        self._clock_lock = threading.Lock()
        # Serialises this process's writes, so a concurrent put and a TTL refresh of
        # one item cannot overwrite each other's value or created_at.
        self._write_lock = threading.RLock()
        self._sweeper: tuple[threading.Thread, threading.Event] | None = None

    def _resolve_embedder(self, embedder: Embedder | None, embed: Any) -> Embedder:
        if embed is not None:
            if embedder is not None:
                raise ConfigError("VectorSummaryStore: pass embedder= or index['embed'], not both")
            return LangChainEmbedder(ensure_embeddings(embed))
        if embedder is not None:
            return embedder
        c = self.config
        return get_embedder(c.embedding_model, device=c.embedding_device, batch_size=c.embedding_batch_size)

    # --- BaseStore ----------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order; reads see the store as it was before this batch's writes.

        That is ``InMemoryStore``'s order too. Every put is validated and
        embedded before anything is written; the last put of a
        (namespace, key) in one batch wins.
        """
        ops = list(ops)
        for op in ops:
            if not isinstance(op, GetOp | SearchOp | PutOp | ListNamespacesOp):
                raise InvalidInputError(f"Unknown store operation {type(op).__name__}")
            validate_op_namespace(op)
            if isinstance(op, SearchOp):
                check_filter(op.filter)
                if op.limit < 0 or op.offset < 0:
                    raise InvalidInputError(f"search: limit and offset must be >= 0, got {op.limit}, {op.offset}")
        puts = {(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}
        records, vectors, deletes = self._prepare_writes(list(puts.values()))
        now = self._now()
        loaded: dict[str | None, list[StoredItem]] = {}
        touched: list[StoredItem] = []  # items read with refresh_ttl
        got = self._get_many([op for op in ops if isinstance(op, GetOp)], now)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = got.get((op.namespace, op.key))
                if found is not None and op.refresh_ttl:
                    touched.append(found)
                results.append(found.to_item() if found is not None else None)
            elif isinstance(op, SearchOp):
                hits = self._search(op, now, loaded)
                touched.extend(item for item, _ in hits if op.refresh_ttl)
                results.append([item.to_search_item(score) for item, score in hits])
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, now, loaded))
            else:
                results.append(None)
        self._write(records, vectors, deletes)
        self._refresh(touched, skip={record_id(*k) for k in puts})
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread that keeps the caller's context variables."""
        return cast("list[Result]", await _in_thread(self.batch, list(ops)))

    # --- reads ----------------------------------------------------------------------------------
    def _get_many(self, ops: Sequence[GetOp], now: float) -> dict[tuple[tuple[str, ...], str], StoredItem]:
        for op in ops:
            self.scope.user_of(op.namespace)  # an item always has an owner
        if not ops:
            return {}
        out: dict[tuple[tuple[str, ...], str], StoredItem] = {}
        for record in self.backend.get(list(dict.fromkeys(record_id(op.namespace, op.key) for op in ops))):
            item = StoredItem.decode(record)
            if item is not None and not item.expired(now):
                out[(item.namespace, item.key)] = item
        return out

    def _load(self, user: str | None, now: float, loaded: dict[str | None, list[StoredItem]]) -> list[StoredItem]:
        """Every live item of a user (``None``: of every user), oldest first; read once per batch."""
        if user not in loaded:
            where = RecordFilter(user_id=user, metadata={MARKER: 1}, include_superseded=True, include_archived=True)
            items = [StoredItem.decode(r) for r in self.backend.scan(where)]
            loaded[user] = sorted((i for i in items if i is not None and not i.expired(now)), key=StoredItem.sort_key)
        return loaded[user]

    def _search(
        self, op: SearchOp, now: float, loaded: dict[str | None, list[StoredItem]]
    ) -> list[tuple[StoredItem, float | None]]:
        prefix = tuple(op.namespace_prefix)
        user = self.scope.user_of_prefix(prefix, wildcards=False, action="search")
        items = [
            i
            for i in self._load(user, now, loaded)
            if i.namespace[: len(prefix)] == prefix
            and i.record.valid_to is None  # superseded by a newer item: get() by key still has it
            and matches_filter(i.value, op.filter)
        ]
        ranked: list[tuple[StoredItem, float | None]]
        if op.query:
            ranked = [
                *self._rank(op.query, user, [i for i in items if i.fields], now),
                *((i, None) for i in items if not i.fields),
            ]  # unindexed items follow, unscored
        else:
            ranked = [(i, None) for i in items]
        return ranked[op.offset : op.offset + op.limit]

    def _rank(
        self, query: str, user: str | None, items: list[StoredItem], now: float
    ) -> list[tuple[StoredItem, float | None]]:
        """memory-vec recall over the candidate items: cosine fused with BM25, then the policy."""
        if not items:
            return []
        by_id = {i.record.id: i for i in items}
        where = RecordFilter(user_id=user, ids=tuple(by_id), include_superseded=True, include_archived=True)
        sims = {
            h.record.id: h.similarity
            for h in self.backend.query(self.embedder.embed_query(query), k=len(by_id), where=where)
        }
        keyword: dict[str, float] | None = None
        if self.policy.bm25_weight > 0:
            bm25 = BM25Index()
            bm25.add(IndexedDoc(i.record.id, index_text(i.value, i.fields or ()), positional=False) for i in items)
            keyword = dict(bm25.search(query, k=len(items)))
        candidates = [
            Candidate(by_id[rid].record, sim, bm25=None if keyword is None else keyword.get(rid, 0.0))
            for rid, sim in sims.items()
        ]
        ranked: list[tuple[StoredItem, float | None]] = [
            (by_id[hit.id], hit.score) for hit in rank(candidates, policy=self.policy, now=now, k=len(items))
        ]
        # A row the engine did not score (not yet visible to its index) is still listed, unscored.
        return ranked + [(i, None) for i in items if i.record.id not in sims]

    def _list_namespaces(
        self, op: ListNamespacesOp, now: float, loaded: dict[str | None, list[StoredItem]]
    ) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefixes = [c.path for c in conditions if c.match_type == "prefix"]
        user = self.scope.user_of_prefix(prefixes[0] if prefixes else (), wildcards=True, action="list_namespaces")
        found = {i.namespace for i in self._load(user, now, loaded)}
        found = {ns for ns in found if all(matches_namespace(c, ns) for c in conditions)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    # --- writes ---------------------------------------------------------------------------------
    def _prepare_writes(self, puts: list[PutOp]) -> tuple[list[MemoryRecord], np.ndarray, list[str]]:
        """Records and vectors for the puts, and ids to delete; raises before anything is written."""
        records: list[MemoryRecord] = []
        texts: list[str] = []
        deletes: list[str] = []
        for op in puts:
            user = self.scope.user_of(op.namespace)
            if op.value is None:
                deletes.append(record_id(op.namespace, op.key))
                continue
            if not op.namespace or op.namespace[0] == "langgraph":
                raise InvalidNamespaceError(f'Namespace {op.namespace!r}: the root label cannot be "langgraph"')
            fields = (
                self.index_fields
                if op.index is None
                else None
                if op.index is False
                else check_index_paths(op.index, where=f"put {op.namespace!r}/{op.key!r} index")
            )
            now = self._now()  # one instant per put: listing keeps the order of the puts
            record, text = build_record(
                op.namespace,
                op.key,
                op.value,
                user_id=user,
                fields=fields,
                ttl=op.ttl,
                created=now,
                now=now,
                limits=self.limits,
            )
            records.append(record)
            texts.append(text)
        vectors = np.zeros((len(records), self.embedder.dimension), dtype=np.float32)
        vectors[:, 0] = 1.0  # a placeholder for unindexed items: never scored (they have no lg_fields)
        rows = [n for n, text in enumerate(texts) if text]
        if rows:
            vectors[rows] = self.embedder.embed_documents([texts[n] for n in rows])
        return records, vectors, deletes

    def _write(self, records: list[MemoryRecord], vectors: np.ndarray, deletes: list[str]) -> None:
        with self._write_lock:
            if records:
                # A replaced item keeps its created_at (unless it had expired: then it is a new item).
                now = self._now()
                by_id = {r.id: r for r in records}
                for old in filter(None, map(StoredItem.decode, self.backend.get(list(by_id)))):
                    if not old.expired(now):
                        by_id[old.record.id].metadata["lg_created"] = old.created
                superseded = self._superseded_by_puts(records, vectors, now)
                self.backend.upsert(records, vectors)
                if superseded:
                    self.backend.update(superseded)
            if deletes:
                restored = self._restored_by_deletes(deletes)
                self.backend.delete(ids=deletes)
                if restored:
                    self.backend.update(restored)

    def _superseded_by_puts(self, records: list[MemoryRecord], vectors: np.ndarray, now: float) -> list[MemoryRecord]:
        """Other items of the same namespace that the new items update (the core's current-value rule)."""
        if self.resolver is None:
            return []
        put_ids = {r.id for r in records}
        out: dict[str, MemoryRecord] = {}
        for record, vector in zip(records, vectors):
            item = StoredItem.decode(record)
            if item is None or not item.fields:
                continue
            text = index_text(item.value, item.fields)
            where = RecordFilter(user_id=record.user_id, metadata={MARKER: 1, "lg_ns": record.metadata["lg_ns"]})
            olds: dict[str, MemoryRecord] = {}
            neighbours = []
            for hit in self.backend.query(vector, k=5, where=where):
                old = StoredItem.decode(hit.record)
                if old is None or not old.fields or old.record.id in put_ids or old.expired(now):
                    continue
                old_text = index_text(old.value, old.fields)
                olds[old.record.id] = old.record
                neighbours.append(ExistingFact(old.record.id, old_text, subject_key(old_text), hit.similarity))
            decision = self.resolver.decide(ExtractedFact(text, subject_key(text), 0.5), neighbours)
            if decision.action in (ConflictAction.UPDATE, ConflictAction.DELETE):
                for old_id in decision.superseded:
                    meta = {**olds[old_id].metadata, "lg_superseded_by": item.key}
                    out[old_id] = olds[old_id].copy(valid_to=now, superseded_by=record.id, metadata=meta)
        return list(out.values())

    def _restored_by_deletes(self, deletes: list[str]) -> list[MemoryRecord]:
        """Items that a deleted item had superseded: current again."""
        gone = set(deletes)
        restored = []
        for user in {r.user_id for r in self.backend.get(deletes)}:
            where = RecordFilter(user_id=user, metadata={MARKER: 1}, include_superseded=True)
            for r in self.backend.scan(where):
                if r.superseded_by in gone and r.id not in gone:
                    meta = {k: v for k, v in r.metadata.items() if k != "lg_superseded_by"}
                    restored.append(r.copy(valid_to=None, superseded_by=None, metadata=meta))
        return restored

    def _refresh(self, items: list[StoredItem], *, skip: set[str]) -> None:
        """Push the TTL deadline of items that were read (re-read first: never revert a newer write).

        A backend rewrites the whole record, so a refresh racing another
        process's put of the same item could put the old value back. An item
        whose deadline is within 5 % of its TTL (at least a second) of a full
        TTL was put or refreshed just now and is left as it is: a hot item is
        rewritten once per 5 % of its TTL, not on every read, and a read right
        after another worker's put does not write at all."""
        now = self._now()
        ids = list(
            dict.fromkeys(
                i.record.id for i in items if i.ttl is not None and i.record.id not in skip and _due_for_refresh(i, now)
            )
        )
        if not ids:
            return
        with self._write_lock:
            now = self._now()
            fresh = [i for i in map(StoredItem.decode, self.backend.get(ids)) if i is not None and i.ttl is not None]
            updated = [
                i.record.copy(expire_at=now + (i.ttl or 0.0) * 60.0, kind="item")
                for i in fresh
                if not i.expired(now) and _due_for_refresh(i, now)
            ]
            if updated:
                self.backend.update(updated)

    # --- TTL maintenance --------------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Delete every expired item (all users); returns how many were removed."""
        with self._write_lock:
            now = self._now()
            doomed = [r.id for r in self.backend.scan(_ALL) if r.expire_at is not None and r.expire_at <= now]
            if not doomed:
                return 0
            # Another worker may have put some of them again since the scan: read them once more.
            doomed = [r.id for r in self.backend.get(doomed) if r.expire_at is not None and r.expire_at <= now]
            return self.backend.delete(ids=doomed) if doomed else 0

    async def asweep_ttl(self) -> int:
        return cast(int, await _in_thread(self.sweep_ttl))

    def start_ttl_sweeper(self, interval_minutes: float | None = None) -> None:
        """Run :meth:`sweep_ttl` every ``interval_minutes`` (default: ``ttl['sweep_interval_minutes']``)
        in a daemon thread until :meth:`stop_ttl_sweeper` or :meth:`close`."""
        minutes = interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        if not minutes or minutes <= 0:
            raise ConfigError("start_ttl_sweeper needs interval_minutes > 0 or ttl={'sweep_interval_minutes': ...}")
        if self._sweeper is not None:
            return
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(float(minutes) * 60.0):
                try:
                    self.sweep_ttl()
                except Exception:  # the sweeper must outlive a transient backend failure
                    logger.exception("VectorSummaryStore TTL sweep failed; retrying in %s minutes", minutes)

        thread = threading.Thread(target=loop, name="memory-vec-store-ttl", daemon=True)
        self._sweeper = (thread, stop)
        thread.start()

    def stop_ttl_sweeper(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper[1].set()
            sweeper[0].join(timeout=10)

    def close(self) -> None:
        """Stop the sweeper and close the backend if this store built it."""
        self.stop_ttl_sweeper()
        if self._owns_backend:
            self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self) -> float:
        """Epoch seconds, strictly increasing within this store (orders puts made in one tick)."""
        with self._clock_lock:
            self._last = max(float(self._clock()), self._last + 1e-6)
            return self._last


def _due_for_refresh(item: StoredItem, now: float) -> bool:
    """Whether a read should push the item's deadline (see ``VectorSummaryStore._refresh``)."""
    ttl_s = (item.ttl or 0.0) * 60.0
    return item.record.expire_at is None or item.record.expire_at < now + ttl_s - max(1.0, 0.05 * ttl_s)


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    ctx = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(ctx.run, fn, *args))
