"""The sessions whose acknowledged turns are not in the backend yet.

With background writes, ``add_messages`` returns once the turn is in the
working state (its write-ahead log); the vectors follow on the writer's
thread. If the process dies in between, the turn is re-stored by ``heal``
when its session is read again, but recall from the user's other sessions
would miss it until then. On a store one process owns (embedded Chroma,
Milvus Lite: a file lock keeps other processes out) this small file, next to
the working-state database, names those sessions, so the next process to
open the store heals them before its first call.

A writer names a session before it queues the session's rows and lets go of
its names when nothing of it is pending; the file then keeps only the names
other writers of this process (two stores over one state file) still hold
and those a dead process left that are not healed yet. Lines are JSON
``[user_id, session_id]``, each written after a newline, so a line torn by a
crash never swallows the next one.

Where other processes read the same store (a Chroma or Milvus server, the
SQLite backend) and share the working state (Redis, or the SQLite state file
of one host), :class:`SharedUnflushed` keeps those names in the working state
instead, as leases a thread of the writer renews. Another
process about to read a user waits until no live lease of the user is
left, so it does not read around a turn another worker acknowledged (a
supersede included), for one lease at most (then it reads without that
turn); a lease that ran out belongs to a process that died, and that
session is healed by the reader.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from memory_vec._model.errors import MemoryVecError
from memory_vec.state.base import Marks

__all__ = ["Marks", "SharedUnflushed", "UnflushedSessions", "open_unflushed", "release_unflushed"]

log = logging.getLogger("memory_vec")

Session = tuple[str, str]


class UnflushedSessions:
    """One per file per process (``open_unflushed``), shared by its writers.
    File errors are logged, not raised: the turns are safe in the working
    state either way, and ``maintain()`` heals every session."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._marked: dict[int, set[Session]] = {}  # writer -> its sessions with rows pending
        # Left by a process that died with rows pending; healed by the first core.
        self.carried: set[Session] = self._read()
        self._on_file = set(self.carried)

    def _read(self) -> set[Session]:
        try:
            with open(self.path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            return set()
        except OSError as exc:
            log.warning("memory-vec: cannot read %s (%s); sessions are healed when read instead", self.path, exc)
            return set()
        found: set[Session] = set()
        for line in lines:
            try:
                user_id, session_id = json.loads(line)
            except (ValueError, TypeError):
                continue  # empty, or torn by a crash while naming: nothing of it was queued
            if isinstance(user_id, str) and isinstance(session_id, str):
                found.add((user_id, session_id))
        return found

    def mark(self, writer: int, sessions: Iterable[Session]) -> None:
        """Name sessions whose rows ``writer`` is about to queue (before it does)."""
        with self._lock:
            wanted = set(sessions)
            new = wanted - self._on_file
            if new:
                try:
                    with open(self.path, "a", encoding="utf-8") as fh:
                        fh.write(_lines(new))  # once written, the OS keeps it when the process is killed
                except OSError as exc:
                    log.warning(
                        "memory-vec: cannot write %s (%s); after a crash these sessions heal when read", self.path, exc
                    )
                    return
                self._on_file |= new
            self._marked.setdefault(writer, set()).update(wanted)

    def to_heal(self) -> list[Session]:
        with self._lock:
            return sorted(self.carried)

    def healed(self, session: Session) -> None:
        with self._lock:
            self.carried.discard(session)

    def clear(self, writer: int) -> None:
        """Nothing of ``writer`` is pending: drop its names, keep everyone else's."""
        with self._lock:
            self._marked.pop(writer, None)
            keep = set().union(*self._marked.values()) | self.carried
            if keep == self._on_file:
                return
            try:
                if keep:
                    tmp = self.path + ".tmp"
                    with open(tmp, "w", encoding="utf-8") as fh:
                        fh.write(_lines(keep))
                    os.replace(tmp, self.path)
                elif os.path.exists(self.path):
                    os.remove(self.path)
            except OSError as exc:
                log.warning("memory-vec: cannot rewrite %s (%s)", self.path, exc)
                return  # a stale name only costs a heal
            self._on_file = keep


def _lines(sessions: Iterable[Session]) -> str:
    return "".join("\n" + json.dumps(list(s), ensure_ascii=False) for s in sorted(sessions))


_open: dict[str, tuple[UnflushedSessions, int]] = {}  # path -> (file, stores using it), like the file locks
_open_lock = threading.Lock()


def open_unflushed(path: str) -> UnflushedSessions:
    """This process's one ``UnflushedSessions`` for ``path`` (reference counted)."""
    path = os.path.abspath(path)
    with _open_lock:
        held = _open.get(path)
        sessions = held[0] if held is not None else UnflushedSessions(path)
        _open[path] = (sessions, (held[1] if held is not None else 0) + 1)
        return sessions


def release_unflushed(sessions: UnflushedSessions) -> None:
    with _open_lock:
        held = _open.get(sessions.path)
        if held is None:
            return
        if held[1] <= 1:
            del _open[sessions.path]
        else:
            _open[sessions.path] = (held[0], held[1] - 1)


class SharedUnflushed:
    """One per writer: its leases on (user, session) in the shared working
    state (``mark_unflushed`` of the Redis or SQLite store). State errors are logged, not
    raised: a lost mark costs another process a stale read or a heal, never
    a turn (it is in the working state)."""

    def __init__(self, state: Any, lease: float) -> None:
        self.state = state
        self.lease = lease
        self.token = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._held: dict[str, dict[str, float]] = {}  # user -> session -> when last marked (monotonic)
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def _member(self, session_id: str) -> str:
        return f"{self.token} {session_id}"

    def mark(self, sessions: Iterable[Session], *, renew: bool = False) -> None:
        """Lease sessions before their rows are queued; one state call, none
        when all were leased recently (``renew``: every held lease past a third)."""
        now = time.monotonic()
        with self._lock:
            todo = sorted(
                {
                    (u, s)
                    for u, s in sessions
                    if now - self._held.get(u, {}).get(s, -1e9) > (self.lease / 3 if renew else self.lease / 2)
                }
            )
        if not todo:
            return
        try:
            self.state.mark_unflushed([(u, self._member(s)) for u, s in todo], self.lease)
        except MemoryVecError as exc:
            log.warning("memory-vec: cannot mark unflushed sessions (%s); other workers may read around them", exc)
            return
        with self._lock:
            for u, s in todo:
                self._held.setdefault(u, {})[s] = now

    def start_renewing(self, lock: Any) -> None:
        """A thread of its own renews the leases: one backend call may outlast a
        lease (timeouts, retries) while the process is alive. ``lock``: the
        writer's, so a renewal never crosses a release."""

        def run() -> None:
            while not self._stop.wait(self.lease / 4):
                try:
                    with lock:
                        self.renew()
                except Exception as exc:  # noqa: BLE001  # a dead renewer would make a live worker look dead
                    log.error("memory-vec: renewing leases failed: %s", exc)

        self._renewer = threading.Thread(target=run, name="memory-vec-leases", daemon=True)
        self._renewer.start()

    def stop_renewing(self) -> None:
        self._stop.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join(timeout=10)

    def renew(self) -> None:
        """The renewer, every quarter lease: keep the leases of a live process."""
        with self._lock:
            held = [(u, s) for u, sessions in self._held.items() for s in sessions]
        self.mark(held, renew=True)

    def release(self, users: Iterable[str]) -> None:
        """Nothing of these users is queued any more."""
        with self._lock:
            marks = [(u, self._member(s)) for u in set(users) for s in self._held.pop(u, {})]
        try:
            self.state.clear_unflushed(marks)
        except MemoryVecError as exc:  # the leases run out by themselves; readers wait that long at most
            log.warning("memory-vec: cannot clear unflushed marks (%s)", exc)

    def settle(self, user_id: str, heal: Callable[[str], bool] | None = None, first: Marks | None = None) -> set[str]:
        """Before reading ``user_id``: wait while another writer holds a live
        lease on the user (until the leases first seen would run out: at most
        one lease, so a dead writer's expires and a live one's is waited for); heal the sessions of leases that
        ran out (``heal(session)`` True when healed), then drop those. Returns
        the sessions of live leases it gave up waiting for (empty: settled).
        ``first``: the marks as just read (``unflushed_marks``), for the first look."""
        give_up: float | None = None
        pause = 0.002
        while True:
            try:
                now, marks = first if first is not None else self.state.unflushed_marks(user_id)
            except MemoryVecError as exc:
                log.warning("memory-vec: cannot read unflushed marks (%s); reading without waiting", exc)
                return set()
            first = None
            others = self._others(marks)
            dead = [m for m, until in others if until <= now]
            if dead and heal is not None:
                healed = [m for m in dead if self._healed(heal, user_id, m.partition(" ")[2])]
                try:
                    self.state.clear_expired_unflushed(user_id, healed)
                except MemoryVecError as exc:
                    log.warning("memory-vec: cannot clear healed marks (%s)", exc)
            live = {m.partition(" ")[2]: until for m, until in others if until > now}
            if not live:
                return set()
            if give_up is None:  # the leases as first seen, plus a margin: a dead writer's has run out by then
                # (bounded: a clock that stepped back must not stretch the wait)
                give_up = time.monotonic() + min(max(live.values()) - now, 2 * self.lease) + 0.25
            if time.monotonic() >= give_up:
                return set(live)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def others_live(self, marks: Marks) -> bool:
        """Whether these marks (``unflushed_marks``) hold another writer's live lease (settle would wait)."""
        now, leases = marks
        return any(until > now for _, until in self._others(leases))

    def _others(self, marks: list[tuple[str, float]]) -> list[tuple[str, float]]:
        return [(m, until) for m, until in marks if " " in m and not m.startswith(self.token + " ")]

    @staticmethod
    def _healed(heal: Callable[[str], bool], user_id: str, session_id: str) -> bool:
        try:
            return heal(session_id)
        except Exception as exc:  # noqa: BLE001  # a read must not fail on another worker's leftovers
            log.error(
                "memory-vec: could not heal %s/%s left by a worker that died (retried on the next read, "
                "maintain() too): %s",
                user_id,
                session_id,
                exc,
            )
            return False
