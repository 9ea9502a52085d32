"""Record writes: validated first, stored inside the caller's call, and one
bad record never blocks anyone else's (docs/architecture.md, "Writes and
reads go to the engine").

``write`` and ``update`` reach the backend before they return. There is no
queue: an outage (:class:`~memory_vec._model.errors.BackendUnavailableError`)
is raised to the caller; a turn is in the working state before its write, so
``add_messages`` keeps it there and ``heal`` stores it later.

A batch the backend refuses for its data (not an outage) is retried record by
record; a record that fails alone goes to the dead-letter list in the state
store, the others are stored, and the caller gets
:class:`~memory_vec._model.errors.RecordRejectedError`.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping, Sequence

import numpy as np

from memory_vec._model import validate as v
from memory_vec._model.errors import BackendError, BackendUnavailableError, MemoryVecError, RecordRejectedError
from memory_vec._model.records import MemoryRecord
from memory_vec._storage.keywords import KeywordIndex
from memory_vec.backends.base import BaseBackend, RecordFilter, ScoredRecord
from memory_vec.state.base import DeadLetter, StateStore

__all__ = ["RecordChecks", "RecordWriter"]

log = logging.getLogger("memory_vec._storage.writer")

_CURRENT = RecordFilter(include_archived=True)  # any user's rows, superseded ones left out

_Held = tuple[MemoryRecord, "np.ndarray | None"]


class RecordChecks:
    """The validation hook every record of every write path passes before anything
    is written: the library's rules, the backend's hard limits, and (when given)
    one finite vector per record of the collection's dimension; a backend this
    process may not use refuses here."""

    def __init__(self, backend: BaseBackend) -> None:
        self._backend = backend
        self._dimension: int | None = None

    def opened(self, dimension: int) -> None:
        """The collection is open for vectors of ``dimension``."""
        self._dimension = dimension

    def __call__(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        self._backend.check_usable()
        for record in records:
            v.check_record(record, self._backend.limits)
        if vectors is not None:
            ids = [r.id for r in records]
            v.check_vectors(vectors, count=len(records), dimension=self._dimension, ids=ids)


class RecordWriter:
    """Args:
    backend: where records go.
    batch_size: records per backend call (bulk writes may ask for more per call).
    validate: the validation hook (a named error for a record the library or backend refuses).
    dead_letters: the state store that keeps refused records.
    keywords: the store's keyword index: told of every change of a user's rows.
    """

    def __init__(
        self,
        backend: BaseBackend,
        batch_size: int = 64,
        *,
        validate: RecordChecks | None = None,
        dead_letters: StateStore | None = None,
        keywords: KeywordIndex | None = None,
    ) -> None:
        self.backend = backend
        self.batch_size = batch_size
        self._validate = validate
        self._dead_letters = dead_letters
        self._keywords = keywords
        self._lock = threading.Lock()
        # Recall counts to add to stored rows: id -> (count, last recalled at).
        self._counts: dict[str, tuple[int, float]] = {}

    # --- writes ---------------------------------------------------------------------
    def write(
        self,
        records: Sequence[MemoryRecord],
        vectors: np.ndarray,
        *,
        batch_size: int | None = None,
        new: bool = False,
    ) -> bool:
        """Store records before returning (True). ``new``: fresh ids, so the backend's
        ``insert_new`` may skip looking for old rows. ``batch_size``: records per
        backend call (bulk writes: a round trip costs about the same for 64 rows as for 1,000).

        Raises:
            InvalidInputError: (a subclass) a record fails validation; nothing written.
            RecordRejectedError: the backend refused some of these records (the rest
                are stored; refused ones are dead letters).
            BackendUnavailableError: the backend is down; the batch in flight may be stored or not.
        """
        if self._validate is not None:
            self._validate(records, np.asarray(vectors))
        held: list[_Held] = [(r, np.asarray(v, dtype=np.float32)) for r, v in zip(records, vectors)]
        self._store_all(held, batch_size, new=new)
        return True

    def update(self, records: Sequence[MemoryRecord]) -> bool:
        """Change fields of stored records (vectors unchanged); raises as ``write``."""
        if self._validate is not None:
            self._validate(records, None)
        self._store_all([(r, None) for r in records], None, new=False)
        return True

    def _store_all(self, held: list[_Held], batch_size: int | None, *, new: bool) -> None:
        size = max(1, batch_size or self.batch_size)
        refused: dict[str, str] = {}
        stored: list[MemoryRecord] = []
        try:
            for start in range(0, len(held), size):
                stored += self._store_batch(held[start : start + size], new, refused)
        except BaseException:
            self._changed([r for r, _ in held], stored, complete=False)  # the engine may hold any part of it
            raise
        self._changed([r for r, _ in held], stored, complete=not refused)
        if refused:
            raise RecordRejectedError(
                f"the backend refused {len(refused)} record(s): "
                + "; ".join(f"{i}: {why}" for i, why in refused.items())
                + " -- kept on the dead-letter list (memory-vec dead-letters list)",
                reasons=refused,
            )

    def _store_batch(self, batch: list[_Held], new: bool, refused: dict[str, str]) -> list[MemoryRecord]:
        """Store a batch; on a data error, record by record. Returns what was stored."""
        try:
            self._store(batch, new)
            return [r for r, _ in batch]
        except BackendUnavailableError:
            raise
        except BackendError as exc:
            if len(batch) == 1:
                refused[batch[0][0].id] = self._dead_letter(batch[0], exc)
                return []
            log.warning("memory-vec: the backend refused a batch of %d; retrying one by one: %s", len(batch), exc)
        stored = []
        for held in batch:
            try:
                # The failed call may have stored some rows: not "new" any more (upsert).
                self._store([held], False)
                stored.append(held[0])
            except BackendUnavailableError:
                raise
            except BackendError as exc:
                refused[held[0].id] = self._dead_letter(held, exc)
        return stored

    def _store(self, batch: Sequence[_Held], new: bool) -> None:
        # Retries with backoff belong to the backend guard (GuardedBackend).
        updates = [r for r, v in batch if v is None]
        rows = [(r, v) for r, v in batch if v is not None]
        # Updates of stored rows (supersedes) before new rows, as add_messages orders
        # them: a process killed in between leaves the new message unstored, which
        # heal re-derives whole; the other order could leave the old value current.
        if updates:
            self.backend.update(updates)
        if rows:
            put = self.backend.insert_new if new else self.backend.upsert
            put([r for r, _ in rows], np.stack([v for _, v in rows]))

    def _changed(self, records: Sequence[MemoryRecord], stored: Sequence[MemoryRecord], *, complete: bool) -> None:
        """The users' rows changed in the engine: a new keyword version each. ``complete``:
        exactly ``stored`` changed (else this process's copy is dropped, not patched)."""
        if self._keywords is None:
            return
        for user_id in dict.fromkeys(r.user_id for r in records):
            written = [r for r in stored if r.user_id == user_id]
            self._keywords.changed(user_id, written, () if complete else None)

    def delete(self, user_id: str, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        """Delete the user's rows among ``ids`` and/or matching ``where`` (the engine's
        delete, inside this call); how many were deleted."""
        removed: list[str] | None = None
        try:
            deleted = self.backend.delete(ids=ids, where=where)
            removed = list(ids) if ids is not None and where is None else None
            return deleted
        finally:
            if self._keywords is not None:
                self._keywords.changed(user_id, (), removed)

    def _dead_letter(self, held: _Held, exc: BackendError) -> str:
        record, vector = held
        reason = f"{type(exc).__name__}: {exc}"
        log.error(
            "memory-vec: record %s of user %r refused by the backend, moved to the dead-letter list: %s",
            record.id,
            record.user_id,
            reason,
        )
        # A vector that is not finite (a broken model) cannot be kept, and a
        # retry could not use it anyway: the letter keeps the record only.
        kept = None if vector is None or not np.all(np.isfinite(vector)) else [float(x) for x in vector]
        if self._dead_letters is not None:
            letter = DeadLetter(
                record.id,
                record.user_id,
                record.session_id,
                reason[:2000],
                time.time(),
                dataclasses.asdict(record),
                kept,
            )
            try:
                self._dead_letters.add_dead_letters([letter])
            except MemoryVecError as err:  # the record is refused either way; say so loudly
                log.error("memory-vec: could not keep record %s on the dead-letter list: %s", record.id, err)
        return reason

    # --- reads: the engine's (kept on the writer so the pipelines read one way) ---------
    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        return self.backend.query(vector, k=k, where=where)

    def get(self, ids: Sequence[str], where: RecordFilter | None = None) -> list[MemoryRecord]:
        return self.backend.get(list(ids)) if where is None else self.backend.get(list(ids), where=where)

    def scan(self, where: RecordFilter) -> list[MemoryRecord]:
        return self.backend.scan(where)

    # --- recall counts --------------------------------------------------------------
    def count_recalls(self, counts: Mapping[str, tuple[int, float]]) -> None:
        """Add recall counts (id -> (times, last recalled at)) to stored rows.

        Merged into each row as the backend holds it now, never into a copy
        read earlier (a supersede stored since would be written over).
        Superseded and missing rows are skipped; counts are not acknowledged
        data (an outage keeps them for the next call, a refusal drops them).
        """
        with self._lock:
            self._add_counts(counts)
        try:
            self.flush()
        except BackendError as exc:
            log.warning("memory-vec: recall counts kept for the next write: %s", exc)

    def _add_counts(self, counts: Mapping[str, tuple[int, float]]) -> None:
        for rid, (times, when) in counts.items():
            before, last = self._counts.get(rid, (0, when))
            self._counts[rid] = (before + times, max(last, when))

    def flush(self) -> None:
        """Store the recall counts not written yet (every record write is already stored)."""
        with self._lock:
            counts, self._counts = self._counts, {}
        if not counts:
            return
        try:
            rows = [
                r.copy(
                    recall_count=r.recall_count + counts[r.id][0],
                    last_recalled_at=max(r.last_recalled_at or 0.0, counts[r.id][1]),
                )
                for r in self.backend.get(list(counts), where=_CURRENT)
            ]
            if rows:
                self.backend.update(rows)
        except BackendUnavailableError:
            with self._lock:  # kept for the next flush, added to any counted since
                self._add_counts(counts)
            raise
        except BackendError as exc:
            log.warning("memory-vec: recall counts of %d memories not written: %s", len(counts), exc)
        # Recall counts change no indexed field: keyword versions stay.

    def close(self) -> None:
        self.flush()
