"""A core built before the process forks (a preloaded server app: gunicorn
--preload, a module-level core) keeps working in the child: the parent's
writer thread does not exist there, and SQLite connections must not cross
the fork."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_vec.state.sqlite import SQLiteStateStore
from memory_vec.testing.state_conformance import new_message

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")


def in_child(check: Callable[[], None]) -> None:
    """Run ``check`` in a forked child; fail here if it failed there."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            check()
            code = 0
        except BaseException as exc:  # reported through the exit code
            os.write(2, f"in the child: {exc!r}\n".encode())
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the check failed in the forked child (see stderr)"


def test_sqlite_state_opens_its_own_connection_in_a_forked_child(tmp_path: Path) -> None:
    store = SQLiteStateStore(str(tmp_path / "state.sqlite3"))
    store.append("u1", "s1", [new_message(1)])
    parent = store._conn()

    def child() -> None:
        assert store._conn() is not parent
        assert store.append("u1", "s1", [new_message(2)]) == [2]

    in_child(child)
    assert [m.id for m in store.load("u1", "s1").messages] == ["m1", "m2"]
    store.close()


def test_a_forked_child_folds_on_a_thread_of_its_own() -> None:
    """Forked while the parent's fold worker was busy: the child's folds still run."""
    import threading

    from memory_vec._model.scope import Scope
    from memory_vec._pipelines.background import BackgroundFolds

    started, release = threading.Event(), threading.Event()
    folded: list[str] = []

    def fold(scope: Scope) -> None:
        if os.getpid() == parent:
            started.set()
            release.wait(10)
        folded.append(scope.session_id)

    parent = os.getpid()
    folds = BackgroundFolds(fold)
    folds.schedule(Scope("ana", "busy-in-the-parent"))
    assert started.wait(10)
    try:

        def child() -> None:
            assert folds.pending == 0  # the parent's fold is the parent's
            assert folds.schedule(Scope("ana", "the-childs"))
            assert folds.drain(timeout=10)
            assert folded == ["the-childs"]

        in_child(child)
    finally:
        release.set()
    assert folds.drain(timeout=10) and folded == ["busy-in-the-parent"]
    folds.close()
