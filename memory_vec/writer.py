"""Record writes with a pending buffer: durable by default, background opt-in.

Synchronous mode (default): ``write`` upserts before returning, so a
returned ``WriteResult`` is durable. If the backend is down, the records
stay in the pending buffer, the result says ``pending=True``, and every
later call (and ``flush()``) retries them: nothing is silently dropped.

Background mode (``background_writes=True``): ``write`` only queues; a
thread upserts in batches every ``flush_interval`` seconds or
``write_batch_size`` records. A write is acknowledged when ``flush()`` or
``close()`` returns; a crash before that can lose only those
unacknowledged records. Reads and conflict checks see pending records.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import numpy as np

from .backends.base import Backend, RecordFilter, ScoredRecord
from .errors import BackendError
from .records import MemoryRecord

__all__ = ["RecordWriter"]

log = logging.getLogger("memory_vec.writer")


class RecordWriter:
    def __init__(
        self,
        backend: Backend,
        *,
        background: bool = False,
        batch_size: int = 64,
        flush_interval: float = 0.5,
    ) -> None:
        self.backend = backend
        self.background = background
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._pending: dict[str, tuple[MemoryRecord, np.ndarray | None]] = {}
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.last_error: BaseException | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="memory-vec-writer", daemon=True)
            self._thread.start()

    # --- writes ---------------------------------------------------------------------
    def write(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> bool:
        """Store records; True when they are durable now, False when pending."""
        with self._lock:
            for record, vector in zip(records, vectors):
                self._pending[record.id] = (record, np.asarray(vector, dtype=np.float32))
        if self.background:
            if len(self._pending) >= self.batch_size:
                self._wake.set()
            return False
        return self._try_flush()

    def update(self, records: Sequence[MemoryRecord]) -> bool:
        """Change fields of stored records (vectors unchanged)."""
        with self._lock:
            direct = []
            for record in records:
                held = self._pending.get(record.id)
                if held is not None and held[1] is not None:
                    self._pending[record.id] = (record, held[1])  # still unwritten: patch in place
                else:
                    direct.append(record)
            for record in direct:
                self._pending[record.id] = (record, None)
        if self.background:
            return False
        return self._try_flush()

    def forget(self, ids: Sequence[str]) -> None:
        with self._lock:
            for record_id in ids:
                self._pending.pop(record_id, None)

    def forget_where(self, where: RecordFilter) -> int:
        with self._lock:
            doomed = [rid for rid, (r, _) in self._pending.items() if where.matches(r)]
            for rid in doomed:
                del self._pending[rid]
            return len(doomed)

    @property
    def pending_count(self) -> int:
        with self._lock:
            return len(self._pending)

    def _try_flush(self) -> bool:
        try:
            self.flush()
            return True
        except BackendError as exc:
            self.last_error = exc
            log.warning("memory-vec: backend write failed, %d records pending: %s", self.pending_count, exc)
            return False

    def flush(self) -> None:
        """Write every pending record; raises if the backend still fails."""
        with self._flush_lock:
            while True:
                with self._lock:
                    batch = list(self._pending.items())[: self.batch_size]
                if not batch:
                    return
                inserts = [(r, v) for _, (r, v) in batch if v is not None]
                updates = [r for _, (r, v) in batch if v is None]
                self._store(inserts, updates)
                with self._lock:
                    for rid, held in batch:
                        if self._pending.get(rid) is held:  # unchanged while we wrote
                            del self._pending[rid]
                self.last_error = None

    def _store(self, inserts: list[tuple[MemoryRecord, np.ndarray]], updates: list[MemoryRecord]) -> None:
        # Retries with backoff belong to the backend guard (GuardedBackend);
        # retrying here too would multiply the attempts.
        if inserts:
            self.backend.upsert([r for r, _ in inserts], np.stack([v for _, v in inserts]))
        if updates:
            self.backend.update(updates)

    # --- reads see pending records ------------------------------------------------------
    def pending_matches(self, vector: np.ndarray, where: RecordFilter) -> list[ScoredRecord]:
        with self._lock:
            held = [(r, v) for r, v in self._pending.values() if v is not None and where.matches(r)]
        if not held:
            return []
        sims = np.stack([v for _, v in held]) @ np.asarray(vector, dtype=np.float32)
        return [ScoredRecord(r, float(s)) for (r, _), s in zip(held, sims)]

    def pending_records(self, where: RecordFilter) -> list[MemoryRecord]:
        with self._lock:
            return [r for r, _ in self._pending.values() if where.matches(r)]

    def overlay(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """Replace stored versions by pending newer ones (e.g. a supersede)."""
        with self._lock:
            return [self._pending[r.id][0] if r.id in self._pending else r for r in records]

    # --- background thread ------------------------------------------------------------
    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            self._try_flush()

    def close(self) -> None:
        """Flush (acknowledging pending writes) and stop the thread."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.flush()
