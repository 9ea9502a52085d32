"""The conformance suite every working-state store passes.

Subclass :class:`StateStoreConformance` and provide:

``store`` (fixture, required)
    Yields an empty store and cleans up afterwards.

``reopen(self, store)`` (hook, needed when ``supports_reopen``)
    A new instance on the same storage (``store`` is already closed).

``subprocess_code(self, store)`` (hook, for ``supports_multiprocess``)
    Python source that, in a fresh interpreter, binds ``store`` to a new
    instance on the same storage.

Example::

    class TestMyStore(StateStoreConformance):
        @pytest.fixture
        def store(self):
            s = MyStore(...)
            yield s
            s.close()
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from ..state.base import NewMessage, StateMessage, StateStore, WorkingState

__all__ = ["StateStoreConformance", "new_message"]

HOSTILE_IDS = ("u:1", "a:b:c", "x' or 1==1", 'q"uote', "用户🙂", "back\\slash")


def new_message(i: int | str, content: str | None = None, **fields: Any) -> NewMessage:
    """A message with deterministic defaults."""
    fields.setdefault("role", "user")
    fields.setdefault("timestamp", 1_700_000_000.123456789 + (i if isinstance(i, int) else 0))
    fields.setdefault("tokens", 3)
    return NewMessage(id=f"m{i}", content=content if content is not None else f"message {i}", **fields)


class StateStoreConformance:
    """Contracts of :class:`~memory_vec.state.base.StateStore`."""

    supports_reopen: ClassVar[bool] = False
    supports_multiprocess: ClassVar[bool] = False

    @pytest.fixture
    def store(self) -> Iterator[StateStore]:
        """Yield an empty store (abstract)."""
        raise NotImplementedError("StateStoreConformance subclasses must define a `store` fixture")

    def reopen(self, store: StateStore) -> StateStore:
        raise NotImplementedError

    def subprocess_code(self, store: StateStore) -> str | None:
        return None

    # --- basics ----------------------------------------------------------------------
    def test_load_of_empty_session(self, store: StateStore) -> None:
        state = store.load("u1", "s1")
        assert (state.user_id, state.session_id, state.summary, state.messages) == ("u1", "s1", "", [])
        assert (state.next_seq, state.folded_through, state.summary_tokens) == (1, 0, 0)
        assert store.sessions("u1") == []

    def test_append_keeps_order_and_assigns_seqs(self, store: StateStore) -> None:
        assert store.append("u1", "s1", [new_message(1), new_message(2, metadata={"k": [1, True, None]})]) == [1, 2]
        assert store.append("u1", "s1", [new_message(3, "日本語 \"q\" 🙂")]) == [3]
        assert store.append("u1", "s1", []) == []
        state = store.load("u1", "s1")
        assert [m.seq for m in state.messages] == [1, 2, 3]
        assert state.messages[1] == StateMessage(2, "m2", "user", "message 2", new_message(2).timestamp, 3,
                                                 {"k": [1, True, None]})
        assert state.messages[2].content == "日本語 \"q\" 🙂"
        assert state.next_seq == 4 and state.recent_tokens == 9

    def test_sessions_and_users_are_separate(self, store: StateStore) -> None:
        for user in HOSTILE_IDS:
            store.append(user, "s:1", [new_message(1, user)])
            store.append(user, "s:2", [new_message(1)])
        store.append("u", "1:s:1", [new_message(7)])  # must not alias user "u:1", session "s:1"
        for user in HOSTILE_IDS:
            assert store.sessions(user) == ["s:1", "s:2"]
            assert [m.content for m in store.load(user, "s:1").messages] == [user]
        assert [m.id for m in store.load("u", "1:s:1").messages] == ["m7"]

    # --- folds --------------------------------------------------------------------------
    def test_commit_fold_is_compare_and_set(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(i) for i in range(1, 6)])
        assert store.commit_fold("u1", "s1", expected_folded_through=0, folded_through=3,
                                 summary="first three", summary_tokens=2)
        # A second planner saw folded_through=0 too: its stale fold must fail.
        assert not store.commit_fold("u1", "s1", expected_folded_through=0, folded_through=4,
                                     summary="stale", summary_tokens=1)
        state = store.load("u1", "s1")
        assert (state.summary, state.summary_tokens, state.folded_through) == ("first three", 2, 3)
        assert [m.seq for m in state.messages] == [4, 5]
        assert store.append("u1", "s1", [new_message(6)]) == [6]  # seqs never restart
        assert store.commit_fold("u1", "s1", expected_folded_through=3, folded_through=6,
                                 summary="all", summary_tokens=1)
        assert store.load("u1", "s1").messages == []

    def test_concurrent_folds_only_one_wins(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(i) for i in range(1, 11)])
        results: list[bool] = []
        barrier = threading.Barrier(8)

        def fold(t: int) -> None:
            barrier.wait()
            results.append(store.commit_fold("u1", "s1", expected_folded_through=0, folded_through=5,
                                             summary=f"by {t}", summary_tokens=1))

        threads = [threading.Thread(target=fold, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert sorted(results) == [False] * 7 + [True]
        assert [m.seq for m in store.load("u1", "s1").messages] == [6, 7, 8, 9, 10]

    def test_set_summary(self, store: StateStore) -> None:
        store.set_summary("u1", "s1", "hello", 1)
        state = store.load("u1", "s1")
        assert (state.summary, state.summary_tokens, state.next_seq) == ("hello", 1, 1)
        assert store.append("u1", "s1", [new_message(1)]) == [1]

    # --- whole-session writes -----------------------------------------------------------------
    def test_replace(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(i) for i in range(1, 4)])
        msgs = [StateMessage(8, "x8", "assistant", "eight", 1.5, 2, {"a": 1}),
                StateMessage(9, "x9", "user", "nine", 2.5, 1)]
        store.replace(WorkingState("u1", "s1", summary="S", summary_tokens=1, messages=msgs, next_seq=10,
                                   folded_through=7))
        state = store.load("u1", "s1")
        assert (state.summary, state.next_seq, state.folded_through) == ("S", 10, 7)
        assert state.messages == msgs
        assert store.append("u1", "s1", [new_message(4)]) == [10]

    def test_clear(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(1)])
        store.append("u1", "s2", [new_message(1)])
        assert store.clear("u1", "s1") == 1
        assert store.clear("u1", "s1") == 0
        assert store.load("u1", "s1").messages == []
        assert store.sessions("u1") == ["s2"]
        assert store.append("u1", "s1", [new_message(1)]) == [1]

    def test_persists_across_reopen(self, store: StateStore) -> None:
        if not self.supports_reopen:
            pytest.skip("store does not persist")
        store.append("u1", "s1", [new_message(1), new_message(2)])
        store.commit_fold("u1", "s1", expected_folded_through=0, folded_through=1, summary="one",
                          summary_tokens=1)
        before = store.load("u1", "s1")
        store.close()
        fresh = self.reopen(store)
        try:
            after = fresh.load("u1", "s1")
            assert (after.summary, after.messages, after.next_seq, after.folded_through) == (
                before.summary, before.messages, before.next_seq, before.folded_through)
            assert fresh.append("u1", "s1", [new_message(3)]) == [3]
        finally:
            fresh.close()

    # --- concurrency ---------------------------------------------------------------------------
    def test_threads_append_concurrently(self, store: StateStore) -> None:
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def writer(t: int) -> None:
            try:
                barrier.wait()
                for i in range(25):
                    store.append("u1", "s1", [new_message(f"{t}-{i}"), new_message(f"{t}-{i}b")])
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert not errors, errors
        self._assert_complete(store.load("u1", "s1"), [f"{t}-{i}" for t in range(8) for i in range(25)])

    def test_processes_append_concurrently(self, store: StateStore) -> None:
        if not self.supports_multiprocess:
            pytest.skip("store is single-process")
        code = self.subprocess_code(store)
        if code is None:
            pytest.skip("subprocess_code() not provided")
        procs = [subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        jobs = [json.dumps({"code": code, "prefix": f"p{p}", "n": 30}) for p in range(4)]
        outputs = [proc.communicate(job, timeout=120) for proc, job in zip(procs, jobs)]
        for proc, (_, err) in zip(procs, outputs):
            assert proc.returncode == 0, err[-3000:]
        self._assert_complete(store.load("u1", "s1"), [f"p{p}-{i}" for p in range(4) for i in range(30)])

    @staticmethod
    def _assert_complete(state: WorkingState, keys: list[str]) -> None:
        ids = [m.id for m in state.messages]
        assert sorted(ids) == sorted([f"m{k}" for k in keys] + [f"m{k}b" for k in keys])  # none lost or doubled
        seqs = [m.seq for m in state.messages]
        assert seqs == sorted(set(seqs)) == list(range(1, len(seqs) + 1))
        assert state.next_seq == len(seqs) + 1
        # Each writer's pair was appended in one call: consecutive seqs.
        by_id = {m.id: m.seq for m in state.messages}
        assert all(by_id[f"m{k}b"] == by_id[f"m{k}"] + 1 for k in keys)


_CHILD = textwrap.dedent("""
    import json, sys
    from memory_vec.testing.state_conformance import new_message
    job = json.loads(sys.stdin.read())
    ns = {}
    exec(job["code"], ns)
    store = ns["store"]
    for i in range(job["n"]):
        store.append("u1", "s1", [new_message(f"{job['prefix']}-{i}"), new_message(f"{job['prefix']}-{i}b")])
    store.close()
""")
