"""Record writes: validated first, durable when they return (a turn's on a
store with background writes: durable in the working state, stored by a
thread), and one bad record never blocks anyone else's.

Synchronous mode: ``write`` upserts before returning, so a returned
``WriteResult`` is durable. If the backend is unreachable the records stay
in the pending buffer (``pending=True``) and every later call (and
``flush()``) retries them: nothing is dropped.

Background mode (``background_writes``; by default where the working state
is durable, see ``Store.resolve``): a ``deferred`` write (``add_messages``'
own, whose turn is in the working state, so ``heal`` can re-derive it) only
queues; a thread stores the queue every ``flush_interval`` seconds or
``write_batch_size`` records, and at exit. Every other write is stored
before it returns. Reads and conflict checks see pending records. The
sessions with rows queued are named (unflushed.py): in a file on a store one
process owns, so the next process heals them if this one dies first; as
leases in the shared working state (Redis, SQLite) on a server, which other processes wait out before
they read the user (``settle``), so there the thread stores each turn at once.

Failure isolation: every record passes the store's validation hook before
it is queued. When the backend still refuses a batch (not an outage: an
error about the data), the batch is retried record by record; a record
that fails alone goes to the dead-letter list in the state store, the
others are stored. A synchronous caller whose record was refused gets
:class:`~memory_vec._model.errors.RecordRejectedError`; background writes log it.
An outage (:class:`~memory_vec._model.errors.BackendUnavailableError`) never
dead-letters anything: the records wait in the buffer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from memory_vec._model.errors import BackendError, BackendUnavailableError, MemoryVecError, RecordRejectedError
from memory_vec._model.records import MemoryRecord
from memory_vec._storage.pending_reads import Held, PendingReads
from memory_vec._storage.unflushed import Marks, Session, SharedUnflushed, UnflushedSessions
from memory_vec._storage.writer_process import unwatch, watch
from memory_vec.backends.base import Backend, RecordFilter, insert_new_of
from memory_vec.state.base import DeadLetter, StateStore

__all__ = ["RecordWriter", "WriterSettings"]

log = logging.getLogger("memory_vec._storage.writer")

_CURRENT = RecordFilter(include_archived=True)  # any user's rows, superseded ones left out

_Held = Held


@dataclasses.dataclass(frozen=True)
class WriterSettings:
    """How a store's writer runs; one store has one writer, so every core on
    the store must ask for the same settings."""

    background: bool | None = False  # None: the store decides (Store.resolve)
    batch_size: int = 64
    flush_interval: float = 0.5


class RecordWriter(PendingReads):
    """Args:
    backend: where records go.
    settings: sync or background, batch size, flush interval.
    validate: the store's validation hook (a named error for a record the library or backend refuses).
    dead_letters: the state store that keeps refused records.
    on_stored: called with records once they are durable.
    unflushed: where a background writer names its sessions with rows queued (a store one process owns).
    shared: leases on them where other processes read the store (working state in Redis or SQLite).
    """

    def __init__(
        self,
        backend: Backend,
        settings: WriterSettings | None = None,
        *,
        validate: Callable[[Sequence[MemoryRecord], np.ndarray | None], None] | None = None,
        dead_letters: StateStore | None = None,
        on_stored: Callable[[Sequence[MemoryRecord]], None] | None = None,
        unflushed: UnflushedSessions | None = None,
        shared: SharedUnflushed | None = None,
    ) -> None:
        self.backend = backend
        self.settings = settings = settings or WriterSettings()
        self._validate = validate
        self._dead_letters = dead_letters
        self._on_stored = on_stored
        self.unflushed = unflushed
        self.shared = shared  # a synchronous writer holds no leases but waits for others' (settle)
        self._turn_users: Counter[str] = Counter()  # turns between their first deferred write and last
        self._inflight: Counter[str] = Counter()  # users of batches not stored and logged yet
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()  # one flush at a time
        self._storing = threading.Lock()  # held while one batch is in the backend's hands
        self._pending: dict[str, _Held] = {}
        # Pending ids that were never stored (new messages and facts): they go
        # through ``insert_new``, which skips the backend's checks for old rows.
        self._new: set[str] = set()
        # Recall counts to add to stored rows: id -> (count, last recalled at).
        self._counts: dict[str, tuple[int, float]] = {}
        # Recently refused ids -> reason, so a sync caller learns about its own
        # records even when another thread's flush carried them (bounded).
        self._rejected: OrderedDict[str, str] = OrderedDict()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.last_error: BaseException | None = None
        if settings.background:
            self._start()
            watch(self)  # flushed at exit; restarted in a forked child

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="memory-vec-writer", daemon=True)
        self._thread.start()
        if self.shared is not None:
            self.shared.start_renewing(self._lock)

    def after_fork(self) -> None:
        """In a forked child: a thread, locks and leases of its own; what the
        parent queued is the parent's to store."""
        self._lock, self._flush_lock, self._storing = threading.RLock(), threading.Lock(), threading.Lock()
        self._pending, self._new, self._counts, self._wake = {}, set(), {}, threading.Event()
        self._turn_users, self._inflight = Counter(), Counter()
        if self.shared is not None:
            self.shared = SharedUnflushed(self.shared.state, lease=self.shared.lease)  # its own token
        if not self._closed:
            self._start()

    @property
    def background(self) -> bool:
        return bool(self.settings.background)

    # --- writes ---------------------------------------------------------------------
    def write(
        self,
        records: Sequence[MemoryRecord],
        vectors: np.ndarray,
        *,
        batch_size: int | None = None,
        new: bool = False,
        deferred: bool = False,
    ) -> bool:
        """Store records; True when durable now, False when pending.

        ``new``: fresh ids, so the backend's ``insert_new`` may skip looking
        for old rows. ``deferred``: a background writer may leave them to its
        thread (records ``heal`` can re-derive from the working state).
        ``batch_size``: this call's flush batch (bulk writes: a round trip
        costs about the same for 64 rows as for 1,000).

        Raises:
            InvalidInputError: (a subclass) a record fails validation; nothing queued.
            RecordRejectedError: sync mode, the backend refused some of these
                records (the rest are stored; refused ones are dead letters).
        """
        if self._validate is not None:
            self._validate(records, np.asarray(vectors))
        with self._lock:
            self._mark(records, deferred)
            for record, vector in zip(records, vectors):
                self._pending[record.id] = (record, np.asarray(vector, dtype=np.float32))
            (self._new.update if new else self._new.difference_update)(r.id for r in records)
        return self._after_queue([r.id for r in records], batch_size, deferred)

    def update(self, records: Sequence[MemoryRecord], *, deferred: bool = False) -> bool:
        """Change fields of stored records (vectors unchanged); ``deferred`` as in ``write``."""
        if self._validate is not None:
            self._validate(records, None)
        with self._lock:  # not marked: the turn around it named its session (``turn``)
            for record in records:
                held = self._pending.get(record.id)
                vector = held[1] if held is not None else None  # still unwritten: patch in place
                self._pending[record.id] = (record, vector)
        return self._after_queue([r.id for r in records], None, deferred)

    def count_recalls(self, counts: Mapping[str, tuple[int, float]]) -> None:
        """Add recall counts (id -> (times, last recalled at)) to stored rows.

        Merged into each row as the backend holds it when the writer stores
        them (after the queue, under the store lock), never into a copy read
        earlier: a supersede stored or queued since that read would be
        written over, the old value current again. Superseded and missing
        rows are skipped; counts are not acknowledged data (an outage keeps
        them for the next flush, a refusal drops them).
        """
        with self._lock:
            self._add_counts(counts)
        if not self.background:
            self._try_flush()

    def _add_counts(self, counts: Mapping[str, tuple[int, float]]) -> None:
        for rid, (times, when) in counts.items():
            before, last = self._counts.get(rid, (0, when))
            self._counts[rid] = (before + times, max(last, when))

    @contextlib.contextmanager
    def turn(self, session: Session) -> Iterator[None]:
        """Around a turn's deferred writes: its session is named before the
        first, and stays named until all are queued (the thread may store
        the turn's supersedes before its own rows are even queued)."""
        with self._lock:
            self._mark_sessions([session])
            self._turn_users[session[0]] += 1
        try:
            yield
        finally:
            with self._lock:
                self._turn_users -= Counter([session[0]])  # drops zero counts
                self._release_idle([session[0]])

    def _mark(self, records: Sequence[MemoryRecord], deferred: bool) -> None:
        if deferred and self.unflushed is not None and self.background:  # nothing to build otherwise
            self._mark_sessions([(r.user_id, r.session_id) for r in records if r.session_id])

    def _mark_sessions(self, sessions: Sequence[Session]) -> None:
        if self.unflushed is not None and self.background and sessions:
            self.unflushed.mark(id(self), sessions)
        if self.shared is not None and self.background and sessions:
            self.shared.mark(sessions)

    def _release_idle(self, users: Iterable[str]) -> None:
        """Under ``_lock``, so a turn's lease and a release never cross: users idle now."""
        if self.shared is not None and self.background:
            idle = (
                set(users)
                - {r.user_id for r, _ in self._pending.values()}
                - set(self._turn_users)
                - set(self._inflight)
            )
            if idle:
                self.shared.release(idle)

    def settle(self, user_id: str, heal: Callable[[str], bool] | None = None, first: Marks | None = None) -> set[str]:
        """Before reading a user: wait out other processes' queued rows of it;
        returns the sessions still leased when it gave up (one lease)."""
        return self.shared.settle(user_id, heal, first) if self.shared is not None else set()

    def _after_queue(self, ids: Sequence[str], batch_size: int | None, deferred: bool) -> bool:
        if self.background and deferred:
            # Other processes wait for a shared store's queued rows (settle): store them now.
            if self.shared is not None or self.pending_count >= self.settings.batch_size:
                self._wake.set()
            return False
        durable = self._try_flush(batch_size)
        with self._lock:
            refused = {i: self._rejected[i] for i in ids if i in self._rejected}
        if refused:
            raise RecordRejectedError(
                f"the backend refused {len(refused)} record(s): "
                + "; ".join(f"{i}: {why}" for i, why in refused.items())
                + " -- kept on the dead-letter list (memory-vec dead-letters list)",
                reasons=refused,
            )
        return durable

    def forget(self, ids: Sequence[str]) -> None:
        """Drop pending records (before their backend delete); a batch the thread is
        storing right now is waited for, or the delete could land before it."""
        with self._storing, self._lock:
            dropped = [held for held in (self._pending.pop(record_id, None) for record_id in ids) if held]
            self._new.difference_update(ids)
            self._release_idle({r.user_id for r, _ in dropped})

    def forget_where(self, where: RecordFilter) -> int:
        with self._storing, self._lock:
            doomed = [rid for rid, (r, _) in self._pending.items() if where.matches(r)]
            users = {self._pending.pop(rid)[0].user_id for rid in doomed}
            self._new.difference_update(doomed)
            self._release_idle(users)
            return len(doomed)

    @property
    def pending_count(self) -> int:
        with self._lock:
            return len(self._pending)

    def _try_flush(self, batch_size: int | None = None) -> bool:
        try:
            self.flush(batch_size)
            return True
        except BackendError as exc:
            self.last_error = exc
            log.warning("memory-vec: backend write failed, %d records pending: %s", self.pending_count, exc)
            return False

    def flush(self, batch_size: int | None = None) -> None:
        """Write every pending record, ``batch_size`` (default: the settings')
        per backend call; raises if the backend is unreachable.

        Records the backend refuses one by one become dead letters (logged);
        they do not make ``flush`` fail.
        """
        size = max(1, batch_size or self.settings.batch_size)
        with self._flush_lock:
            while True:
                with self._lock:
                    batch = list(itertools.islice(self._pending.items(), size))
                    if not batch:
                        if self.unflushed is not None and not self._turn_users:
                            self.unflushed.clear(id(self))
                        break
                    users = {held[0].user_id for _, held in batch}
                    self._inflight.update(users)  # leased until stored and logged for other processes' copies
                try:
                    with self._storing:
                        try:
                            stored = self._store_batch([held for _, held in batch])
                        finally:
                            with self._lock:
                                # Written, or maybe written before a failure: not new any more.
                                self._new.difference_update(rid for rid, _ in batch)
                        with self._lock:
                            for rid, held in batch:
                                if self._pending.get(rid) is held:  # unchanged while we wrote
                                    del self._pending[rid]
                    self.last_error = None
                    if stored and self._on_stored is not None:
                        self._on_stored(stored)
                finally:
                    with self._lock:
                        self._inflight -= Counter(users)  # drops zero counts
                        self._release_idle(users)
            with self._storing:
                self._store_counts()

    def _store_counts(self) -> None:
        """Under ``_flush_lock`` and ``_storing``: no write of this process in between."""
        with self._lock:
            counts, self._counts = self._counts, {}
            queued = {rid: counts.pop(rid) for rid in list(counts) if rid in self._pending}
            self._counts.update(queued)  # a queued version is stored first; counted on the next flush
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
            return
        if rows and self._on_stored is not None:
            self._on_stored(rows)

    def _store_batch(self, batch: list[_Held]) -> list[MemoryRecord]:
        """Store a batch; on a data error, record by record. Returns what was stored."""
        try:
            self._store(batch)
            return [r for r, _ in batch]
        except BackendUnavailableError:
            raise  # an outage: everything stays pending
        except BackendError as exc:
            if len(batch) == 1:
                self._dead_letter(batch[0], exc)
                return []
            log.warning("memory-vec: the backend refused a batch of %d; retrying one by one: %s", len(batch), exc)
        stored = []
        for held in batch:
            try:
                self._store([held])
                stored.append(held[0])
            except BackendUnavailableError:
                raise
            except BackendError as exc:
                self._dead_letter(held, exc)
        return stored

    def _store(self, batch: Sequence[_Held]) -> None:
        # Retries with backoff belong to the backend guard (GuardedBackend);
        # retrying here too would multiply the attempts.
        with self._lock:
            new = {r.id for r, _ in batch if r.id in self._new}
        fresh = [(r, v) for r, v in batch if v is not None and r.id in new]
        inserts = [(r, v) for r, v in batch if v is not None and r.id not in new]
        updates = [r for r, v in batch if v is None]
        # Updates of stored rows (supersedes) before the new rows, as add_messages queues
        # them: a process killed in between leaves the new message unstored, which heal
        # re-derives whole; the other order could leave it stored and the old value current.
        if updates:
            self.backend.update(updates)
        if inserts:
            self.backend.upsert([r for r, _ in inserts], np.stack([v for _, v in inserts]))
        if fresh:
            insert_new_of(self.backend)([r for r, _ in fresh], np.stack([v for _, v in fresh]))

    def _dead_letter(self, held: _Held, exc: BackendError) -> None:
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
            try:
                self._dead_letters.add_dead_letters(
                    [
                        DeadLetter(
                            record.id,
                            record.user_id,
                            record.session_id,
                            reason[:2000],
                            time.time(),
                            dataclasses.asdict(record),
                            kept,
                        )
                    ]
                )
            except MemoryVecError as exc:  # the record is refused either way; say so loudly
                log.error("memory-vec: could not keep record %s on the dead-letter list: %s", record.id, exc)
        with self._lock:
            self._rejected[record.id] = reason
            while len(self._rejected) > 1000:
                self._rejected.popitem(last=False)

    # --- sessions a process that died left unwritten (a store one process owns) ----------
    def carried_sessions(self) -> list[Session]:
        return self.unflushed.to_heal() if self.unflushed is not None else []

    def session_healed(self, session: Session) -> None:
        if self.unflushed is not None:
            self.unflushed.healed(session)

    # --- background thread ------------------------------------------------------------
    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.settings.flush_interval)
            self._wake.clear()
            try:
                self._try_flush()
            except Exception as exc:  # noqa: BLE001  # e.g. the log for other processes: the thread goes on
                self.last_error = exc
                log.error("memory-vec: background write failed, %d records pending: %s", self.pending_count, exc)

    def close(self) -> None:
        """Flush (acknowledging pending writes) and stop the thread."""
        self._closed = True
        self._wake.set()
        if self.shared is not None:
            self.shared.stop_renewing()
        if self._thread is not None:
            self._thread.join(timeout=30)
        unwatch(self)
        self.flush()
