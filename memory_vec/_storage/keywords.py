"""The keyword (BM25) leg of recall, correct across processes and bounded.

One :class:`KeywordIndex` per :class:`~memory_vec._storage.store.Store`. It keeps an
in-process :class:`~memory_vec._rules.bm25.BM25Index` per user and keeps it
true when *other* processes write, without rebuilding: the shared working-
state store holds a per-user keyword log (a write counter, the ids written,
and a generation bumped on deletions). Before a user's index is used, one
cheap read of that log says what changed since this copy's position; only
those records are fetched from the backend. A changed generation (something
was deleted) or a log trimmed past our position means a rebuild.

Within one operation (``one_read_view``: a turn's write, a recall) that log
is read once per user, at the first use, not before every read: the
operation's reads go to the engine, and what other processes write while it
runs is concurrent with it either way. With the state in
Redis each read is a round trip, and a turn made a dozen; a reader of a log
the operation read already takes its answer from that reply (``log_changes``).

Memory is bounded: an LRU over users, capped by users and by indexed
memories in total. Dropping a user's index loses nothing; it is rebuilt from
the backend on next use.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from memory_vec._model.records import MemoryRecord
from memory_vec._rules.bm25 import BM25Index, IndexedDoc
from memory_vec.backends.base import Backend, RecordFilter
from memory_vec.state.base import KeywordChanges, StateStore

__all__ = [
    "INDEXED_KINDS",
    "KeywordIndex",
    "log_changes",
    "one_read_view",
]

#: Kinds the keyword index (and recall) covers.
INDEXED_KINDS = ("message", "fact")


class _ReadView:
    """One operation's reads of the keyword logs: the last reply per log, with the position it was asked from."""

    __slots__ = ("replies",)

    def __init__(self) -> None:
        self.replies: dict[str, tuple[int, KeywordChanges]] = {}

    def known(self, key: str, after: int, generation: int, own: _OwnAppends) -> KeywordChanges | None:
        """The changes after ``after``, cut from a reply read from an earlier position (None: not known)."""
        seen = self.replies.get(key)
        if seen is None:
            return None
        asked_after, reply = seen
        if reply.ids is None or reply.generation != generation or after < asked_after:
            return None
        if after > reply.counter:  # a reader past the reply, by this process's appends since: nothing new
            return KeywordChanges(generation, after, ()) if own.only_own(key, reply.counter, after) else None
        # A reply lists every id after its position (counter - after of them): any later position's are its tail.
        return KeywordChanges(generation, reply.counter, reply.ids[after - asked_after :])


class _OwnAppends:
    """This process's recent appends to the keyword logs of one state store (log counters are
    never reused). A reply read before them (earlier in the same operation) answers a reader
    that has applied them since."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ends: OrderedDict[str, dict[int, int]] = OrderedDict()  # log key -> {counter after: ids}

    def add(self, key: str, counter: int, count: int) -> None:
        with self._lock:
            ends = self._ends.setdefault(key, {})
            self._ends.move_to_end(key)
            ends[counter] = count
            if len(ends) > 32:  # bounded: the oldest append of the key goes
                del ends[next(iter(ends))]
            while len(self._ends) > 4096:
                self._ends.popitem(last=False)

    def only_own(self, key: str, start: int, end: int) -> bool:
        """Whether the log entries after ``start`` up to ``end`` are all this process's appends."""
        with self._lock:
            ends = self._ends.get(key, {})
            while end > start and ends.get(end, 0) > 0:
                end -= ends[end]
        return end == start


_own: weakref.WeakKeyDictionary[Any, _OwnAppends] = weakref.WeakKeyDictionary()
_own_lock = threading.Lock()


def _own_appends(state: StateStore) -> _OwnAppends:
    with _own_lock:
        own = _own.get(state)
        if own is None:
            own = _own[state] = _OwnAppends()
        return own


_view: ContextVar[_ReadView | None] = ContextVar("memory_vec_read_view", default=None)


def log_changes(state: StateStore, asks: Sequence[tuple[str, int, int]]) -> list[KeywordChanges]:
    """``keyword_changes`` of several ``(log key, after, generation)``: one call for those the
    operation has not read yet (Redis: one round trip), the rest cut from its earlier replies."""
    view = _view.get()
    own = _own_appends(state)
    found = [view.known(*ask, own) if view is not None else None for ask in asks]
    unknown = [ask for ask, changes in zip(asks, found) if changes is None]
    many = getattr(state, "keyword_changes_many", None)  # Redis: several logs in one script call
    replies = iter(
        ()
        if not unknown
        else many(unknown)
        if callable(many)
        else [state.keyword_changes(key, after=after, generation=generation) for key, after, generation in unknown]
    )
    out: list[KeywordChanges] = []
    for (key, after, _), known in zip(asks, found):
        if known is not None:
            out.append(known)
            continue
        reply = next(replies)
        if view is not None:
            view.replies[key] = (after, reply)
        out.append(reply)
    return out


@contextlib.contextmanager
def one_read_view() -> Iterator[None]:
    """Around one operation: the log is read once per user in it (module doc). Nests."""
    if _view.get() is not None:
        yield
        return
    token = _view.set(_ReadView())
    try:
        yield
    finally:
        _view.reset(token)


@dataclass
class _Entry:
    index: BM25Index
    generation: int
    counter: int  # position in the shared keyword log this copy has caught up to
    view: object | None = None  # the operation it last caught up in


