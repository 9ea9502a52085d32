"""A local copy of each active user's memories, so recall need not ask the server.

A turn's five to seven reads of a server cost more than a whole in-process
turn (benchmarks/RESULTS.md). :class:`ReplicatedBackend` wraps a persistent
backend and answers a user's recall reads (``query``, ``get``) from an
in-process copy of that user's messages and facts, with their vectors, plus
the shared (agent/global) ones the user may see; the rest goes to the backend.

The copy stays true the way the keyword index does (``keywords.py``):

- this process's writes pass through the wrapper and are applied to the
  copy after the backend took them;
- other processes' writes are in the shared keyword log (per user, and
  under :data:`SHARED_LOG` for shared records); before a copy answers, one
  read of the log names what changed since the copy's position, and only
  those rows are fetched (``scan_vectors`` by id);
- a delete anywhere bumps the log's generation, and copies rebuild (an
  import too: it is the one way a shared record becomes private again);
- on a server whose reads may lag other clients' writes (Milvus
  "Bounded"), the backend names the bound (``read_staleness``) and what
  others wrote is read once more when it has passed (at load: the last
  :data:`RECENT` log entries).

A write made outside memory-vec is not logged: no copy sees it until rebuilt.
Bounded: an LRU over users, capped by the rows held in total; a user with
more rows than half the cap is never copied (read from the backend).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory_vec._model.records import MemoryRecord
from memory_vec._storage.keywords import INDEXED_KINDS, SHARED_LOG, current_view, log_changes
from memory_vec.backends.base import BackendLimits, BaseBackend, PurgeReport, RecordFilter, ScoredRecord, insert_new_of
from memory_vec.backends.memory import Partition, unit_rows
from memory_vec.state.base import StateStore

__all__ = ["COPIED_KINDS", "ReplicatedBackend"]

#: Kinds the keyword log covers, hence the kinds a copy holds (recall's kinds).
COPIED_KINDS = INDEXED_KINDS
#: On a lagging server, the last log entries per key a new copy reads again (module doc).
RECENT = 64


@dataclass(eq=False)  # compared by identity (fetch marks)
class _Copy:
    """One user's rows (and the shared rows visible to ``agent_id``) and their log positions."""

    user_id: str
    agent_id: str | None
    part: Partition
    positions: dict[str, tuple[int, int]]  # log key -> (generation, counter) caught up to
    lock: threading.Lock = field(default_factory=threading.Lock)
    loaded: bool = False  # registered before its first scan (so own writes wait for it)
    fetches: int = 0  # reads of rows from the backend so far (load, catch-ups)
    refetch: set[str] = field(default_factory=set)  # own writes a fetch may have overtaken
    settling: dict[str, float] = field(default_factory=dict)  # others' writes read again at (monotonic)
    view: object | None = None  # the operation it last caught up in (keywords.one_read_view)

    def holds(self, record: MemoryRecord) -> bool:
        """Whether ``record`` belongs in this copy."""
        return record.kind in COPIED_KINDS and (
            record.user_id == self.user_id
            or record.visibility == "global"
            or (record.visibility == "agent" and self.agent_id is not None and record.agent_id == self.agent_id)
        )

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None) -> bool:
        """Apply rows; False when a row belongs here but neither it nor its vector is known."""
        for i, record in enumerate(records):
            if not self.holds(record):
                self.part.remove(record.id)
            elif vectors is not None:
                self.part.put(record.copy(metadata=dict(record.metadata)), vectors[i])
            elif record.id in self.part.row:
                self.part.put(record.copy(metadata=dict(record.metadata)), None)
            else:
                return False
        return True


