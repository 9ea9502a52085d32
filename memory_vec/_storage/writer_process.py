"""Background writers across their process's life. A script that never
calls ``close()`` still stores its last turns at exit; a process forked
after a writer started (a server's preloaded app: ``gunicorn --preload``,
a core built at import) gets a writer of its own, since the parent's thread
does not exist in the child and the rows the parent queued are the
parent's to store."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from typing import Protocol

from memory_vec._model.errors import BackendUnavailableError

__all__ = ["BackgroundWriter", "unwatch", "watch"]

log = logging.getLogger("memory_vec._storage.writer")


class BackgroundWriter(Protocol):
    last_error: BaseException | None

    @property
    def pending_count(self) -> int: ...

    def flush(self) -> None: ...

    def after_fork(self) -> None: ...


_writers: weakref.WeakSet[BackgroundWriter] = weakref.WeakSet()
_guard = threading.Lock()
_hooked: list[bool] = []


def watch(writer: BackgroundWriter) -> None:
    with _guard:
        _writers.add(writer)
        if not _hooked:
            # Before the interpreter stops thread pools (the backend guard runs calls on one):
            # a plain atexit handler runs after that, when no backend call can start any
            # more. Exit hooks run last-registered first, and the pools exist by now.
            getattr(threading, "_register_atexit", atexit.register)(_flush_at_exit)
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(after_in_child=_after_fork_in_child)
            _hooked.append(True)


def unwatch(writer: BackgroundWriter) -> None:
    with _guard:
        _writers.discard(writer)


def _flush_at_exit() -> None:
    for writer in list(_writers):
        if isinstance(writer.last_error, BackendUnavailableError):  # no waiting out retries at exit
            log.warning(
                "memory-vec: backend unavailable at exit, %d record(s) left to heal on the next open",
                writer.pending_count,
            )
            continue
        try:
            writer.flush()
        except Exception as exc:  # noqa: BLE001  # at exit: say so, heal re-stores it on the next open
            log.warning("memory-vec: could not store %d pending record(s) at exit: %s", writer.pending_count, exc)


def _after_fork_in_child() -> None:
    global _guard  # noqa: PLW0603  # another thread may have held it at the fork: a new one
    _guard = threading.Lock()
    for writer in list(_writers):
        try:
            writer.after_fork()
        except Exception as exc:  # noqa: BLE001  # a failed restart must not break the fork
            log.error("memory-vec: could not restart a background writer after fork: %s", exc)
