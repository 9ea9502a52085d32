"""Folds that run off the turn: one worker thread per engine.

An LLM summary costs seconds; a turn should cost its embeddings. When a fold
is due and the summarizer is slow (``summary_in_background``), the turn only
notes the session and returns; the worker folds it soon after. Nothing is
lost while a fold waits: the turns stay in the working state (the
write-ahead log) until a fold commits (compare-and-set), the prompt meanwhile
shows the newest turns within budget, and every turn is in vector recall
anyway. A fold that had not run when the process died is due again on that
session's next turn. A forked child starts with nothing due and a thread of
its own: the parent's folds are the parent's.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

from memory_vec._model.scope import Scope

__all__ = ["BackgroundFolds"]

log = logging.getLogger("memory_vec")


class BackgroundFolds:
    """Sessions with a fold due, folded one at a time by a daemon thread.

    A session noted twice before its fold runs is folded once (the fold
    takes everything due). The thread starts on demand and ends when nothing
    is due, so a core dropped without ``close`` (a per-request core) leaves
    no thread behind. ``drain`` waits until nothing is due or running
    (``MemoryCore.flush``); ``close`` drains, then stops: what is still due
    stays due in the working state.
    """

    def __init__(self, fold: Callable[[Scope], None], *, name: str = "memory-vec-folds") -> None:
        self._fold = fold
        self._name = name
        self._due: OrderedDict[tuple[str, str], Scope] = OrderedDict()
        self._running = 0
        self._closed = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        _all_folds.add(self)

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._due) + self._running

    def schedule(self, scope: Scope) -> bool:
        """Note that ``scope``'s session has a fold due; False once closed
        (the caller folds inline)."""
        with self._cond:
            if self._closed:
                return False
            self._due[(scope.user_id, scope.session_id)] = scope
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return True

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every noted fold has run; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._due and not self._running, timeout)

    def close(self, timeout: float | None = 60.0) -> bool:
        """Run what is due (up to ``timeout``), then stop the worker. What
        did not run stays due in the working state."""
        drained = self.drain(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and drained and thread is not threading.current_thread():
            thread.join(timeout)
        return drained

    def _work(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    self._due.clear()  # still due in the working state: folded on the session's next turn
                if not self._due:
                    self._thread = None
                    self._cond.notify_all()
                    return
                _, scope = self._due.popitem(last=False)
                self._running += 1
            try:
                self._fold(scope)
            except Exception:  # a failed fold keeps the old summary; due again next turn
                log.exception("memory-vec: background fold of %s/%s failed", scope.user_id, scope.session_id)
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()

    def _after_fork(self) -> None:
        # The parent's worker does not exist here and may have held the condition at the fork.
        self._due, self._running, self._thread, self._cond = OrderedDict(), 0, None, threading.Condition()


_all_folds: weakref.WeakSet[BackgroundFolds] = weakref.WeakSet()


def _folds_of_its_own() -> None:
    for folds in list(_all_folds):
        folds._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_folds_of_its_own)
