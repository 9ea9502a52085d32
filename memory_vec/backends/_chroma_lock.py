"""One process at a time on an embedded Chroma store.

The first process that opens ``persist_dir/chroma`` holds an exclusive lock
on ``.memory_vec.lock`` in it until ``close()`` (see :mod:`._process_lock`);
any other process gets :class:`~memory_vec.errors.StoreLockedError`.
"""

from __future__ import annotations

import os

from . import _process_lock

__all__ = ["acquire", "release"]


def _lock_file(path: str) -> str:
    return os.path.join(path, ".memory_vec.lock")


def acquire(path: str) -> None:
    """Take (or share, within this process) the exclusive lock of an embedded store."""
    lock_file = _lock_file(path)
    _process_lock.acquire(lock_file, locked_message=(
        f"The embedded Chroma store at {path} is open in another process (lock file {lock_file}). "
        "Embedded stores are single-process: close the other process, or run a Chroma server "
        "(`chroma run --path DIR`) and set `url`."
    ))


def release(path: str) -> None:
    """Drop this process' hold on the lock (the last holder unlocks)."""
    _process_lock.release(_lock_file(path))
