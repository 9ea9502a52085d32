"""Reads as this process sees them while a background writer holds rows.

:class:`PendingReads` is the read half of :class:`~memory_vec._storage.writer.RecordWriter`:
a queued row is read with the stored ones, and its queued version wins over
a stored older one (a supersede queued, not written yet).

The writer's thread may store a row *while* a read runs, then drop it from
the queue. So every read here takes its look at the queue first: a row
stored during the read is then in the backend's answer or in that look,
never in neither, and one the backend may have answered in the version
before is read again.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import numpy as np

from memory_vec._model.records import MemoryRecord
from memory_vec.backends.base import Backend, RecordFilter, ScoredRecord

__all__ = ["Held", "PendingReads"]

Held = tuple[MemoryRecord, "np.ndarray | None"]


class PendingReads:
    backend: Backend
    _lock: threading.RLock
    _pending: dict[str, Held]

    def pending_of(self, user_id: str) -> list[MemoryRecord]:
        with self._lock:
            return [r for r, _ in self._pending.values() if r.user_id == user_id]

    def pending_matches(self, vector: np.ndarray, where: RecordFilter) -> list[ScoredRecord]:
        with self._lock:
            held = [(r, v) for r, v in self._pending.values() if v is not None and where.matches(r)]
        if not held:
            return []
        sims = np.stack([v for _, v in held]) @ np.asarray(vector, dtype=np.float32)
        return [ScoredRecord(r, float(s)) for (r, _), s in zip(held, sims)]

    def pending_records(self, where: RecordFilter) -> list[MemoryRecord]:
        """Copies: a caller changing one (a supersede) queues it again, never edits the queue."""
        with self._lock:
            return [r.copy() for r, _ in self._pending.values() if where.matches(r)]

    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        """``backend.query`` as this process sees it: matching queued rows
        scored too (beyond ``k``), current versions, ``where`` applied to them."""
        with self._lock:
            since = frozenset(self._pending)
            held = self.pending_matches(vector, where)
        found = {h.record.id: h for h in self.backend.query(vector, k=k, where=where)}
        found.update((h.record.id, h) for h in held)
        current = self.overlay([h.record for h in found.values()], since=since)
        return [ScoredRecord(r, found[r.id].similarity) for r in current if where.matches(r)]

    def get(self, ids: Sequence[str], where: RecordFilter | None = None) -> list[MemoryRecord]:
        """``backend.get`` as this process sees it: queued versions win and
        queued records not stored yet are included."""
        ids = list(ids)
        held_where = dataclasses.replace(
            where or RecordFilter(include_superseded=True, include_archived=True), ids=tuple(ids)
        )
        with self._lock:
            since = frozenset(self._pending)
            held = self.pending_records(held_where)
        stored = self.backend.get(ids) if where is None else self.backend.get(ids, where=where)
        return self._merged(stored, held, since, where)

    def scan(self, where: RecordFilter) -> list[MemoryRecord]:
        """``backend.scan`` as this process sees it (see ``get``)."""
        with self._lock:
            since = frozenset(self._pending)
            held = self.pending_records(where)
        return self._merged(self.backend.scan(where), held, since, where)

    def _merged(
        self, stored: list[MemoryRecord], held: list[MemoryRecord], since: frozenset[str], where: RecordFilter | None
    ) -> list[MemoryRecord]:
        seen = {r.id for r in stored}
        merged = self.overlay([*stored, *(r for r in held if r.id not in seen)], since=since)
        # a queued version (e.g. superseded since) may not match any more
        return merged if where is None else [r for r in merged if where.matches(r)]

    def overlay(self, records: list[MemoryRecord], since: frozenset[str] = frozenset()) -> list[MemoryRecord]:
        """Replace stored versions by queued newer ones (e.g. a supersede).
        ``since``: ids queued when the read began; one that left the queue
        since then is read again (the read may have met the version before
        it), and left out if the backend has none (refused, or forgotten)."""
        with self._lock:
            out = [self._pending[r.id][0].copy() if r.id in self._pending else r for r in records]
            left = {r.id for r in out if r.id in since and r.id not in self._pending}
        if not left:
            return out
        fresh = {r.id: r for r in self.backend.get(sorted(left))}
        return [fresh[r.id] if r.id in left else r for r in out if r.id not in left or r.id in fresh]
