"""Conformance contracts of the leases a store shared by processes keeps for
background writers (``mark_unflushed`` and friends, see
:mod:`memory_vec._storage.unflushed`). A store without them is skipped: its engine
writes inline, or is owned by one process."""

from __future__ import annotations

import time
from typing import Any

import pytest

from memory_vec.testing._state_support import HOSTILE_IDS, StateSuiteBase, in_threads


def _leasing(store: Any) -> Any:
    if not callable(getattr(store, "mark_unflushed", None)):
        pytest.skip("store keeps no leases")
    return store


class LeaseContracts(StateSuiteBase):
    def test_a_lease_is_read_back_with_its_deadline(self, store: Any) -> None:
        store = _leasing(store)
        before = time.time()
        store.mark_unflushed([("u1", "w1 s1"), ("u1", "w1 s2"), ("u2", "w2 s1")], 5.0)
        now, marks = store.unflushed_marks("u1")
        assert sorted(m for m, _ in marks) == ["w1 s1", "w1 s2"]
        assert abs(now - time.time()) < 2.0  # the store's clock, near this host's
        assert all(now + 3.0 < until <= now + 5.5 for _, until in marks)
        assert [m for m, _ in store.unflushed_marks("u2")[1]] == ["w2 s1"]
        assert store.unflushed_marks("nobody")[1] == []
        assert time.time() - before < 5.0

    def test_marking_again_renews(self, store: Any) -> None:
        store = _leasing(store)
        store.mark_unflushed([("u1", "w1 s1")], 0.5)
        [(_, first)] = store.unflushed_marks("u1")[1]
        store.mark_unflushed([("u1", "w1 s1")], 30.0)
        [(_, renewed)] = store.unflushed_marks("u1")[1]
        assert renewed > first + 20

    def test_clear_drops_only_the_named_marks(self, store: Any) -> None:
        store = _leasing(store)
        store.mark_unflushed([("u1", "w1 s1"), ("u1", "w2 s1"), ("u2", "w1 s1")], 5.0)
        store.clear_unflushed([("u1", "w1 s1"), ("u1", "never marked")])
        store.clear_unflushed([])
        assert [m for m, _ in store.unflushed_marks("u1")[1]] == ["w2 s1"]
        assert [m for m, _ in store.unflushed_marks("u2")[1]] == ["w1 s1"]

    def test_clear_expired_spares_a_live_or_renewed_lease(self, store: Any) -> None:
        store = _leasing(store)
        store.mark_unflushed([("u1", "dead s1"), ("u1", "renewed s1")], 0.05)
        store.mark_unflushed([("u1", "live s1")], 30.0)
        time.sleep(0.2)
        store.mark_unflushed([("u1", "renewed s1")], 30.0)  # renewed after a reader saw it expired
        store.clear_expired_unflushed("u1", ["dead s1", "renewed s1", "live s1"])
        assert sorted(m for m, _ in store.unflushed_marks("u1")[1]) == ["live s1", "renewed s1"]

    def test_threads_mark_and_clear_concurrently(self, store: Any) -> None:
        store = _leasing(store)

        def worker(t: int) -> None:
            for i in range(20):
                store.mark_unflushed([("u1", f"w{t} s{i}")], 30.0)
                if i % 2:
                    store.clear_unflushed([("u1", f"w{t} s{i}")])
                    store.unflushed_marks("u1")

        in_threads(8, worker)
        assert sorted(m for m, _ in store.unflushed_marks("u1")[1]) == sorted(
            f"w{t} s{i}" for t in range(8) for i in range(0, 20, 2)
        )

    def test_hostile_ids_are_kept_apart(self, store: Any) -> None:
        store = _leasing(store)
        store.mark_unflushed([(u, f"w {u}") for u in HOSTILE_IDS], 5.0)
        for user in HOSTILE_IDS:
            assert [m for m, _ in store.unflushed_marks(user)[1]] == [f"w {user}"]
        store.clear_unflushed([(HOSTILE_IDS[0], f"w {HOSTILE_IDS[0]}")])
        assert store.unflushed_marks(HOSTILE_IDS[0])[1] == []
        assert store.unflushed_marks(HOSTILE_IDS[1])[1] != []

    def test_a_lease_outlives_its_instance(self, store: Any) -> None:
        """Another process reads it: a new instance on the same storage sees it."""
        store = _leasing(store)
        store.mark_unflushed([("u1", "w1 s1")], 30.0)
        with self.reopened(store) as fresh:
            assert [m for m, _ in _leasing(fresh).unflushed_marks("u1")[1]] == ["w1 s1"]
