"""Read your own writes without waiting: this process's recent writes, merged into reads.

A Milvus server answers a ``"Session"`` read only once it has applied this
process's last write: ~290 ms after every write on a 2.3.5 server, so once
per turn (measured, benchmarks/RESULTS.md "Milvus server: reads that do not
wait"). A ``"Bounded"`` read is answered at once (~3 ms) from what the server
has applied, which may lack the last few hundred milliseconds of writes.

:class:`OwnWrites` keeps those writes (records, vectors, deletes) for
``window`` seconds, longer than the server's bound (``gracefulTime``, 5 s by
default), after which a Bounded read is guaranteed to see them, and merges
them into every read: a recent version replaces the server's, a recent
delete hides the server's row, and recent rows the server has not returned
are scored here. Writes of other processes become visible within the bound.
A write too big to remember (``max_rows``) is followed by one read that
waits for it instead.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from memory_vec._model.records import MemoryRecord
from memory_vec.backends.base import RecordFilter, ScoredRecord

__all__ = ["OwnWrites"]

V = TypeVar("V")


@dataclass(frozen=True)
class _Entry:
    record: MemoryRecord | None  # None: deleted here
    vector: np.ndarray | None
    at: float
    replaces: bool = False  # an update or delete of a row the server may hold in an older version


class OwnWrites:
    """Args:
    window: seconds a write is remembered (longer than the server's staleness bound).
    max_rows: most rows remembered; a bigger write waits for visibility instead (:meth:`fits`).
    clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, window: float, *, max_rows: int = 20_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = float(window)
        self.max_rows = max_rows
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # oldest first
        # Written rows by owner, so a user's read looks at the user's rows (and the shared
        # ones), not at every row of a bulk write still in the window (dicts: ordered).
        self._by_user: dict[str, dict[str, None]] = {}
        self._shared: dict[str, None] = {}
        self._deleted_where: list[tuple[RecordFilter, float]] = []
        self._overflowed = False  # rows left before the window ended: the next read must wait once
        self._lock = threading.Lock()

    # --- writes ---------------------------------------------------------------------
    def fits(self, rows: int) -> bool:
        return rows <= self.max_rows

    def take_overflow(self) -> bool:
        """True once after rows were forgotten early: the caller makes one read that waits for them."""
        with self._lock:
            overflowed, self._overflowed = self._overflowed, False
            return overflowed

    def wrote(self, records: Sequence[MemoryRecord], vectors: np.ndarray, *, replaces: bool = False) -> None:
        """Rows written (``replaces``: an update of rows the server already holds)."""
        with self._lock:
            now = self._prune()
            for record, vector in zip(records, vectors):
                held = self._entries.get(record.id)
                again = replaces or (held is not None and held.replaces)
                self._put(record.id, _Entry(record, np.asarray(vector, dtype=np.float32), now, again))

    def deleted(self, ids: Iterable[str], where: RecordFilter | None = None) -> None:
        """Rows deleted by id (and, when the delete had a filter, anything it matched)."""
        with self._lock:
            now = self._prune()
            for rid in ids:
                self._put(rid, _Entry(None, None, now, True))
            if where is not None:
                for rid, entry in list(self._entries.items()):
                    if entry.record is not None and where.matches(entry.record):
                        self._put(rid, _Entry(None, None, now, True))
                self._deleted_where.append((where, now))

    def vector_of(self, record_id: str) -> np.ndarray | None:
        with self._lock:
            held = self._entries.get(record_id)
            return None if held is None or held.record is None else held.vector

    def record_of(self, record_id: str) -> MemoryRecord | None:
        with self._lock:
            held = self._entries.get(record_id)
            return None if held is None else held.record

    def shadowing(self, where: RecordFilter) -> int:
        """Server rows this may hide from a read of ``where`` (a search asks for that many more):
        recent deletes, and updates the filter no longer matches."""
        with self._lock:
            self._prune()
            return sum(
                1 for e in self._entries.values() if e.replaces and (e.record is None or not where.matches(e.record))
            )

    def __len__(self) -> int:
        with self._lock:
            self._prune()
            return len(self._entries)

    # --- reads ----------------------------------------------------------------------
    def merge_hits(
        self, hits: Sequence[ScoredRecord], q: np.ndarray, k: int, where: RecordFilter
    ) -> list[ScoredRecord]:
        """The server's ``hits`` with recent versions, deletes and rows merged in; best ``k``."""
        with self._lock:
            if self._nothing_to_merge():
                return list(hits)
            out: dict[str, ScoredRecord] = {}
            for hit in hits:
                record = self._served(hit.record, where)
                if record is not None and self._vector(record.id) is None:
                    out[record.id] = ScoredRecord(record, hit.similarity)
            # Rows written here are scored with the vector written (the server may hold an older one).
            entries = (self._entries[rid] for rid in self._candidates(where))
            mine = [
                (e.record, e.vector)
                for e in entries
                if e.record is not None and e.vector is not None and where.matches(e.record)
            ]
        if mine:
            matrix = np.stack([v for _, v in mine])
            norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
            scores = (matrix @ q) / np.maximum(norms, 1e-12)
            for (record, _), score in zip(mine, scores):
                out[record.id] = ScoredRecord(record, float(score))
        return sorted(out.values(), key=lambda h: -h.similarity)[:k]

    def merge_records(
        self, records: Iterable[MemoryRecord], where: RecordFilter, ids: Sequence[str] | None
    ) -> list[MemoryRecord]:
        """The server's rows of a get (``ids``) or a scan (``ids`` None), recent writes merged in."""
        return [record for record, _ in self.merge_rows(((r, None) for r in records), where, ids)]

    def merge_rows(
        self, rows: Iterable[tuple[MemoryRecord, V]], where: RecordFilter, ids: Sequence[str] | None
    ) -> list[tuple[MemoryRecord, V | np.ndarray]]:
        """:meth:`merge_records` keeping what comes with each record (its vector): a row written
        here comes with the vector written (the server may hold an older one, or none yet)."""
        with self._lock:
            if self._nothing_to_merge():
                return list(rows)
            out: dict[str, tuple[MemoryRecord, V | np.ndarray]] = {}
            for stored, extra in rows:
                record = self._served(stored, where)
                if record is not None:
                    mine = self._vector(record.id)
                    out[record.id] = (record, extra if mine is None else mine)
            wanted = self._candidates(where) if ids is None else [i for i in ids if i in self._entries]
            for rid in wanted:
                entry = self._entries[rid]
                # (a written entry always has its vector; the check is for the type checker)
                if (
                    rid not in out
                    and entry.record is not None
                    and entry.vector is not None
                    and where.matches(entry.record)
                ):
                    out[rid] = (entry.record, entry.vector)
        return list(out.values())

    # --- inside the lock ------------------------------------------------------------
    def _vector(self, rid: str) -> np.ndarray | None:
        entry = self._entries.get(rid)
        return None if entry is None else entry.vector

    def _candidates(self, where: RecordFilter) -> list[str]:
        """Ids of the written rows that may match ``where`` (``matches`` decides)."""
        if where.ids is not None:
            return [rid for rid in dict.fromkeys(where.ids) if rid in self._entries]
        if where.user_id is None:
            return list(self._entries)
        own = self._by_user.get(where.user_id, {})
        shared = [rid for rid in self._shared if rid not in own] if where.include_shared else []
        return [*own, *shared]

    def _nothing_to_merge(self) -> bool:
        self._prune()
        return not self._entries and not self._deleted_where

    def _served(self, stored: MemoryRecord, where: RecordFilter) -> MemoryRecord | None:
        """The version of a row the server returned to serve for ``where`` (None: deleted here, or
        this process's latest version no longer matches)."""
        record = self._current(stored)
        return record if record is not None and where.matches(record) else None

    def _current(self, stored: MemoryRecord) -> MemoryRecord | None:
        """This process's latest version of a row the server returned (None: deleted here)."""
        entry = self._entries.get(stored.id)
        if entry is not None:
            return entry.record
        for where, _ in self._deleted_where:
            if where.matches(stored):  # deleted here, not written again since (it would have an entry)
                return None
        return stored

    def _put(self, rid: str, entry: _Entry) -> None:
        self._forget(rid)
        self._entries[rid] = entry
        if entry.record is not None:
            self._by_user.setdefault(entry.record.user_id, {})[rid] = None
            if entry.record.visibility != "private":
                self._shared[rid] = None
        while len(self._entries) > self.max_rows:
            self._forget(next(iter(self._entries)))
            self._overflowed = True

    def _forget(self, rid: str) -> None:
        entry = self._entries.pop(rid, None)
        if entry is None or entry.record is None:
            return
        own = self._by_user.get(entry.record.user_id)
        if own is not None:
            own.pop(rid, None)
            if not own:
                del self._by_user[entry.record.user_id]
        self._shared.pop(rid, None)

    def _prune(self) -> float:
        now = self._clock()
        horizon = now - self.window
        while self._entries:
            rid, oldest = next(iter(self._entries.items()))
            if oldest.at >= horizon:
                break
            self._forget(rid)
        self._deleted_where = [(w, at) for w, at in self._deleted_where if at >= horizon]
        return now
