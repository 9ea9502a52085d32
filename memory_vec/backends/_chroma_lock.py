"""One process at a time on an embedded Chroma store.

The first process that opens ``persist_dir/chroma`` holds an exclusive lock
on ``.memory_vec.lock`` in it until ``close()`` (see :mod:`._process_lock`);
any other process gets :class:`~memory_vec._model.errors.StoreLockedError`.
"""

from __future__ import annotations

import os

from memory_vec._model.errors import StoreLockedError
from memory_vec.backends import _process_lock

__all__ = ["acquire", "check_not_inherited", "keep_if_inherited", "release"]

_kept: list[object] = []  # clients inherited across a fork: never closed nor freed in the child


def _lock_file(path: str) -> str:
    return os.path.join(path, ".memory_vec.lock")


def acquire(path: str) -> None:
    """Take (or share, within this process) the exclusive lock of an embedded store."""
    lock_file = _lock_file(path)
    _process_lock.acquire(
        lock_file,
        locked_message=(
            f"The embedded Chroma store at {path} is open in another process (lock file {lock_file}). "
            "Embedded stores are single-process: close the other process, or run a Chroma server "
            "(`chroma run --path DIR`) and set `url`."
        ),
    )


def release(path: str) -> None:
    """Drop this process' hold on the lock (the last holder unlocks)."""
    _process_lock.release(_lock_file(path))


def check_not_inherited(path: str | None) -> None:
    """Refuse an embedded store this process inherited across a fork.

    Chroma's embedded engine does not survive a fork: its threads stay in the
    parent, and a call in the child hangs holding the GIL. An embedded store
    is single-process anyway, so the child gets the error a second process gets.
    """
    owner = _process_lock.inherited_from(_lock_file(path)) if path is not None else None
    if owner is not None:
        raise StoreLockedError(
            f"The embedded Chroma store at {path} was opened by process {owner} before this process forked "
            "from it; an embedded store is single-process and Chroma's engine does not survive a fork. Build "
            "the memory in each worker after the fork (gunicorn: no --preload, or in post_fork) on a store of "
            "its own, or run a Chroma server (`chroma run --path DIR`) and set `url`."
        )


def keep_if_inherited(path: str | None, client: object) -> bool:
    """True (and ``client`` kept alive) when it is a parent's client inherited
    across a fork: closing or freeing it would run the parent's engine here."""
    if path is None or _process_lock.inherited_from(_lock_file(path)) is None:
        return False
    _kept.append(client)
    return True
