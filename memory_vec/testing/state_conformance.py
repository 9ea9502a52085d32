"""The conformance suite every working-state store passes.

Subclass :class:`StateStoreConformance` and provide:

``store`` (fixture, required)
    Yields an empty store and cleans up afterwards.

``reopen(self, store)`` (hook, needed when ``supports_reopen``)
    A new instance on the same storage (``store`` is already closed).

``subprocess_code(self, store)`` (hook, for ``supports_multiprocess``)
    Python source that, in a fresh interpreter, binds ``store`` to a new
    instance on the same storage.

Contracts: sessions (append, compare-and-set folds on ``folded_through`` and
the summary, whole-session writes), the per-user keyword versions (made once,
swapped atomically) and dead letters, each under threads and, where
supported, processes and reopening.

Example::

    class TestMyStore(StateStoreConformance):
        @pytest.fixture
        def store(self):
            s = MyStore(...)
            yield s
            s.close()
"""

from __future__ import annotations

import dataclasses

from memory_vec.state.base import NewMessage, StateMessage, StateStore, WorkingState
from memory_vec.testing._state_log_contracts import DeadLetterContracts, KeywordVersionContracts
from memory_vec.testing._state_support import HOSTILE_IDS, dead_letter, in_threads, new_message

__all__ = ["StateStoreConformance", "dead_letter", "in_threads", "new_message"]


