"""One read of a user's keyword log per operation, shared by the replica's copy
and the keyword index (memory_vec/_storage/keywords.py ``log_changes``): with the
working state in Redis every read is a round trip on the turn's path.

Two :class:`Store` objects over one backend and one working-state store stand
for two worker processes (as in test_replica.py); the state store counts its
log reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memory_vec._model.records import MemoryRecord
from memory_vec._storage.keywords import KeywordIndex, first_asks, fresh_view, log_changes, one_read_view, read_ahead
from memory_vec._storage.store import Store
from memory_vec.backends import RecordFilter
from memory_vec.backends.memory import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.state.base import KeywordChanges
from tests.engine.test_replica import DIM, _Server, two_workers_over


class CountingState(InMemoryStateStore):
    """The in-process state store, counting the log reads it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.log_reads: list[str] = []

    def keyword_changes(self, user_id: str, *, after: int, generation: int) -> KeywordChanges:
        self.log_reads.append(user_id)
        return super().keyword_changes(user_id, after=after, generation=generation)


def _records(user: str, ids: Sequence[str]) -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=i,
            text=f"note {i} about the harbour",
            role="user",
            user_id=user,
            session_id="s1",
            timestamp=1_700_000_000.0 + n,
            seq=n + 1,
        )
        for n, i in enumerate(ids)
    ]


def test_a_later_position_is_cut_from_the_operations_earlier_reply() -> None:
    state = CountingState()
    state.log_writes("u1", ["a", "b", "c"])
    with one_read_view():
        assert log_changes(state, [("u1", 0, 0)]) == [KeywordChanges(0, 3, ("a", "b", "c"))]
        assert log_changes(state, [("u1", 2, 0), ("u1", 3, 0)]) == [
            KeywordChanges(0, 3, ("c",)),
            KeywordChanges(0, 3, ()),
        ]
        assert state.log_reads == ["u1"]
        log_changes(state, [("u1", 0, 1)])  # another generation: not known, read
        log_changes(state, [("u2", 0, 0)])  # another log
        assert state.log_reads == ["u1", "u1", "u2"]
        state.log_writes("u1", ["d"])
        fresh_view()  # after a wait for other writers: read again
        assert log_changes(state, [("u1", 3, 0)]) == [KeywordChanges(0, 4, ("d",))]
    reads = len(state.log_reads)
    log_changes(state, [("u1", 0, 0)])
    log_changes(state, [("u1", 0, 0)])
    assert len(state.log_reads) == reads + 2  # outside an operation every call reads


def test_a_position_before_the_reply_is_read_not_guessed() -> None:
    state = CountingState()
    state.log_writes("u1", ["a", "b"])
    with one_read_view():
        log_changes(state, [("u1", 1, 0)])
        assert log_changes(state, [("u1", 0, 0)]) == [KeywordChanges(0, 2, ("a", "b"))]
    assert state.log_reads == ["u1", "u1"]


def test_replies_read_ahead_answer_the_operations_reads_from_their_positions_on() -> None:
    state = CountingState()
    state.log_writes("u1", ["a", "b", "c"])
    asks = first_asks([("u1", 2, 0), ("u1", 1, 0), ("u2", 0, 0)])  # a copy and an index of u1, at two positions
    assert asks == [("u1", 1, 0), ("u2", 0, 0)]
    replies = [state.keyword_changes(key, after=after, generation=generation) for key, after, generation in asks]
    read_ahead(asks, replies)  # outside an operation: nothing to answer
    with one_read_view():
        read_ahead(asks, replies)
        assert log_changes(state, [("u1", 2, 0), ("u2", 0, 0)]) == [
            KeywordChanges(0, 3, ("c",)),
            KeywordChanges(0, 0, ()),
        ]
        assert log_changes(state, [("u1", 0, 0)]) == [KeywordChanges(0, 3, ("a", "b", "c"))]  # before: read
        read_ahead([("u1", 3, 0)], [KeywordChanges(0, 3, ())])  # an older reply never replaces the view's
        assert log_changes(state, [("u1", 0, 0)]) == [KeywordChanges(0, 3, ("a", "b", "c"))]
    assert state.log_reads == ["u1", "u2", "u1"]