class KeywordIndex:
    """Per-user BM25 indexes of one store, refreshed incrementally.

    Args:
        backend: where the records live (rebuilds and fetches of new ids).
        state: the store's working-state store, which holds the keyword log
            (SQLite or Redis make it shared between processes).
        max_users, max_docs: LRU bounds.
    """

    def __init__(self, backend: Backend, state: StateStore, *, max_users: int = 1000, max_docs: int = 200_000) -> None:
        self._backend = backend
        self._state = state
        self.max_users = max_users
        self.max_docs = max_docs
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._user_locks: dict[str, threading.Lock] = {}

    # --- reads ----------------------------------------------------------------------
    def for_user(self, user_id: str) -> BM25Index:
        """The user's index, brought up to date with every process's writes."""
        with self._user_lock(user_id):
            with self._lock:
                entry = self._entries.get(user_id)
                if entry is not None:
                    self._entries.move_to_end(user_id)
            view = _view.get()
            if entry is None:
                entry = self._rebuild(user_id)
            elif view is not None and entry.view is view:
                pass  # caught up earlier in this operation
            else:
                [changes] = log_changes(self._state, [(user_id, entry.counter, entry.generation)])
                if changes.ids is None:
                    entry = self._rebuild(user_id)
                elif changes.counter != entry.counter:
                    missing = sorted({i for i in changes.ids if i not in entry.index})
                    found: list[MemoryRecord] = []
                    if missing:
                        where = RecordFilter(user_id=user_id, kinds=INDEXED_KINDS, include_superseded=True)
                        found = self._backend.get(missing, where=where)
                        entry.index.add(IndexedDoc.from_record(r) for r in found)
                    # A logged id not readable yet (a server's consistency
                    # window) keeps our position, so the next use fetches it.
                    if len(found) == len(missing):
                        entry.counter = changes.counter
                if entry.counter == changes.counter:
                    entry.view = view
            self._evict(keep=user_id)
            return entry.index

    def _rebuild(self, user_id: str) -> _Entry:
        # Read the log position first: a write logged after it is fetched by
        # the next refresh (or skipped there if the scan already saw it).
        changes = self._state.keyword_changes(user_id, after=0, generation=-1)
        index = BM25Index()
        where = RecordFilter(user_id=user_id, kinds=INDEXED_KINDS, include_superseded=True)
        index.add(IndexedDoc.from_record(r) for r in self._backend.scan(where))
        entry = _Entry(index, changes.generation, changes.counter)
        with self._lock:
            self._entries[user_id] = entry
            self._entries.move_to_end(user_id)
        return entry

    def _evict(self, *, keep: str) -> None:
        with self._lock:
            total = sum(len(e.index) for e in self._entries.values())
            for user in list(self._entries):
                if len(self._entries) <= self.max_users and total <= self.max_docs:
                    break
                if user == keep:
                    continue
                total -= len(self._entries.pop(user).index)

    def _user_lock(self, user_id: str) -> threading.Lock:
        with self._lock:
            lock = self._user_locks.get(user_id)
            if lock is None:
                if len(self._user_locks) > 4 * self.max_users:  # bounded: locks of evicted users go
                    self._user_locks = {u: lk for u, lk in self._user_locks.items() if u in self._entries}
                lock = self._user_locks[user_id] = threading.Lock()
            return lock

    # --- writes ---------------------------------------------------------------------
    def added(self, user_id: str, records: Sequence[MemoryRecord]) -> None:
        """New records of this process: index them now if the user's index is
        loaded (reads see them at once, before they are even stored)."""
        docs = [IndexedDoc.from_record(r) for r in records if r.kind in INDEXED_KINDS]
        with self._lock:
            entry = self._entries.get(user_id)
        if entry is not None and docs:
            entry.index.add(docs)

    def stored(self, records: Sequence[MemoryRecord]) -> list[tuple[str, int, int]]:
        """Records now durable in the backend: tell other processes (the log).
        Returns (log key, counter after, ids appended) per append."""
        by_key: dict[str, list[str]] = {}
        for r in records:
            if r.kind in INDEXED_KINDS:
                by_key.setdefault(r.user_id, []).append(r.id)
        logged = [(key, self._state.log_writes(key, ids), len(ids)) for key, ids in by_key.items()]
        own = _own_appends(self._state)
        for key, counter, count in logged:
            own.add(key, counter, count)
            self._caught_up(key, counter, count, by_key[key])
        return logged

    def _caught_up(self, user_id: str, counter: int, count: int, ids: Sequence[str]) -> None:
        # This process's ids, indexed when added: a copy right before them need not read them back.
        with self._lock:
            entry = self._entries.get(user_id)
            if entry is not None and entry.counter == counter - count and all(i in entry.index for i in ids):
                entry.counter = counter

    def deleted(self, user_id: str) -> None:
        """Something of the user was deleted: every process rebuilds it."""
        self._state.reset_keywords(user_id)
        self.drop(user_id)

    def drop(self, user_id: str | None = None) -> None:
        """Forget the in-process copy (one user, or all)."""
        with self._lock:
            if user_id is None:
                self._entries.clear()
            else:
                self._entries.pop(user_id, None)

    @property
    def indexed_docs(self) -> int:
        with self._lock:
            return sum(len(e.index) for e in self._entries.values())

    @property
    def users(self) -> int:
        with self._lock:
            return len(self._entries)
