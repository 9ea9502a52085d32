"""One process at a time on a Milvus Lite path.

Milvus Lite holds its own flock inside the data directory, but a second
process only sees pymilvus fail with an unrelated connection error. We take
an exclusive ``fcntl.flock`` on ``<path>.lock`` first and raise a clear
:class:`~memory_vec._model.errors.StoreLockedError`. Within one process the lock is
shared (reference counted), because pymilvus shares one Lite server per path.
"""

from __future__ import annotations

import contextlib
import os

from memory_vec.backends import _process_lock

__all__ = ["LiteLock"]


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
        _process_lock.acquire(
            key + ".lock",
            locked_message=(
                f"The Milvus Lite store {key!r} is open in another process (lock file {key}.lock). "
                "Milvus Lite is single-process: close the other process, or run a server "
                "(`milvus-lite server --data-dir DIR` or Milvus) and set MemoryConfig.url."
            ),
        )
        return cls(key)

    def release(self) -> None:
        """Drop this handle; the last one in the process unlocks and stops the Lite server."""
        if self._released:
            return
        self._released = True
        # The Lite server holds Lite's own lock on the directory: stop it first.
        _process_lock.release(self.path + ".lock", before_unlock=lambda: _stop_lite_server(self.path))


def _stop_lite_server(path: str) -> None:
    try:
        from milvus_lite.server_manager import server_manager_instance  # type: ignore[import-untyped]
    except ImportError:  # older/newer milvus-lite without a server manager
        return
    with contextlib.suppress(Exception):  # stopping is best effort; the lock is released regardless
        server_manager_instance.release_server(path)
