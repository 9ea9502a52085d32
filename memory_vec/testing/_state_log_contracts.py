"""Conformance contracts of the per-user keyword versions and the dead letters
(part of :class:`~memory_vec.testing.state_conformance.StateStoreConformance`)."""

from __future__ import annotations

import dataclasses

from memory_vec.state.base import StateStore
from memory_vec.testing._state_support import HOSTILE_IDS, StateSuiteBase, dead_letter, in_threads, new_message

__all__ = ["DeadLetterContracts", "KeywordVersionContracts"]


class KeywordVersionContracts(StateSuiteBase):
    def test_a_read_makes_no_version(self, store: StateStore) -> None:
        assert store.keyword_version("nobody") is None
        assert store.keyword_version("nobody") is None
        assert store.new_keyword_version("nobody", "v1") is None

    def test_new_version_returns_the_one_it_replaced(self, store: StateStore) -> None:
        assert store.new_keyword_version("u1", "v1") is None  # none before
        assert store.keyword_version("u1") == "v1"
        assert store.new_keyword_version("u1", "v2") == "v1"
        assert store.keyword_version("u1") == "v2"

    def test_versions_are_per_user(self, store: StateStore) -> None:
        for n, user in enumerate(HOSTILE_IDS):
            store.new_keyword_version(user, f"v{n}")
        store.new_keyword_version("u", "other")  # must not alias "u:1"
        assert [store.keyword_version(user) for user in HOSTILE_IDS] == [f"v{n}" for n in range(len(HOSTILE_IDS))]

    def test_clear_leaves_the_version_alone(self, store: StateStore) -> None:
        store.append("u1", "s1", [new_message(1)])
        store.new_keyword_version("u1", "v1")
        store.clear("u1", "s1")
        assert store.keyword_version("u1") == "v1"

    def test_threads_swap_versions_atomically(self, store: StateStore) -> None:
        def writer(t: int) -> list[str | None]:
            return [store.new_keyword_version("u1", f"{t}-{i}") for i in range(25)]

        replaced = [v for per_thread in in_threads(8, writer) for v in per_thread]
        self._assert_a_chain(store, replaced, [f"{t}-{i}" for t in range(8) for i in range(25)])

    def test_processes_swap_versions_atomically(self, store: StateStore) -> None:
        replaced = [v for per_process in self.in_processes(store, "version", procs=4, n=30) for v in per_process]
        self._assert_a_chain(store, replaced, [f"p{p}-{i}" for p in range(4) for i in range(30)])

    @staticmethod
    def _assert_a_chain(store: StateStore, replaced: list[str | None], written: list[str]) -> None:
        # Each version was replaced exactly once, except the last: the swaps form one chain.
        assert replaced.count(None) == 1
        assert sorted(v for v in replaced if v is not None) == sorted(set(written) - {store.keyword_version("u1")})

    def test_versions_persist_across_reopen(self, store: StateStore) -> None:
        store.new_keyword_version("u1", "v1")
        with self.reopened(store) as fresh:
            assert fresh.keyword_version("u1") == "v1"
            assert fresh.new_keyword_version("u1", "v2") == "v1"


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