def test_a_reply_read_before_this_processs_appends_answers_a_reader_past_only_them() -> None:
    """A turn's logs are read ahead while this process's writer may still be storing the turn
    before; a copy moved past the reply by those appends alone has nothing new to read."""
    state = CountingState()
    index = KeywordIndex(InMemoryBackend(), state)
    state.log_writes("u1", ["a"])
    with one_read_view():
        read_ahead([("u1", 1, 0)], [state.keyword_changes("u1", after=1, generation=0)])
        index.stored(_records("u1", ["b", "c"]))  # this process's writer: 1 -> 3
        assert log_changes(state, [("u1", 3, 0)]) == [KeywordChanges(0, 3, ())]
        assert state.log_reads == ["u1"]  # the read ahead only
        state.log_writes("u1", ["x"])  # another process: 3 -> 4
        index.stored(_records("u1", ["d"]))  # this one: 4 -> 5
        assert log_changes(state, [("u1", 5, 0)]) == [KeywordChanges(0, 5, ())]
        assert state.log_reads == ["u1", "u1"]  # entry 4 is not this process's: read, not assumed


@pytest.fixture
def two_workers() -> tuple[CountingState, Store, Store]:
    state = CountingState()
    return state, *two_workers_over(_Server(), state)


def test_a_recall_reads_the_users_log_once_and_sees_the_other_workers_write(
    two_workers: tuple[CountingState, Store, Store],
) -> None:
    state, a, b = two_workers
    rng = np.random.default_rng(0)
    a.writer.write(_records("u1", ["a1", "a2"]), rng.standard_normal((2, DIM)).astype(np.float32))
    where = RecordFilter(user_id="u1", kinds=("message", "fact"))
    a.backend.query(np.ones(DIM, dtype=np.float32), k=5, where=where)  # both copies loaded
    a.keywords.for_user("u1")
    b.writer.write(_records("u1", ["b1"]), rng.standard_normal((1, DIM)).astype(np.float32))
    state.log_reads.clear()
    with one_read_view():  # a recall: the vector leg, then the keyword leg
        hits = a.backend.query(np.ones(DIM, dtype=np.float32), k=5, where=where)
        index = a.keywords.for_user("u1")
    assert {h.record.id for h in hits} == {"a1", "a2", "b1"}
    assert "b1" in index and [i for i, _ in index.search("harbour", k=5)] != []
    assert state.log_reads.count("u1") == 1  # the keyword index took its changes from the copy's read


def test_own_writes_keep_the_keyword_index_where_the_copy_is(two_workers: tuple[CountingState, Store, Store]) -> None:
    """This process's own writes, indexed when added (as the engine does),
    move the index's log position with them, so a recall after them still
    reads the log once (else the index, behind the copy, reads it again)."""
    state, a, _ = two_workers
    vectors = np.ones((1, DIM), dtype=np.float32)
    a.writer.write(_records("u1", ["a1"]), vectors)
    a.keywords.for_user("u1")
    a.backend.query(vectors[0], k=5, where=RecordFilter(user_id="u1", kinds=("message", "fact")))
    for n in range(2, 5):
        batch = _records("u1", [f"a{n}"])
        a.keywords.added("u1", batch)
        a.writer.write(batch, vectors)
    state.log_reads.clear()
    with one_read_view():
        hits = a.backend.query(vectors[0], k=5, where=RecordFilter(user_id="u1", kinds=("message", "fact")))
        index = a.keywords.for_user("u1")
    assert {h.record.id for h in hits} == {"a1", "a2", "a3", "a4"} and all(f"a{n}" in index for n in range(1, 5))
    assert state.log_reads.count("u1") == 1
