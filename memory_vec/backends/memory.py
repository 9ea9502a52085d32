"""In-process backend: numpy matrices partitioned per user.

No server, no extra. A query at user scope touches only that user's
partition (plus the shared partition when asked), so cost grows with the
user's memories, not with the whole store. Data lives as long as the
process; the working state is in memory too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from memory_vec._model.errors import EmbeddingModelMismatchError, InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec.backends.base import (
    EVERY_RECORD,
    BaseBackend,
    PurgeReport,
    RecordFilter,
    ScoredRecord,
    check_dimension,
    checked_vectors,
    oldest_first,
    stacked,
    unit_rows,
)

__all__ = ["InMemoryBackend"]

_SHARED = "\x00shared"  # partition of agent/global records; not a valid user id


def _copy(record: MemoryRecord) -> MemoryRecord:
    """A copy the caller may change without changing the stored record."""
    return record.copy(metadata=dict(record.metadata))


class Partition:
    def __init__(self, dimension: int) -> None:
        self.vectors = np.zeros((16, dimension), dtype=np.float32)
        self.records: list[MemoryRecord] = []
        self.row: dict[str, int] = {}
        # Columns for vectorized filtering of the common conditions.
        self.session: list[str] = []

    def __len__(self) -> int:
        return len(self.records)

    def put(self, record: MemoryRecord, vector: np.ndarray | None) -> None:
        i = self.row.get(record.id)
        if i is None:
            if vector is None:
                return
            i = len(self.records)
            if i == self.vectors.shape[0]:
                self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
            self.records.append(record)
            self.session.append(record.session_id)
            self.row[record.id] = i
        else:
            self.records[i] = record
            self.session[i] = record.session_id
        if vector is not None:
            self.vectors[i] = vector

    def remove(self, record_id: str) -> bool:
        i = self.row.pop(record_id, None)
        if i is None:
            return False
        last = len(self.records) - 1
        if i != last:  # swap-remove keeps the matrix dense
            moved = self.records[last]
            self.records[i] = moved
            self.session[i] = self.session[last]
            self.vectors[i] = self.vectors[last]
            self.row[moved.id] = i
        self.records.pop()
        self.session.pop()
        return True


class InMemoryBackend(BaseBackend):
    """Vectors and records in process memory, partitioned per user.

    Example:
        >>> b = InMemoryBackend()
        >>> b.open(dimension=3, model_id="demo")
        >>> b.count()
        0
    """

    name = "memory"
    vector_reads = True
    resettable = True

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._parts: dict[str, Partition] = {}
        self._owner: dict[str, str] = {}  # record id -> partition key
        self._dimension: int | None = None
        self._model_id: str | None = None

    # --- lifecycle ---------------------------------------------------------------
    def open(self, *, dimension: int, model_id: str) -> None:
        with self._lock:
            if self._model_id is not None and (self._model_id, self._dimension) != (model_id, dimension):
                raise EmbeddingModelMismatchError(
                    f"This in-process store holds vectors of {self._model_id!r} (dimension "
                    f"{self._dimension}); it was opened with {model_id!r} (dimension {dimension}). "
                    "Use another collection name or call reembed()."
                )
            self._dimension, self._model_id = dimension, model_id

    def close(self) -> None:
        """Nothing to release; the data stays for other cores in this process."""

    def purge(self) -> PurgeReport:
        """Free what deleted records left in memory: emptied partitions, and the
        vectors of removed rows past each partition's end. Nothing is on disk."""
        with self._lock:
            for key in [k for k, part in self._parts.items() if not len(part)]:
                del self._parts[key]
            for part in self._parts.values():
                part.vectors[len(part) :] = 0.0
        return PurgeReport(True, 0, ("memory: in process memory only, no files",))

    def drop(self) -> None:
        with self._lock:
            self._parts.clear()
            self._owner.clear()
            self._model_id = self._dimension = None

    def reset(self, *, dimension: int, model_id: str) -> None:
        """Delete every record and accept another embedder (used by ``reembed``)."""
        with self._lock:
            self.drop()
            self.open(dimension=dimension, model_id=model_id)

    @property
    def model_id(self) -> str | None:
        return self._model_id

    # --- writes --------------------------------------------------------------------
    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        if not len(records) and not len(vectors):
            return
        vectors = unit_rows(checked_vectors(records, vectors))
        with self._lock:
            if self._dimension is None:
                raise InvalidInputError("open() the backend before writing")
            check_dimension(vectors.shape[1], self._dimension, self._model_id)
            for record, vector in zip(records, vectors):
                self._put(_copy(record), vector)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        with self._lock:
            for record in records:
                if record.id in self._owner:
                    self._put(_copy(record), None)

    def _put(self, record: MemoryRecord, vector: np.ndarray | None) -> None:
        key = _SHARED if record.visibility != "private" else record.user_id
        old_key = self._owner.get(record.id)
        if old_key is not None and old_key != key:  # moved between partitions
            old = self._parts[old_key]
            if vector is None:
                vector = old.vectors[old.row[record.id]].copy()
            old.remove(record.id)
        part = self._parts.get(key)
        if part is None:
            assert self._dimension is not None
            part = self._parts[key] = Partition(self._dimension)
        part.put(record, vector)
        self._owner[record.id] = key

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        with self._lock:
            doomed = [r.id for r in self._iter(where, ids)]
            for record_id in doomed:
                self._parts[self._owner.pop(record_id)].remove(record_id)
            return len(doomed)

    # --- reads ----------------------------------------------------------------------
    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        q = unit_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        with self._lock:
            if where.ids is not None:  # scoring known ids: no scan of the partition
                return self._score_ids(q, where)[:k]
            hits: list[ScoredRecord] = []
            for part in self._partitions_for(where):
                n = len(part)
                if n == 0:
                    continue
                sims = part.vectors[:n] @ q
                if where.session_id is not None and part is not self._parts.get(_SHARED):
                    mask = np.fromiter((s == where.session_id for s in part.session), bool, n)
                    sims = np.where(mask, sims, -np.inf)
                order = np.argsort(-sims, kind="stable")
                taken = 0
                for i in order:
                    if not np.isfinite(sims[i]):
                        break
                    record = part.records[i]
                    if where.matches(record):
                        hits.append(ScoredRecord(_copy(record), float(sims[i])))
                        taken += 1
                        if taken >= k:
                            break
            hits.sort(key=lambda h: -h.similarity)
            return hits[:k]

    def _places(self, ids: Sequence[str]) -> list[tuple[Partition, int]]:
        """(partition, row) of each stored id among ``ids``, once each, in order."""
        return [
            (self._parts[key], self._parts[key].row[i])
            for i in dict.fromkeys(ids)
            if (key := self._owner.get(i)) is not None
        ]

    def _score_ids(self, q: np.ndarray, where: RecordFilter) -> list[ScoredRecord]:
        hits = [
            ScoredRecord(_copy(part.records[row]), float(part.vectors[row] @ q))
            for part, row in self._places(where.ids or ())
            if where.matches(part.records[row])
        ]
        hits.sort(key=lambda h: -h.similarity)
        return hits

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        with self._lock:
            return [_copy(r) for r in self._iter(where or EVERY_RECORD, ids)]

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        with self._lock:
            out = [_copy(r) for r in self._iter(where, None)]
        return oldest_first(out, limit)

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        """Every record matching ``where`` with its (unit) vector, rows aligned."""
        with self._lock:
            records, rows = [], []
            if where.ids is not None:
                places = self._places(where.ids)
            else:
                places = [(part, i) for part in self._partitions_for(where) for i in range(len(part))]
            for part, i in places:
                record = part.records[i]
                if where.matches(record):
                    records.append(_copy(record))
                    rows.append(part.vectors[i].copy())
            dimension = self._dimension
        return records, stacked(rows, dimension)

    def count(self, where: RecordFilter | None = None) -> int:
        with self._lock:
            if where is None:
                return len(self._owner)
            return sum(1 for _ in self._iter(where, None))

    def _partitions_for(self, where: RecordFilter | None) -> list[Partition]:
        if where is None or where.user_id is None:
            return list(self._parts.values())
        # Shared records still belong to their writer, so a user-scoped read
        # without include_shared must look at the shared partition too.
        keys = [where.user_id, _SHARED]
        return [self._parts[k] for k in keys if k in self._parts]

    def _iter(self, where: RecordFilter | None, ids: Sequence[str] | None):  # type: ignore[no-untyped-def]
        if ids is not None:
            for part, row in self._places(ids):
                if where is None or where.matches(part.records[row]):
                    yield part.records[row]
            return
        where = where or EVERY_RECORD
        for part in self._partitions_for(where):
            yield from [r for r in part.records if where.matches(r)]
