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
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable

__all__ = ["UnflushedSessions", "open_unflushed", "release_unflushed"]

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
                    log.warning("memory-vec: cannot write %s (%s); after a crash these sessions heal when read",
                                self.path, exc)
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