class ReplicatedBackend(BaseBackend):
    """``inner`` with a user's recall reads answered from a local copy (module doc).

    Args:
        inner: a persistent backend with ``scan_vectors`` (usually guarded).
        state: the store's working state, which holds the keyword log.
        max_docs: rows held across users at most.
    """

    def __init__(self, inner: Any, state: StateStore, *, max_docs: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.limits: BackendLimits = getattr(inner, "limits", BackendLimits())
        self.supports_multiprocess = bool(getattr(inner, "supports_multiprocess", False))
        self.persistent = bool(getattr(inner, "persistent", False))
        self.local_writes = bool(getattr(inner, "local_writes", False))
        self.vector_reads = True
        self.max_docs = max_docs
        self._state = state
        self._copies: OrderedDict[tuple[str, str | None], _Copy] = OrderedDict()
        self._too_big: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, str | None], threading.Lock] = {}
        self._dimension = 0
        # A server whose reads may lag other clients' writes (Milvus "Bounded") names
        # the bound: what others wrote is read once more when it has passed.
        self._staleness = float(getattr(inner, "read_staleness", 0.0) or 0.0)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"ReplicatedBackend({self.inner!r}, max_docs={self.max_docs})"

    # --- passed through ------------------------------------------------------------------
    def open(self, *, dimension: int, model_id: str) -> None:
        self.inner.open(dimension=dimension, model_id=model_id)
        if dimension != self._dimension:
            self.drop_copies()
            self._dimension = dimension

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        return self.inner.scan(where, limit=limit)  # type: ignore[no-any-return]

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        return self.inner.scan_vectors(where)  # type: ignore[no-any-return]

    def count(self, where: RecordFilter | None = None) -> int:
        return int(self.inner.count(where))

    def purge(self) -> PurgeReport:
        return self.inner.purge()  # type: ignore[no-any-return]

    def reset(self, *, dimension: int, model_id: str) -> None:
        self.drop_copies()
        self.inner.reset(dimension=dimension, model_id=model_id)
        self._dimension = dimension

    def drop(self) -> None:
        self.drop_copies()
        self.inner.drop()

    def close(self) -> None:
        self.drop_copies()
        self.inner.close()

    # --- writes: the backend first, then every copy they touch ------------------------------
    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        self._write(self.inner.upsert, records, vectors)

    def insert_new(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        self._write(insert_new_of(self.inner), records, vectors)

    def _write(
        self,
        write: Callable[[Sequence[MemoryRecord], np.ndarray], None],
        records: Sequence[MemoryRecord],
        vectors: np.ndarray,
    ) -> None:
        before = self._fetch_marks()
        write(records, vectors)
        self._apply(records, unit_rows(np.asarray(vectors, dtype=np.float32)), before)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        before = self._fetch_marks()
        self.inner.update(records)
        self._apply(records, None, before)

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        n = int(self.inner.delete(ids=ids, where=where))
        if where is None and ids is not None:
            doomed = set(ids)
            for copy in self._all_copies():
                with copy.lock:
                    for record_id in doomed & copy.part.row.keys():
                        copy.part.remove(record_id)
        else:  # which rows went is not known here: those copies are rebuilt
            user = where.user_id if where is not None else None
            self.drop_copies(None if user is None or (where is not None and where.include_shared) else user)
        return n

    def logged(self, key: str, counter: int, count: int) -> None:
        """This process appended ``count`` ids ending at ``counter`` to log ``key``
        (records already applied): copies that were caught up stay caught up."""
        for copy in self._all_copies():
            with copy.lock:
                generation, position = copy.positions.get(key, (-1, -1))
                if position == counter - count:
                    copy.positions[key] = (generation, counter)

    def _fetch_marks(self) -> dict[tuple[str, str | None], tuple[_Copy, int]]:
        return {key: (copy, copy.fetches) for key, copy in self._items()}

    def _apply(
        self,
        records: Sequence[MemoryRecord],
        vectors: np.ndarray | None,
        before: dict[tuple[str, str | None], tuple[_Copy, int]],
    ) -> None:
        """Own rows, now in the backend, into every copy. A copy that fetched rows
        since the write began may hold another process's newer version of one
        of them, which this older one would overwrite: it fetches them again."""
        grown = False
        for key, copy in self._items():
            with copy.lock:
                size = len(copy.part)
                complete = copy.put(records, vectors)
                grown = grown or len(copy.part) > size
                if before.get(key) != (copy, copy.fetches):
                    copy.refetch.update(r.id for r in records if r.kind in COPIED_KINDS)
            if not complete:
                self._unregister(key, copy)
            elif len(copy.part) > size:
                self._bound(key, copy, evict=False)
        if grown:
            with self._lock:
                self._evict(keep=None)

    # --- reads: from the copy when it can answer ------------------------------------------
    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        copy = self._copy_for(where)
        if copy is None:
            result: list[ScoredRecord] = self.inner.query(vector, k=k, where=where)
            return result
        if k <= 0:
            return []
        q = unit_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        with copy.lock:
            part = copy.part
            if where.ids is None:
                index = np.arange(len(part))
                sims = part.vectors[: len(part)] @ q
            else:
                index = np.fromiter(sorted({part.row[i] for i in where.ids if i in part.row}), dtype=np.int64)
                sims = part.vectors[index] @ q
            hits: list[ScoredRecord] = []
            for j in np.argsort(-sims, kind="stable"):
                record = part.records[index[j]]
                if where.matches(record):
                    hits.append(
                        ScoredRecord(record.copy(metadata=dict(record.metadata)), float(np.clip(sims[j], -1.0, 1.0)))
                    )
                    if len(hits) >= k:
                        break
        return hits

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        copy = self._copy_for(where) if where is not None else None
        if copy is None or where is None:
            result: list[MemoryRecord] = self.inner.get(ids, where=where)
            return result
        with copy.lock:
            part = copy.part
            found = [part.records[part.row[i]] for i in dict.fromkeys(ids) if i in part.row]
            return [r.copy(metadata=dict(r.metadata)) for r in found if where.matches(r)]

    def scan_copied(self, where: RecordFilter) -> list[MemoryRecord] | None:
        """``scan(where)`` answered from the user's copy (loaded if need be); None when no copy can.

        For the keyword index's rebuild, which reads the same rows as the copy's
        load. Other scans go to the backend (rows written outside memory-vec).
        """
        copy = self._copy_for(where)
        if copy is None:
            return None
        with copy.lock:
            found = [r.copy(metadata=dict(r.metadata)) for r in copy.part.records if where.matches(r)]
        found.sort(key=lambda r: (r.timestamp, r.seq, r.id))  # as a backend's scan: oldest first
        return found

    def loads_copy(self, where: RecordFilter) -> bool:
        """Whether a read of ``where`` would load the user's copy first (``load_copy`` can start it early)."""
        with self._lock:
            found = self._lookup(where)
        return found is not None and found[1] is None and bool(self._dimension)

    def load_copy(self, where: RecordFilter) -> None:
        self._copy_for(where)

    def log_asks(self, user_id: str) -> list[tuple[str, int, int]]:
        """The keyword-log reads the user's copies make next (a turn's first load reads them ahead)."""
        held = [dict(c.positions) for (u, _), c in self._items() if u == user_id and c.loaded]
        return [(key, at, generation) for positions in held for key, (generation, at) in positions.items()]

    def _lookup(self, where: RecordFilter) -> tuple[tuple[str, str | None], _Copy | None] | None:
        """Under ``_lock``: the key and copy (None: not loaded) for ``where``; None when no copy can answer."""
        user = where.user_id
        if user is None or where.kinds is None or not set(where.kinds) <= set(COPIED_KINDS) or user in self._too_big:
            return None
        key = (user, where.agent_id)
        copy = self._copies.get(key)
        if copy is None and not where.include_shared:  # any copy of the user holds all its rows
            copy = next((c for (u, _), c in self._copies.items() if u == user), None)
            key = (user, copy.agent_id) if copy is not None else key
        return key, copy

    def _copy_for(self, where: RecordFilter) -> _Copy | None:
        """The user's copy, brought up to date, when it can answer ``where``."""
        with self._lock:
            found = self._lookup(where)
            if found is None:
                return None
            key, copy = found
            if copy is not None:
                self._copies.move_to_end(key)
            if len(self._loading) > 4 * len(self._copies) + 64:  # bounded: locks of evicted users go
                self._loading = {k: lk for k, lk in self._loading.items() if k in self._copies}
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            if copy is None:  # another thread may have loaded it while this one waited (loads_copy)
                with self._lock:
                    found = self._lookup(where)
                if found is None:
                    return None
                key, copy = found
            return self._refreshed(key, copy)

    def _refreshed(self, key: tuple[str, str | None], copy: _Copy | None) -> _Copy | None:
        if copy is not None:
            with copy.lock:
                current = self._catch_up(copy)
            if current:
                return copy if self._bound(key, copy) else None
        return self._load(key)

    def _catch_up(self, copy: _Copy) -> bool:
        """Fetch what other processes logged since the copy's positions; False: rebuild."""
        if not copy.loaded:
            return False
        view = current_view()
        if view is not None and copy.view is view:
            return True  # once per operation
        changed: dict[str, int] = {}
        logged: list[str] = []
        asks = [(log_key, position, generation) for log_key, (generation, position) in copy.positions.items()]
        replies = log_changes(self._state, asks)  # Redis: the user's and the shared log at once
        for (log_key, position, _), changes in zip(asks, replies):
            if changes.ids is None:
                return False
            if changes.counter != position:
                changed[log_key] = changes.counter
                logged += changes.ids
        now = time.monotonic()
        due = [i for i, until in copy.settling.items() if until <= now]
        ids = [*copy.refetch, *due, *logged]
        if ids:
            where = RecordFilter(ids=tuple(dict.fromkeys(ids)), include_superseded=True, include_archived=True)
            records, vectors = self.inner.scan_vectors(where)
            copy.fetches += 1
            copy.put(records, unit_rows(np.asarray(vectors, dtype=np.float32)))
            for i in due:
                del copy.settling[i]
            if self._staleness:
                # This read may predate another client's write (as any read of the
                # server within its bound may): read it once more after the bound.
                for i in logged:
                    copy.settling.setdefault(i, now + self._staleness)
            if len(records) < len(where.ids or ()):
                # A logged row not readable yet (a server's consistency window):
                # keep the positions, so the next read fetches it again.
                return True
            copy.refetch.clear()
        for log_key, counter in changed.items():
            copy.positions[log_key] = (copy.positions[log_key][0], counter)
        copy.view = view
        return True

    def _load(self, key: tuple[str, str | None]) -> _Copy | None:
        user, agent = key
        if not self._dimension:  # not opened yet
            return None
        copy = _Copy(user, agent, Partition(self._dimension), {})
        with copy.lock:
            # Registered (and locked) before the scan: an own write that the scan
            # misses lands here once it is done, instead of in no copy at all.
            with self._lock:
                self._copies[key] = copy
                self._copies.move_to_end(key)
            try:
                # Log positions first: a write logged after them is fetched by the next catch-up.
                for log_key in (user, SHARED_LOG):
                    changes = self._state.keyword_changes(log_key, after=0, generation=-1)
                    copy.positions[log_key] = (changes.generation, changes.counter)
                    if self._staleness:  # the scan may lag the last writes before them: read those again
                        recent = self._state.keyword_changes(
                            log_key, after=max(0, changes.counter - RECENT), generation=changes.generation
                        )
                        until = time.monotonic() + self._staleness
                        copy.settling.update(dict.fromkeys(recent.ids or (), until))
                where = RecordFilter(
                    user_id=user,
                    agent_id=agent,
                    include_shared=True,
                    kinds=COPIED_KINDS,
                    include_superseded=True,
                    include_archived=True,
                )
                records, vectors = self.inner.scan_vectors(where)
            except BaseException:
                self._unregister(key, copy)
                raise
            copy.fetches += 1
            copy.put(records, unit_rows(np.asarray(vectors, dtype=np.float32)))
            copy.loaded = True
            copy.view = current_view()  # as caught up in this operation as a catch-up would make it
        return copy if self._bound(key, copy) else None

    # --- bookkeeping ------------------------------------------------------------------------
    def drop_copies(self, user_id: str | None = None) -> None:
        """Forget the local copies (one user's, or all); they are rebuilt on next use."""
        with self._lock:
            for key in [k for k in self._copies if user_id is None or k[0] == user_id]:
                del self._copies[key]
            if user_id is None:
                self._too_big.clear()
            else:
                self._too_big.pop(user_id, None)

    @property
    def copied_docs(self) -> int:
        with self._lock:
            return sum(len(c.part) for c in self._copies.values())

    def _items(self) -> list[tuple[tuple[str, str | None], _Copy]]:
        with self._lock:
            return list(self._copies.items())

    def _all_copies(self) -> list[_Copy]:
        return [c for _, c in self._items()]

    def _bound(self, key: tuple[str, str | None], copy: _Copy, *, evict: bool = True) -> bool:
        """Keep the copies within ``max_docs``; False when this one is too big to keep."""
        with self._lock:
            if len(copy.part) > self.max_docs // 2:
                if self._copies.get(key) is copy:
                    del self._copies[key]
                self._too_big[key[0]] = None
                while len(self._too_big) > 10_000:
                    self._too_big.popitem(last=False)
                return False
            if evict:
                self._evict(keep=key)
            return True

    def _unregister(self, key: tuple[str, str | None], copy: _Copy) -> None:
        with self._lock:
            if self._copies.get(key) is copy:
                del self._copies[key]

    def _evict(self, *, keep: tuple[str, str | None] | None) -> None:
        total = sum(len(c.part) for c in self._copies.values())
        for key in list(self._copies):
            if total <= self.max_docs:
                break
            if key != keep:
                total -= len(self._copies.pop(key).part)
