"""The keyword (BM25) leg of recall: a per-user index rebuilt from the engine's rows,
trusted only while the user's keyword version in the working state is unchanged
(docs/architecture.md, "One keyword mechanism").

The writer swaps in a fresh random token after every change of a user's rows
(:meth:`KeywordIndex.changed`); a reader reads the token before it scans. A
token is never reused, so a copy is either current or rebuilt. When the token
a swap replaced is this copy's, nobody else changed the user's rows in
between, and the process patches its copy instead of rebuilding it.

Memory is bounded (an LRU capped by users and by indexed memories in total);
a dropped index is rebuilt from the engine on next use.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory_vec._model.queries import RecordFilter
from memory_vec._model.records import MemoryRecord
from memory_vec._rules.bm25 import BM25Index, IndexedDoc
from memory_vec.backends.base import Backend
from memory_vec.state.base import StateStore

__all__ = ["INDEXED_KINDS", "KeywordIndex"]

#: Kinds the keyword index (and recall) covers.
INDEXED_KINDS = ("message", "fact")


@dataclass
class _Entry:
    index: BM25Index
    version: str | None  # the user's keyword version read before the scan this copy was built from


class KeywordIndex:
    """Per-user BM25 indexes of one store (module doc).

    Args:
        backend: where the records live (rebuilds scan it).
        state: the store's working state, which holds each user's keyword version.
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

    def for_user(self, user_id: str) -> BM25Index:
        """The user's index, as current as the engine's rows were when its version was read."""
        with self._user_lock(user_id):
            version = self._state.keyword_version(user_id)
            with self._lock:
                entry = self._entries.get(user_id)
                if entry is not None:
                    self._entries.move_to_end(user_id)
            if entry is None or version is None or entry.version != version:
                # The version is read before the scan: a write after it changes the version. A user
                # without one (none written since 0.1, or since a forget) is scanned every time.
                index = BM25Index()
                index.add(IndexedDoc.from_record(r) for r in self._backend.scan(_indexed(user_id)))
                entry = _Entry(index, version)
                with self._lock:
                    self._entries[user_id] = entry
            self._evict(keep=user_id)
            return entry.index

    def changed(self, user_id: str, written: Sequence[MemoryRecord] = (), removed: Iterable[str] | None = ()) -> None:
        """After the engine wrote ``written`` and deleted ``removed`` (None: rows not
        known by id) of the user's rows, whether or not the engine call succeeded: a
        new keyword version, so every other process rebuilds the user's index."""
        with self._user_lock(user_id):
            version = secrets.token_hex(16)
            replaced = self._state.new_keyword_version(user_id, version)
            with self._lock:
                entry = self._entries.get(user_id)
            if entry is None or removed is None or replaced is None or entry.version != replaced:
                self.drop(user_id)  # someone else changed the rows meanwhile: rebuilt on next use
                return
            # The copy a rebuild would scan now: what the filter no longer takes (archived) goes.
            where = _indexed(user_id)
            entry.index.remove([*removed, *(r.id for r in written if not where.matches(r))])
            entry.index.add(IndexedDoc.from_record(r) for r in written if where.matches(r))
            entry.version = version

    def drop(self, user_id: str | None = None) -> None:
        """Forget the in-process copy (one user, or all)."""
        with self._lock:
            if user_id is None:
                self._entries.clear()
            else:
                self._entries.pop(user_id, None)

    @property
    def users(self) -> int:
        with self._lock:
            return len(self._entries)

    def _evict(self, *, keep: str) -> None:
        with self._lock:
            total = sum(len(e.index) for e in self._entries.values())
            for user in list(self._entries):
                if len(self._entries) <= self.max_users and total <= self.max_docs:
                    break
                if user != keep:
                    total -= len(self._entries.pop(user).index)

    def _user_lock(self, user_id: str) -> threading.Lock:
        with self._lock:
            lock = self._user_locks.get(user_id)
            if lock is None:
                if len(self._user_locks) > 4 * self.max_users:  # bounded: locks of evicted users go
                    self._user_locks = {u: lk for u, lk in self._user_locks.items() if u in self._entries}
                lock = self._user_locks[user_id] = threading.Lock()
            return lock


def _indexed(user_id: str) -> RecordFilter:
    """The rows of the user an index holds (history included: superseded rows stay findable)."""
    return RecordFilter(user_id=user_id, kinds=INDEXED_KINDS, include_superseded=True)
