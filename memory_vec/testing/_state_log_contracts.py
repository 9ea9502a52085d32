"""Conformance contracts of the per-user keyword log and the dead letters
(part of :class:`~memory_vec.testing.state_conformance.StateStoreConformance`)."""

from __future__ import annotations

import dataclasses

from memory_vec.state.base import KEYWORD_LOG_LIMIT, KeywordChanges, StateStore
from memory_vec.testing._state_support import HOSTILE_IDS, StateSuiteBase, dead_letter, in_threads, new_message

__all__ = ["DeadLetterContracts", "KeywordLogContracts"]


class KeywordLogContracts(StateSuiteBase):
    def test_keyword_log_of_unknown_user(self, store: StateStore) -> None:
        assert store.keyword_changes("nobody", after=0, generation=0) == KeywordChanges(0, 0, ())
        # A reader that has never read (generation -1) is told the position to rebuild from.
        assert store.keyword_changes("nobody", after=0, generation=-1) == KeywordChanges(0, 0, None)
        assert store.log_writes("nobody", []) == 0  # nothing written, nothing logged

    def test_keyword_log_counts_and_reports_changes(self, store: StateStore) -> None:
        assert store.log_writes("u1", ["a", "b"]) == 2
        assert store.log_writes("u1", ["c", "a"]) == 4  # an id may repeat (rewritten)
        assert store.log_writes("u1", []) == 4
        assert store.keyword_changes("u1", after=0, generation=0) == KeywordChanges(0, 4, ("a", "b", "c", "a"))
        assert store.keyword_changes("u1", after=2, generation=0).ids == ("c", "a")
        assert store.keyword_changes("u1", after=4, generation=0) == KeywordChanges(0, 4, ())
        # A position the log never reached (a log lost since): rebuild.
        assert store.keyword_changes("u1", after=5, generation=0).ids is None

    def test_keyword_logs_are_per_user(self, store: StateStore) -> None:
        for n, user in enumerate(HOSTILE_IDS, 1):
            assert store.log_writes(user, [f"{user}-{i}" for i in range(n)]) == n
        store.reset_keywords("u")  # must not alias "u:1"
        for n, user in enumerate(HOSTILE_IDS, 1):
            assert store.keyword_changes(user, after=0, generation=0) == KeywordChanges(
                0, n, tuple(f"{user}-{i}" for i in range(n))
            )

    def test_reset_bumps_the_generation(self, store: StateStore) -> None:
        store.log_writes("u1", ["a", "b", "c"])
        assert store.reset_keywords("u1") == 1
        assert store.keyword_changes("u1", after=3, generation=0) == KeywordChanges(1, 3, None)
        assert store.keyword_changes("u1", after=3, generation=1) == KeywordChanges(1, 3, ())
        assert store.log_writes("u1", ["d"]) == 4  # counters never go back
        assert store.keyword_changes("u1", after=3, generation=1).ids == ("d",)
        assert store.reset_keywords("u1") == 2
        assert store.reset_keywords("u2") == 1  # an unknown user starts at generation 0
        assert store.keyword_changes("u2", after=0, generation=1) == KeywordChanges(1, 0, ())

    def test_clear_leaves_the_keyword_log_alone(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(1)])
        store.log_writes("u1", ["a"])
        store.clear("u1", "s1")
        assert store.keyword_changes("u1", after=0, generation=0) == KeywordChanges(0, 1, ("a",))

    def test_keyword_log_is_trimmed(self, store: StateStore) -> None:
        limit = KEYWORD_LOG_LIMIT
        store.log_writes("u1", [f"a{i}" for i in range(10)])
        assert store.log_writes("u1", [f"b{i}" for i in range(limit - 5)]) == limit + 5
        # Positions 1..5 are gone: a reader behind them rebuilds.
        assert store.keyword_changes("u1", after=0, generation=0).ids is None
        assert store.keyword_changes("u1", after=4, generation=0).ids is None
        assert store.keyword_changes("u1", after=5, generation=0).ids == (
            *(f"a{i}" for i in range(5, 10)),
            *(f"b{i}" for i in range(limit - 5)),
        )
        assert store.keyword_changes("u1", after=limit + 4, generation=0).ids == (f"b{limit - 6}",)
        # One write larger than the limit keeps its newest ids.
        assert store.log_writes("u2", [f"c{i}" for i in range(limit + 3)]) == limit + 3
        assert store.keyword_changes("u2", after=2, generation=0).ids is None
        assert store.keyword_changes("u2", after=3, generation=0).ids == tuple(f"c{i}" for i in range(3, limit + 3))

    def test_threads_log_concurrently(self, store: StateStore) -> None:
        def writer(t: int) -> list[int]:
            return [store.log_writes("u1", [f"{t}-{i}", f"{t}-{i}b"]) for i in range(25)]

        counters = in_threads(8, writer)
        self._assert_log_complete(store, counters, [f"{t}-{i}" for t in range(8) for i in range(25)])

    def test_processes_log_concurrently(self, store: StateStore) -> None:
        counters = self.in_processes(store, "log", procs=4, n=30)
        self._assert_log_complete(store, counters, [f"p{p}-{i}" for p in range(4) for i in range(30)])

    @staticmethod
    def _assert_log_complete(store: StateStore, counters: list[list[int]], keys: list[str]) -> None:
        flat = [c for per_writer in counters for c in per_writer]
        assert sorted(flat) == list(range(2, 2 * len(keys) + 1, 2))  # each call got its own position
        assert all(c == sorted(c) for c in counters)
        changes = store.keyword_changes("u1", after=0, generation=0)
        assert changes.counter == 2 * len(keys) and changes.ids is not None
        ids = list(changes.ids)
        assert sorted(ids) == sorted(keys + [f"{k}b" for k in keys])  # none lost or doubled
        where = {record_id: pos for pos, record_id in enumerate(ids, 1)}
        # A call's ids are contiguous and end at the counter it returned.
        assert {where[f"{k}b"] for k in keys} == set(flat)
        assert all(where[f"{k}b"] == where[k] + 1 for k in keys)

    def test_keyword_log_persists_across_reopen(self, store: StateStore) -> None:
        store.log_writes("u1", ["a", "b"])
        store.reset_keywords("u1")
        store.log_writes("u1", ["c"])
        with self.reopened(store) as fresh:
            assert fresh.keyword_changes("u1", after=2, generation=1) == KeywordChanges(1, 3, ("c",))
            assert fresh.log_writes("u1", ["d"]) == 4


