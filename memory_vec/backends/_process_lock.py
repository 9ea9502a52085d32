"""One process at a time on an embedded store: an exclusive ``fcntl.flock``.

Embedded Chroma and Milvus Lite are single-process. A second process that
opens the same store gets a clear :class:`~memory_vec.errors.StoreLockedError`
instead of corruption or an unrelated driver error. Within one process the
lock is shared and reference counted (several cores may open one store).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from ..errors import StoreLockedError

__all__ = ["acquire", "release"]

_held: dict[str, tuple[int, int]] = {}  # lock file -> (fd, holders in this process)
_guard = threading.Lock()


def acquire(lock_file: str, *, locked_message: str) -> None:
    """Take (or share, within this process) the lock; ``StoreLockedError`` if another process has it."""
    import fcntl

    with _guard:
        held = _held.get(lock_file)
        if held is not None:
            _held[lock_file] = (held[0], held[1] + 1)
            return
        os.makedirs(os.path.dirname(lock_file) or ".", exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StoreLockedError(locked_message) from exc
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())  # who holds it, for a person looking
        _held[lock_file] = (fd, 1)


def release(lock_file: str, *, before_unlock: Callable[[], None] | None = None) -> bool:
    """Drop one holder; True when that was the last one and the lock is gone.

    ``before_unlock`` runs, for the last holder, while the lock is still held.
    """
    with _guard:
        held = _held.get(lock_file)
        if held is None:
            return False
        if held[1] > 1:
            _held[lock_file] = (held[0], held[1] - 1)
            return False
        del _held[lock_file]
        if before_unlock is not None:
            before_unlock()
        os.close(held[0])  # closing the descriptor releases the flock
        return True