class StateStoreConformance(KeywordVersionContracts, DeadLetterContracts):
    """Contracts of :class:`~memory_vec.state.base.StateStore`: sessions here,
    the keyword versions and dead letters in the classes it derives from."""

    # --- basics ----------------------------------------------------------------------
    def test_implements_the_protocol(self, store: StateStore) -> None:
        assert isinstance(store, StateStore)
        assert isinstance(store.name, str) and store.name

    def test_load_of_empty_session(self, store: StateStore) -> None:
        state = store.load("u1", "s1")
        assert (state.user_id, state.session_id, state.summary, state.messages) == ("u1", "s1", "", [])
        assert (state.next_seq, state.folded_through, state.summary_tokens) == (1, 0, 0)
        assert store.sessions("u1") == []

    def test_append_keeps_order_and_assigns_seqs(self, store: StateStore) -> None:
        assert store.append("u1", "s1", [new_message(1), new_message(2, metadata={"k": [1, True, None]})]) == [1, 2]
        assert store.append("u1", "s1", [new_message(3, '日本語 "q" 🙂')]) == [3]
        assert store.append("u1", "s1", []) == []
        state = store.load("u1", "s1")
        assert [m.seq for m in state.messages] == [1, 2, 3]
        assert state.messages[1] == StateMessage(
            2, "m2", "user", "message 2", new_message(2).timestamp, 3, {"k": [1, True, None]}
        )
        assert state.messages[2].content == '日本語 "q" 🙂'
        assert state.next_seq == 4 and state.recent_tokens == 9

    def test_append_starts_no_lower_than_first_seq(self, store: StateStore) -> None:
        # A state lost while its messages stayed stored goes on past them; first_seq never lowers.
        assert store.append("u1", "s1", [new_message(1), new_message(2)], first_seq=41) == [41, 42]
        assert store.append("u1", "s1", [new_message(3)], first_seq=1) == [43]
        assert store.append("u1", "s1", [new_message(4)], first_seq=10) == [44]
        assert store.append("u1", "s2", [new_message(5)]) == [1]
        state = store.load("u1", "s1")
        assert [m.seq for m in state.messages] == [41, 42, 43, 44] and state.next_seq == 45

    def test_drop_messages_removes_only_those_of_that_session(self, store: StateStore) -> None:
        odd = 'id, with "quotes" ,and: colons 日本'  # an imported id: matched whole, never by a part
        store.append("u1", "s1", [new_message(1), new_message(2), new_message(3), new_message(4)])
        store.append("u1", "s1", [NewMessage(odd, "user", "x", 1.0, 1, {})])
        store.append("u1", "s2", [new_message(2)])
        store.append("u2", "s1", [new_message(2)])
        assert store.drop_messages("u1", "s1", ["m2", "m4", "m2", "absent", "m"]) == 2
        assert store.drop_messages("u1", "s1", [odd]) == 1
        assert store.drop_messages("u1", "nothing", ["m1"]) == 0 and store.drop_messages("u1", "s1", []) == 0
        assert [m.id for m in store.load("u1", "s1").messages] == ["m1", "m3"]
        assert [m.id for m in store.load("u1", "s2").messages] == ["m2"]
        assert [m.id for m in store.load("u2", "s1").messages] == ["m2"]
        assert store.append("u1", "s1", [new_message(5)]) == [6]  # seqs go on
        assert store.sessions("u1") == ["s1", "s2"]

    def test_edit_message_replaces_it_in_place_once(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(1), new_message(2), new_message(3)])
        store.append("u2", "s1", [new_message(2)])
        old = store.load("u1", "s1").messages[1]
        edited = StateMessage(old.seq, "m2-edited", old.role, "the edited text 日本", old.timestamp, 5, old.metadata)
        assert store.edit_message("u1", "s1", old, edited)
        assert store.load("u1", "s1").messages == [
            store.load("u1", "s1").messages[0],
            edited,
            store.load("u1", "s1").messages[2],
        ]
        assert not store.edit_message("u1", "s1", old, edited)  # compare-and-set: the old one is gone
        assert not store.edit_message("u1", "s1", edited, dataclasses.replace(edited, seq=9))  # never another seq
        assert store.load("u2", "s1").messages[0].id == "m2"  # another user's session untouched
        assert store.append("u1", "s1", [new_message(4)]) == [4]

    def test_forget_user_leaves_nothing_of_the_user(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(1)])
        store.append("u1", "s2", [new_message(2)])
        store.append("u2", "s1", [new_message(3)])
        store.new_keyword_version("u1", "v1")
        store.forget_user("u1")
        assert store.sessions("u1") == [] and store.load("u1", "s1").messages == []
        assert store.keyword_version("u1") is None  # no version left: a reader of v1 rebuilds
        assert store.sessions("u2") == ["s1"] and [m.id for m in store.load("u2", "s1").messages] == ["m3"]

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
        assert store.commit_fold(
            "u1", "s1", expected_folded_through=0, folded_through=3, summary="first three", summary_tokens=2
        )
        # A second planner saw folded_through=0 too: its stale fold must fail.
        assert not store.commit_fold(
            "u1", "s1", expected_folded_through=0, folded_through=4, summary="stale", summary_tokens=1
        )
        state = store.load("u1", "s1")
        assert (state.summary, state.summary_tokens, state.folded_through) == ("first three", 2, 3)
        assert [m.seq for m in state.messages] == [4, 5]
        assert store.append("u1", "s1", [new_message(6)]) == [6]  # seqs never restart
        assert store.commit_fold(
            "u1", "s1", expected_folded_through=3, folded_through=6, summary="all", summary_tokens=1
        )
        assert store.load("u1", "s1").messages == []

    def test_a_fold_planned_before_a_clear_is_not_committed(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(i) for i in range(1, 9)])
        store.clear("u1", "s1")  # forget() while a background fold summarised them
        assert not store.commit_fold(
            "u1",
            "s1",
            expected_folded_through=0,
            folded_through=8,
            summary="the forgotten turns",
            summary_tokens=3,
            expected_summary="",
        )
        state = store.load("u1", "s1")
        assert (state.summary, state.folded_through, state.next_seq) == ("", 0, 1)
        assert store.sessions("u1") == []  # nor is the forgotten session made again

    def test_concurrent_folds_only_one_wins(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(i) for i in range(1, 11)])
        results = in_threads(
            8,
            lambda t: store.commit_fold(
                "u1", "s1", expected_folded_through=0, folded_through=5, summary=f"by {t}", summary_tokens=1
            ),
        )
        assert sorted(results) == [False] * 7 + [True]
        assert [m.seq for m in store.load("u1", "s1").messages] == [6, 7, 8, 9, 10]

    def test_commit_fold_checks_the_expected_summary(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(i) for i in range(1, 5)])
        assert store.commit_fold(
            "u1",
            "s1",
            expected_folded_through=0,
            folded_through=2,
            summary='S "1" 🙂',
            summary_tokens=2,
            expected_summary="",
        )  # a new session's summary is ""
        # Same fold position, another summary: a patch planned on a stale summary fails.
        assert not store.commit_fold(
            "u1",
            "s1",
            expected_folded_through=2,
            folded_through=2,
            summary="patched",
            summary_tokens=1,
            expected_summary="S 1",
        )
        state = store.load("u1", "s1")
        assert (state.summary, state.summary_tokens, [m.seq for m in state.messages]) == ('S "1" 🙂', 2, [3, 4])
        assert store.commit_fold(
            "u1",
            "s1",
            expected_folded_through=2,
            folded_through=2,
            summary="patched",
            summary_tokens=1,
            expected_summary='S "1" 🙂',
        )
        # Both conditions hold together: the right summary with a stale position fails.
        assert not store.commit_fold(
            "u1",
            "s1",
            expected_folded_through=0,
            folded_through=3,
            summary="x",
            summary_tokens=1,
            expected_summary="patched",
        )
        # None checks the position only.
        assert store.commit_fold(
            "u1", "s1", expected_folded_through=2, folded_through=3, summary="folded", summary_tokens=1
        )
        state = store.load("u1", "s1")
        assert (state.summary, state.folded_through, [m.seq for m in state.messages]) == ("folded", 3, [4])

    def test_concurrent_summary_patches_only_one_wins(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(1)])
        store.set_summary("u1", "s1", "base", 1)
        results = in_threads(
            8,
            lambda t: store.commit_fold(
                "u1",
                "s1",
                expected_folded_through=0,
                folded_through=0,
                summary=f"patch {t}",
                summary_tokens=2,
                expected_summary="base",
            ),
        )
        assert sorted(results) == [False] * 7 + [True]
        state = store.load("u1", "s1")
        assert state.summary == f"patch {results.index(True)}"
        assert [m.id for m in state.messages] == ["m1"]

    def test_set_summary(self, store: StateStore) -> None:
        store.set_summary("u1", "s1", "hello", 1)
        state = store.load("u1", "s1")
        assert (state.summary, state.summary_tokens, state.next_seq) == ("hello", 1, 1)
        assert store.append("u1", "s1", [new_message(1)]) == [1]

    # --- whole-session writes -----------------------------------------------------------------
    def test_replace(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(i) for i in range(1, 4)])
        msgs = [
            StateMessage(8, "x8", "assistant", "eight", 1.5, 2, {"a": 1}),
            StateMessage(9, "x9", "user", "nine", 2.5, 1),
        ]
        store.replace(
            WorkingState("u1", "s1", summary="S", summary_tokens=1, messages=msgs, next_seq=10, folded_through=7)
        )
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
        store.append("u1", "s1", [new_message(1), new_message(2)])
        store.commit_fold("u1", "s1", expected_folded_through=0, folded_through=1, summary="one", summary_tokens=1)
        before = store.load("u1", "s1")
        with self.reopened(store) as fresh:
            after = fresh.load("u1", "s1")
            assert (after.summary, after.messages, after.next_seq, after.folded_through) == (
                before.summary,
                before.messages,
                before.next_seq,
                before.folded_through,
            )
            assert fresh.append("u1", "s1", [new_message(3)]) == [3]

    # --- concurrency ---------------------------------------------------------------------------
    def test_threads_append_concurrently(self, store: StateStore) -> None:
        def writer(t: int) -> None:
            for i in range(25):
                store.append("u1", "s1", [new_message(f"{t}-{i}"), new_message(f"{t}-{i}b")])

        in_threads(8, writer)
        self._assert_complete(store.load("u1", "s1"), [f"{t}-{i}" for t in range(8) for i in range(25)])

    def test_processes_append_concurrently(self, store: StateStore) -> None:
        self.in_processes(store, "append", procs=4, n=30)
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