class DeadLetterContracts(StateSuiteBase):
    def test_no_dead_letters(self, store: StateStore) -> None:
        assert store.dead_letters() == []
        assert store.dead_letters("u1") == []
        store.add_dead_letters([])
        assert store.remove_dead_letters([]) == 0
        assert store.remove_dead_letters(["missing"]) == 0

    def test_dead_letters_listed_by_failure_time(self, store: StateStore) -> None:
        late = dead_letter("r1", "u1", failed_at=3.0)
        first = dead_letter("r:2", "u2", failed_at=1.0, vector=None, error="日本語 error")
        middle = dead_letter("r3", "u1", failed_at=2.0, record={})
        store.add_dead_letters([late, first])
        store.add_dead_letters([middle])
        assert store.dead_letters() == [first, middle, late]
        assert store.dead_letters("u1") == [middle, late]
        assert store.dead_letters("u2") == [first]
        assert store.dead_letters("nobody") == []

    def test_dead_letters_upsert_by_record_id(self, store: StateStore) -> None:
        store.add_dead_letters([dead_letter("r1", "u1", failed_at=1.0), dead_letter("r2", "u1", failed_at=2.0)])
        again = dataclasses.replace(dead_letter("r1", "u1"), error="failed again", failed_at=5.0, vector=[2.0])
        store.add_dead_letters([again])
        assert [(d.record_id, d.error) for d in store.dead_letters()] == [
            ("r2", "rejected: dimension mismatch"),
            ("r1", "failed again"),
        ]
        assert store.dead_letters()[1] == again

    def test_remove_dead_letters(self, store: StateStore) -> None:
        letters = [
            dead_letter(record_id, user, failed_at=float(i))
            for i, (record_id, user) in enumerate(zip(HOSTILE_IDS, reversed(HOSTILE_IDS)))
        ]
        store.add_dead_letters(letters)
        assert store.remove_dead_letters([HOSTILE_IDS[0], "missing", HOSTILE_IDS[0], HOSTILE_IDS[2]]) == 2
        assert store.dead_letters() == [letters[1], *letters[3:]]
        assert store.dead_letters(HOSTILE_IDS[-2]) == [letters[1]]

    def test_threads_add_dead_letters(self, store: StateStore) -> None:
        def writer(t: int) -> None:
            for i in range(10):
                store.add_dead_letters([dead_letter(f"{t}-{i}", f"u{t}", failed_at=t + i / 100)])

        in_threads(8, writer)
        assert [d.record_id for d in store.dead_letters()] == [f"{t}-{i}" for t in range(8) for i in range(10)]
        assert len(store.dead_letters("u3")) == 10

    def test_dead_letters_persist_across_reopen(self, store: StateStore) -> None:
        letters = [dead_letter("r1", failed_at=2.0), dead_letter("r2", "u2", failed_at=1.0)]
        store.add_dead_letters(letters)
        with self.reopened(store) as fresh:
            assert fresh.dead_letters() == [letters[1], letters[0]]
            assert fresh.remove_dead_letters(["r1"]) == 1
