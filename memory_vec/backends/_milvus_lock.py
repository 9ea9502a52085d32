"""One process at a time on a Milvus Lite path.

Milvus Lite holds its own flock inside the data directory, but a second
process only sees pymilvus fail with an unrelated connection error. We take
an exclusive ``fcntl.flock`` on ``<path>.lock`` first and raise a clear
:class:`~memory_vec.errors.StoreLockedError`. Within one process the lock is
shared (reference counted), because pymilvus shares one Lite server per path.
"""

from __future__ import annotations

import os
import threading

from ..errors import StoreLockedError

__all__ = ["LiteLock"]

_held: dict[str, list[int]] = {}  # abs path -> [fd, refcount]
_guard = threading.Lock()


class LiteLock:
    """A process-wide, reference-counted exclusive lock on a Lite path."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._released = False

    @classmethod
    def acquire(cls, path: str) -> LiteLock:
        """Lock ``path`` for this process.

        Raises:
            StoreLockedError: Another process has the path open.
        """
        key = os.path.abspath(path)
        with _guard:
            entry = _held.get(key)
            if entry is not None:
                entry[1] += 1
                return cls(key)
            os.makedirs(os.path.dirname(key) or ".", exist_ok=True)
            fd = os.open(key + ".lock", os.O_CREAT | os.O_RDWR, 0o644)
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                raise StoreLockedError(
                    f"The Milvus Lite store {key!r} is open in another process (lock file {key}.lock). "
                    "Milvus Lite is single-process: close the other process, or run a server "
                    "(`milvus-lite server --data-dir DIR` or Milvus) and set MemoryConfig.url."
                ) from exc
            _held[key] = [fd, 1]
            return cls(key)

    def release(self) -> None:
        """Drop this handle; the last one in the process unlocks and stops the Lite server."""
        if self._released:
            return
        self._released = True
        with _guard:
            entry = _held.get(self.path)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _held[self.path]
            _stop_lite_server(self.path)  # it holds Lite's own lock on the directory
            os.close(entry[0])  # closing the descriptor releases the flock


def _stop_lite_server(path: str) -> None:
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:  # older/newer milvus-lite without a server manager
        return
    try:
        server_manager_instance.release_server(path)
    except Exception:  # stopping is best effort; the lock is released regardless
        pass
