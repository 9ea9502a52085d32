"""Own writes merged into reads that do not wait for them (Milvus server, "Bounded").

Unit tests of the merge with a clock of our own, then the real server: a
backend reads what it just wrote, updated and deleted, and a second backend
(another client, as a second process would be) sees those writes once the
server has applied them."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest

from memory_vec.backends._milvus_own_writes import OwnWrites
from memory_vec.backends.base import RecordFilter, ScoredRecord
from memory_vec.backends.milvus import MilvusBackend
from memory_vec.testing.conformance import DIMENSION, MODEL_ID, make_record, unit_vector, vectors_for
from tests._services import Service


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _own(window: float = 10.0, max_rows: int = 1000) -> tuple[OwnWrites, Clock]:
    clock = Clock()
    return OwnWrites(window, max_rows=max_rows, clock=clock), clock


def test_rows_the_server_has_not_returned_yet_are_scored_here_and_ranked_with_its_hits() -> None:
    own, _ = _own()
    fresh = make_record("fresh", user_id="u1")
    own.wrote([fresh], vectors_for([fresh]))
    q = unit_vector("fresh", DIMENSION)
    server = [ScoredRecord(make_record("old", user_id="u1"), 0.3)]
    hits = own.merge_hits(server, q, 5, RecordFilter(user_id="u1"))
    assert [h.record.id for h in hits] == ["fresh", "old"]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert own.merge_hits(server, q, 5, RecordFilter(user_id="u2")) == []  # another user's rows: never
    assert [h.record.id for h in own.merge_hits(server, q, 1, RecordFilter(user_id="u1"))] == ["fresh"]


def test_a_recent_version_replaces_the_servers_and_a_recent_delete_hides_it() -> None:
    own, _ = _own()
    stale = make_record("a", user_id="u1", text="budget 5000")
    newer = stale.copy(text="budget 8000", valid_to=5.0)
    own.wrote([newer], vectors_for([newer]))
    where = RecordFilter(user_id="u1", include_superseded=True)
    got = own.merge_records([stale], where, ["a"])
    assert [r.text for r in got] == ["budget 8000"]
    # superseded here: the server's stale current version is not served as current
    assert own.merge_records([stale], RecordFilter(user_id="u1"), ["a"]) == []
    own.deleted(["a"])
    assert own.merge_records([stale], where, ["a"]) == []
    assert own.merge_hits([ScoredRecord(stale, 0.9)], unit_vector("a", DIMENSION), 3, where) == []


def test_a_delete_by_filter_hides_matching_server_rows_but_not_rows_written_after_it() -> None:
    own, clock = _own()
    server = [make_record("s1", user_id="u1", session_id="x"), make_record("s2", user_id="u1", session_id="y")]
    own.deleted([], RecordFilter(user_id="u1", session_id="x"))
    clock.now += 1
    again = make_record("s1", user_id="u1", session_id="x", text="written again")
    assert [r.id for r in own.merge_records(server, RecordFilter(user_id="u1"), None)] == ["s2"]
    own.wrote([again], vectors_for([again]))
    assert {r.text for r in own.merge_records(server, RecordFilter(user_id="u1"), None)} == {
        "written again",
        "text of s2",
    }


def test_writes_leave_after_the_window_and_an_overflow_asks_for_one_waiting_read() -> None:
    own, clock = _own(window=10.0, max_rows=3)
    records = [make_record(f"r{i}") for i in range(3)]
    own.wrote(records, vectors_for(records))
    assert len(own) == 3 and not own.take_overflow()
    clock.now += 10.5
    assert len(own) == 0  # the server shows them by now
    more = [make_record(f"m{i}") for i in range(5)]
    own.wrote(more, vectors_for(more))
    assert len(own) == 3 and own.take_overflow() and not own.take_overflow()
    assert own.fits(3) and not own.fits(4)


def test_the_latest_write_of_a_row_wins_with_its_vector() -> None:
    own, clock = _own()
    r = make_record("v")
    own.wrote([r], vectors_for([r]))
    clock.now += 1
    own.wrote([r.copy(pinned=True)], vectors_for([make_record("w")]))
    assert np.allclose(own.vector_of("v"), vectors_for([make_record("w")])[0])
    record = own.record_of("v")
    assert record is not None and record.pinned and len(own) == 1
    own.deleted(["v"])
    assert own.vector_of("v") is None and own.record_of("v") is None


# --------------------------------------------------------------------------- the real server
pytestmark_server = [pytest.mark.integration]


@pytest.mark.slow
@pytest.mark.integration
def test_a_bounded_backend_reads_its_own_writes_updates_and_deletes_at_once(milvus_server: Service) -> None:
    name = f"own_{uuid.uuid4().hex[:10]}"
    writer = MilvusBackend(milvus_server.url, collection=name)
    writer.open(dimension=DIMENSION, model_id=MODEL_ID)
    other = MilvusBackend(milvus_server.url, collection=name)  # another client: no memory of these writes
    other.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        assert writer._consistency == "Bounded" and writer._own is not None
        for i in range(5):  # every turn reads right after its write
            record = make_record(f"t{i}", user_id="u1", seq=i + 1)
            writer.upsert([record], vectors_for([record]))
            hits = writer.query(vectors_for([record])[0], k=3, where=RecordFilter(user_id="u1"))
            assert hits and hits[0].record.id == f"t{i}"
            assert [r.id for r in writer.get([f"t{i}"])] == [f"t{i}"]
            assert f"t{i}" in {r.id for r in writer.scan(RecordFilter(user_id="u1"))}
        writer.update([make_record("t0", user_id="u1", seq=1, text="changed")])
        assert writer.get(["t0"])[0].text == "changed"
        assert writer.delete(ids=["t1"]) == 1
        assert writer.get(["t1"]) == []
        assert writer.count(RecordFilter(user_id="u1")) == 4
        deadline, seen = time.monotonic() + 15, set()
        while time.monotonic() < deadline and seen != {"t0", "t2", "t3", "t4"}:
            seen = {r.id for r in other.scan(RecordFilter(user_id="u1"))}
            time.sleep(0.2)
        assert seen == {"t0", "t2", "t3", "t4"}, "another client did not see the writes within the bound"
        assert other.get(["t0"])[0].text == "changed"
        assert other.query(vectors_for([make_record("t3")])[0], k=1, where=RecordFilter(user_id="u2")) == []
    finally:
        other.close()
        writer.drop()
        writer.close()


@pytest.mark.slow
@pytest.mark.integration
def test_a_bounded_backend_forgets_a_session_at_once(milvus_server: Service) -> None:
    name = f"own_{uuid.uuid4().hex[:10]}"
    backend = MilvusBackend(milvus_server.url, collection=name)
    backend.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        records = [make_record(f"f{i}", user_id="u1", session_id="gone" if i % 2 else "kept") for i in range(6)]
        backend.upsert(records, vectors_for(records))
        assert backend.delete(where=RecordFilter(user_id="u1", session_id="gone")) == 3
        left = {r.id for r in backend.scan(RecordFilter(user_id="u1"))}
        assert left == {"f0", "f2", "f4"}
        hits = backend.query(vectors_for([records[1]])[0], k=6, where=RecordFilter(user_id="u1"))
        assert {h.record.id for h in hits} == {"f0", "f2", "f4"}
    finally:
        backend.drop()
        backend.close()


def test_only_deletes_and_updates_the_filter_drops_shadow_server_rows() -> None:
    own, _ = _own()
    fresh = [make_record(f"n{i}", user_id="u1") for i in range(4)]
    own.wrote(fresh, vectors_for(fresh))
    where = RecordFilter(user_id="u1")
    assert own.shadowing(where) == 0  # new rows only add to an answer
    superseded = make_record("old", user_id="u1", valid_to=5.0)
    own.wrote([superseded], vectors_for([superseded]), replaces=True)
    own.deleted(["gone"])
    assert own.shadowing(where) == 2
    assert own.shadowing(RecordFilter(user_id="u1", include_superseded=True)) == 1


def test_a_row_written_again_is_scored_with_its_new_vector_not_the_servers_score() -> None:
    own, _ = _own()
    rewritten = make_record("x", user_id="u1", text="new text")
    own.wrote([rewritten], vectors_for([make_record("target")]))
    q = unit_vector("target", DIMENSION)
    server = [ScoredRecord(make_record("x", user_id="u1", text="old text"), 0.1)]
    hits = own.merge_hits(server, q, 3, RecordFilter(user_id="u1"))
    assert len(hits) == 1 and hits[0].record.text == "new text"
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-5)


class _EveryRowChecked(OwnWrites):
    """The merge as it was before the owner index: every written row is checked with ``matches``."""

    def _candidates(self, where: RecordFilter) -> list[str]:
        return list(self._entries)


@pytest.mark.parametrize("seed", range(4))
def test_a_users_read_merges_what_checking_every_written_row_merges(seed: int) -> None:
    """The owner index (a user's rows and the shared ones) loses no row the filter matches,
    through rewrites that change a row's owner or visibility, deletes, the window and overflow."""
    rng = np.random.default_rng(seed)
    clocks = Clock(), Clock()
    indexed, reference = (cls(10.0, max_rows=40, clock=c) for cls, c in zip((OwnWrites, _EveryRowChecked), clocks))
    users = ["u1", "u2", "u3"]
    for step in range(150):
        action = rng.random()
        if action < 0.7:
            batch = []
            for _ in range(int(rng.integers(1, 4))):
                rid = f"r{int(rng.integers(60))}"  # ids come back: a row rewritten under another owner
                visibility = str(rng.choice(["private", "private", "global", "agent"]))
                batch.append(
                    make_record(
                        rid,
                        user_id=str(rng.choice(users)),
                        visibility=visibility,
                        agent_id="bot" if visibility == "agent" else None,
                        kind=str(rng.choice(["message", "fact"])),
                        timestamp=float(step),
                    )
                )
            replaces = bool(rng.random() < 0.3)
            for own in (indexed, reference):
                own.wrote(batch, vectors_for(batch), replaces=replaces)
        elif action < 0.8:
            doomed = [f"r{int(i)}" for i in rng.integers(60, size=2)]
            for own in (indexed, reference):
                own.deleted(doomed)
        else:
            elapsed = float(rng.uniform(0.5, 4.0))
            for clock in clocks:
                clock.now += elapsed
        server = [make_record(f"r{int(i)}", user_id=str(rng.choice(users))) for i in rng.integers(60, size=5)]
        q = unit_vector(step)
        for user in [*users, None]:
            for where in (
                RecordFilter(user_id=user),
                RecordFilter(user_id=user, include_shared=True, agent_id="bot"),
                RecordFilter(user_id=user, include_shared=True, kinds=("fact",)),
            ):
                rows = [
                    (record.id, record.user_id, record.visibility)
                    for record, _ in indexed.merge_rows(((r, None) for r in server), where, None)
                ]
                want = [
                    (record.id, record.user_id, record.visibility)
                    for record, _ in reference.merge_rows(((r, None) for r in server), where, None)
                ]
                assert sorted(rows) == sorted(want), where
                hits = [h.record.id for h in indexed.merge_hits([], q, 100, where)]
                assert hits == [h.record.id for h in reference.merge_hits([], q, 100, where)], where
    assert len(indexed) == len(reference)
