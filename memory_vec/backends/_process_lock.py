"""One process at a time on an embedded store: an exclusive ``fcntl.flock``.

Embedded Chroma and Milvus Lite are single-process. A second process that
opens the same store gets a clear :class:`~memory_vec._model.errors.StoreLockedError`
instead of corruption or an unrelated driver error. Within one process the
lock is shared and reference counted (several cores may open one store). A
forked child inherits the parent's hold but not the store: opening it again
there is refused like any other process, and the child's ``release`` never
runs the parent's ``before_unlock`` (e.g. stopping its Milvus Lite server).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from memory_vec._model.errors import StoreLockedError

__all__ = ["acquire", "inherited_from", "release"]

# lock file -> (fd, holders, pid of the process that took it: a forked child inherits the entry)
_held: dict[str, tuple[int, int, int]] = {}
_guard = threading.Lock()


def _guard_of_its_own() -> None:
    global _guard  # noqa: PLW0603  # another thread may have held it at the fork
    _guard = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_guard_of_its_own)


def acquire(lock_file: str, *, locked_message: str) -> None:
    """Take (or share, within this process) the lock; ``StoreLockedError`` if another process has it."""
    import fcntl

    with _guard:
        held = _held.get(lock_file)
        if held is not None and held[2] == os.getpid():
            _held[lock_file] = (held[0], held[1] + 1, held[2])
            return
        if held is not None:  # the parent's, inherited across a fork: the store is the parent's
            raise StoreLockedError(locked_message)
        os.makedirs(os.path.dirname(lock_file) or ".", exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StoreLockedError(locked_message) from exc
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())  # who holds it, for a person looking
        _held[lock_file] = (fd, 1, os.getpid())


def release(lock_file: str, *, before_unlock: Callable[[], None] | None = None) -> bool:
    """Drop one holder; True when that was the last one and the lock is gone.

    ``before_unlock`` runs, for the last holder, while the lock is still held.
    """
    with _guard:
        held = _held.get(lock_file)
        if held is None:
            return False
        if held[1] > 1:
            _held[lock_file] = (held[0], held[1] - 1, held[2])
            return False
        if held[2] != os.getpid():  # inherited across a fork: the lock, and what it guards, stay the parent's
            del _held[lock_file]
            os.close(held[0])  # the parent's own descriptor keeps its lock
            return False
        del _held[lock_file]
        if before_unlock is not None:
            before_unlock()
        os.close(held[0])  # closing the descriptor releases the flock
        return True


def inherited_from(lock_file: str) -> int | None:
    """The pid of the process that took the lock, when this process only
    inherited it across a fork (the store is that process's, not this one's)."""
    with _guard:
        held = _held.get(lock_file)
    return held[2] if held is not None and held[2] != os.getpid() else None
