"""The local replica of a user's scope (memory_vec/_storage/replica.py) answers exactly
what the backend answers, whatever either of two "processes" wrote.

Two :class:`Store` objects over one backend and one working-state store
stand for two worker processes over one server: each has its own replica,
and only the shared keyword log tells one about the other's writes. After
every random write, update or delete, every recall-shaped read of both
replicas is checked against the backend itself (the in-process backend is
the reference implementation of the filter semantics). The real engines and
real processes are covered by tests/engine/test_two_processes.py, which runs
with the replica on (the default).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import BackendError
from memory_vec._model.records import MemoryRecord
from memory_vec._storage.replica import ReplicatedBackend
from memory_vec._storage.store import Store
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder

DIM = 8
USERS = ("u1", "u2", "admin")


class _Server(InMemoryBackend):
    """The in-process backend flagged persistent, so a Store puts a replica in front of it."""

    persistent = True


def two_workers_over(server: InMemoryBackend, state: InMemoryStateStore) -> tuple[Store, Store]:
    """Two Stores (two worker processes) over one opened server and one working state."""
    server.open(dimension=DIM, model_id="m")
    a, b = (Store(server, state, collection="c", replica_docs=10_000) for _ in range(2))
    for store in (a, b):
        store.open(dimension=DIM, model_id="m")
    return a, b


@pytest.fixture
def two_stores() -> Iterator[tuple[InMemoryBackend, Store, Store]]:
    server = _Server()
    yield server, *two_workers_over(server, InMemoryStateStore())


def _record(rng: random.Random, n: int) -> MemoryRecord:
    visibility = rng.choice(["private"] * 4 + ["global", "agent"])
    return MemoryRecord(
        id=f"r{n}",
        text=f"text {n}",
        role=rng.choice(["user", "assistant"]),
        user_id=rng.choice(USERS),
        session_id=rng.choice(["s1", "s2"]),
        timestamp=1_700_000_000.0 + n,
        seq=n,
        kind=rng.choice(["message", "message", "fact", "summary"]),
        visibility=visibility,
        agent_id=rng.choice(["bot", "other"]) if visibility == "agent" else None,
    )


def _wheres(rng: random.Random, ids: list[str]) -> list[RecordFilter]:
    out = []
    for user in USERS:
        for _ in range(3):
            out.append(
                RecordFilter(
                    user_id=user,
                    session_id=rng.choice([None, "s1"]),
                    agent_id=rng.choice([None, "bot"]),
                    include_shared=rng.random() < 0.5,
                    kinds=rng.choice([("message", "fact"), ("fact",), ("message",)]),
                    include_superseded=rng.random() < 0.3,
                    include_archived=rng.random() < 0.3,
                    ids=tuple(rng.sample(ids, min(len(ids), 5))) if ids and rng.random() < 0.2 else None,
                )
            )
    return out


def _same(server: InMemoryBackend, store: Store, where: RecordFilter, q: np.ndarray) -> None:
    assert isinstance(store.backend, ReplicatedBackend)
    want = server.query(q, k=8, where=where)
    got = store.backend.query(q, k=8, where=where)
    assert [(h.record.id, h.record.valid_to, h.record.archived, h.record.text) for h in got] == [
        (h.record.id, h.record.valid_to, h.record.archived, h.record.text) for h in want
    ], where
    assert [h.similarity for h in got] == pytest.approx([h.similarity for h in want], abs=1e-5)
    ids = [r.id for r in server.scan(RecordFilter(include_superseded=True, include_archived=True))][:12]
    assert [r.id for r in store.backend.get(ids, where=where)] == [r.id for r in server.get(ids, where=where)]
    copied = store.backend.scan_copied(where)  # the keyword index's rebuild, when a copy can answer
    if copied is not None:
        assert [(r.id, r.valid_to, r.archived, r.text) for r in copied] == [
            (r.id, r.valid_to, r.archived, r.text) for r in server.scan(where)
        ], where


@pytest.mark.parametrize("seed", range(6))
def test_two_replicas_answer_what_the_backend_answers(
    two_stores: tuple[InMemoryBackend, Store, Store], seed: int
) -> None:
    server, a, b = two_stores
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed)
    written: dict[str, MemoryRecord] = {}
    for step in range(60):
        store = rng.choice([a, b])
        action = rng.random()
        if action < 0.55 or not written:
            batch = [_record(rng, step * 10 + i) for i in range(rng.randint(1, 3))]  # ids are never reused
            store.writer.write(batch, vectors.standard_normal((len(batch), DIM)).astype(np.float32))
            written.update((r.id, r) for r in batch)
        elif action < 0.85:  # supersede, archive, share, or edit the text (vector kept)
            old = written[rng.choice(sorted(written))]
            change = rng.choice(["valid_to", "archived", "visibility", "text"])
            new = {
                "valid_to": old.copy(valid_to=old.timestamp + 1, superseded_by="x"),
                "archived": old.copy(archived=not old.archived),
                # (the API shares a record only when it is written; a shared one
                # becomes private only by an import, which rebuilds every copy)
                "visibility": old.copy(visibility="global", agent_id=None),
                "text": old.copy(text=old.text + " edited"),
            }[change]
            store.writer.update([new])
            written[new.id] = new
        else:  # a delete, as the pipelines do it: rows, then every process rebuilds
            doomed = rng.sample(sorted(written), min(2, len(written)))
            store.backend.delete(ids=doomed)
            for record_id in doomed:
                store.keywords.deleted(written.pop(record_id).user_id)
        q = vectors.standard_normal(DIM).astype(np.float32)
        for where in _wheres(rng, sorted(written)):
            _same(server, a, where, q)
            _same(server, b, where, q)
    served = [s.backend for s in (a, b)]
    assert all(isinstance(r, ReplicatedBackend) and r.copied_docs > 0 for r in served), "the copies were never used"


class _CountingServer(_Server):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        self.reads.append("scan")
        return super().scan(where, limit=limit)

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        self.reads.append("scan_vectors")
        return super().scan_vectors(where)


def test_a_users_first_recall_reads_the_users_rows_once() -> None:
    """The keyword index's rebuild is answered from the copy the dense read loads (one backend scan, not two)."""
    server = _CountingServer()
    writer, reader = two_workers_over(server, InMemoryStateStore())
    rng = random.Random(3)
    records = [
        _record(rng, n).copy(user_id="u1", visibility="private", agent_id=None, kind="message") for n in range(12)
    ]
    records[4] = records[4].copy(valid_to=99.0, superseded_by="r5")
    records[7] = records[7].copy(archived=True)
    writer.writer.write(records, np.random.default_rng(3).standard_normal((12, DIM)).astype(np.float32))
    server.reads.clear()

    index = reader.keywords.for_user("u1")
    recall = RecordFilter(user_id="u1", kinds=("message", "fact"), include_shared=True)
    hits = reader.backend.query(np.ones(DIM, dtype=np.float32), k=20, where=recall)

    assert server.reads == ["scan_vectors"]
    # The rebuild's own filter (superseded kept, archived not) picked from the copy: 11 of 12.
    assert len(index) == 11 and "r7" not in index and "r4" in index
    assert {h.record.id for h in hits} == {r.id for r in records} - {"r4", "r7"}


def test_reads_the_copy_cannot_answer_go_to_the_backend(two_stores: tuple[InMemoryBackend, Store, Store]) -> None:
    _, a, _ = two_stores
    summary = MemoryRecord(
        id="s", text="a summary", role="system", user_id="u1", session_id="s1", timestamp=1.0, kind="summary"
    )
    a.writer.write([summary], np.ones((1, DIM), dtype=np.float32))
    q = np.ones(DIM, dtype=np.float32)
    for where in (RecordFilter(user_id="u1"), RecordFilter(user_id="u1", kinds=("summary",)), RecordFilter()):
        assert [h.record.id for h in a.backend.query(q, k=3, where=where)] == ["s"]
    assert isinstance(a.backend, ReplicatedBackend) and a.backend.copied_docs == 0


def test_a_user_too_big_for_the_cap_is_read_from_the_backend() -> None:
    server, state = _Server(), InMemoryStateStore()
    store = Store(server, state, collection="c", replica_docs=10)
    store.open(dimension=DIM, model_id="m")
    records = [
        MemoryRecord(id=f"m{i}", text=f"t{i}", role="user", user_id="big", session_id="s", timestamp=float(i), seq=i)
        for i in range(8)
    ]
    store.writer.write(records, np.random.default_rng(0).standard_normal((8, DIM)).astype(np.float32))
    where = RecordFilter(user_id="big", kinds=("message", "fact"))
    q = np.ones(DIM, dtype=np.float32)
    assert [h.record.id for h in store.backend.query(q, k=8, where=where)] == [
        h.record.id for h in server.query(q, k=8, where=where)
    ]
    assert isinstance(store.backend, ReplicatedBackend) and store.backend.copied_docs == 0


def test_off_when_asked_in_process_or_without_a_shared_log() -> None:
    state = InMemoryStateStore()
    assert not isinstance(Store(_Server(), state, collection="c", replica_docs=0).backend, ReplicatedBackend)
    assert not isinstance(Store(InMemoryBackend(), state, collection="c", replica_docs=100).backend, ReplicatedBackend)

    class ServerForMany(_Server):
        supports_multiprocess = True

    # Other processes write the server, and their log entries would never reach this in-memory one.
    assert not isinstance(Store(ServerForMany(), state, collection="c", replica_docs=100).backend, ReplicatedBackend)


def test_after_a_reembed_in_one_process_the_other_reads_the_new_vectors(
    two_stores: tuple[InMemoryBackend, Store, Store],
) -> None:
    server, a, b = two_stores
    records = [
        MemoryRecord(id=f"m{i}", text=f"t{i}", role="user", user_id="u1", session_id="s", timestamp=float(i), seq=i)
        for i in range(5)
    ]
    rng = np.random.default_rng(1)
    a.writer.write(records, rng.standard_normal((5, DIM)).astype(np.float32))
    where = RecordFilter(user_id="u1", kinds=("message", "fact"))
    q = rng.standard_normal(DIM).astype(np.float32)
    _same(server, b, where, q)  # b holds a copy now
    # What reembed does through a's backend: a new collection, every row rewritten, then the signal.
    assert isinstance(a.backend, ReplicatedBackend)
    a.backend.reset(dimension=DIM, model_id="m2")
    a.backend.upsert(records, rng.standard_normal((5, DIM)).astype(np.float32))
    a.vectors_changed()
    _same(server, b, where, q)
    _same(server, a, where, q)


def _fact(i: int, text: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        id=f"m{i}",
        text=text or f"t{i}",
        role="user",
        user_id="u1",
        session_id="s",
        timestamp=float(i),
        seq=i,
        kind="fact",
    )


def test_an_own_write_landing_while_a_copy_loads_is_in_the_copy() -> None:
    """The load's scan is taken, then this process stores and logs a row: the
    copy must get it, not skip it as already caught up."""
    written = threading.Event()

    class Server(_Server):
        during_scan: Callable[[], None] | None = None

        def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
            out = super().scan_vectors(where)  # the scan misses what is written next
            hook, self.during_scan = self.during_scan, None
            if hook is not None and where.ids is None:
                hook()
            return out

        def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
            super().upsert(records, vectors)
            written.set()

    loaded = threading.Event()

    class State(InMemoryStateStore):
        def log_writes(self, user_id: str, ids: Sequence[str]) -> int:
            if "m1" in ids:  # the log entry comes after the copy is in place
                loaded.wait(5)
            return super().log_writes(user_id, ids)

    server, state = Server(), State()
    store = Store(server, state, collection="c", replica_docs=1000)
    store.open(dimension=DIM, model_id="m")
    rng = np.random.default_rng(0)
    store.writer.write([_fact(0)], rng.standard_normal((1, DIM)).astype(np.float32))
    writer = threading.Thread(
        target=lambda: store.writer.write([_fact(1)], rng.standard_normal((1, DIM)).astype(np.float32))
    )

    def write_now() -> None:
        written.clear()
        writer.start()
        assert written.wait(5)  # in the backend; its copy update and log entry follow

    server.during_scan = write_now
    where = RecordFilter(user_id="u1", kinds=("message", "fact"))
    q = rng.standard_normal(DIM).astype(np.float32)
    store.backend.query(q, k=10, where=where)  # loads the copy
    loaded.set()
    writer.join(5)
    assert sorted(h.record.id for h in store.backend.query(q, k=10, where=where)) == ["m0", "m1"]


def test_copies_stay_within_replica_docs_as_they_grow() -> None:
    server, state = _Server(), InMemoryStateStore()
    store = Store(server, state, collection="c", replica_docs=10)
    store.open(dimension=DIM, model_id="m")
    rng = np.random.default_rng(0)
    where = RecordFilter(user_id="u1", kinds=("message", "fact"))
    q = rng.standard_normal(DIM).astype(np.float32)
    for i in range(12):
        store.writer.write([_fact(i)], rng.standard_normal((1, DIM)).astype(np.float32))
        _same(server, store, where, q)
        assert isinstance(store.backend, ReplicatedBackend) and store.backend.copied_docs <= 5


def test_an_own_update_overtaken_by_another_process_leaves_the_newer_version(
    two_stores: tuple[InMemoryBackend, Store, Store],
) -> None:
    """a's update reaches the backend, then b rewrites the row and a's copy fetches b's
    version, then a's copy update lands: the copy must end on b's version."""
    server, a, b = two_stores
    rng = np.random.default_rng(0)
    a.writer.write([_fact(0)], rng.standard_normal((1, DIM)).astype(np.float32))
    where = RecordFilter(user_id="u1", kinds=("message", "fact"), include_superseded=True)
    q = rng.standard_normal(DIM).astype(np.float32)
    _same(server, a, where, q)  # a holds a copy
    inner_update = server.update

    def update_then_overtaken(records: Sequence[MemoryRecord]) -> None:
        inner_update(records)
        if records[0].text == "a's version":
            b.writer.update([_fact(0, text="b's version")])
            a.backend.query(q, k=5, where=where)  # a's copy catches up with b's write

    server.update = update_then_overtaken  # type: ignore[method-assign]
    a.writer.update([_fact(0, text="a's version")])
    assert [r.text for r in server.get(["m0"])] == ["b's version"]
    _same(server, a, where, q)


def test_on_a_lagging_server_another_process_write_is_read_again_until_the_bound() -> None:
    """A server whose reads lag other clients' writes (Milvus "Bounded") may hand the
    copy the old version of a row another process just rewrote: the copy reads what
    others wrote once more when the server's bound (read_staleness) has passed."""

    class Lagging(_Server):
        read_staleness = 0.3
        stale: ClassVar[dict[str, tuple[MemoryRecord, float]]] = {}

        def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
            records, vectors = super().scan_vectors(where)
            now = time.monotonic()
            return [
                self.stale[r.id][0] if r.id in self.stale and now < self.stale[r.id][1] else r for r in records
            ], vectors

    server, state = Lagging(), InMemoryStateStore()
    server.open(dimension=DIM, model_id="m")
    a, b = (Store(server, state, collection="c", replica_docs=1000) for _ in range(2))
    for store in (a, b):
        store.open(dimension=DIM, model_id="m")
    rng = np.random.default_rng(0)
    a.writer.write([_fact(0)], rng.standard_normal((1, DIM)).astype(np.float32))
    where = RecordFilter(user_id="u1", kinds=("message", "fact"))
    q = rng.standard_normal(DIM).astype(np.float32)
    _same(server, a, where, q)  # a holds a copy
    Lagging.stale = {"m0": (_fact(0), time.monotonic() + 0.2)}  # reads show the old text for 0.2 s
    b.writer.update([_fact(0, text="rewritten by b")])
    assert isinstance(a.backend, ReplicatedBackend)
    assert [h.record.text for h in a.backend.query(q, k=5, where=where)] == ["t0"]  # the lagging read
    time.sleep(0.35)
    _same(server, a, where, q)


class _SlowModel(DeterministicHashEmbedder):
    """A model call that takes a while and releases the GIL, as the real models' C code does."""

    def __init__(self) -> None:
        super().__init__(dimension=DIM)
        self.delay = 0.0
        self.done_at: list[float] = []

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        time.sleep(self.delay)
        self.done_at.append(time.monotonic())
        return super()._embed(texts, is_query)


class _TimedServer(_Server):
    """A server whose scans take a while, noting which thread read and when; ``fail_scans`` refuse first."""

    def __init__(self) -> None:
        super().__init__()
        self.scans: list[tuple[str, float]] = []
        self.fail_scans = 0

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        self.scans.append((threading.current_thread().name, time.monotonic()))
        time.sleep(0.05)
        if self.fail_scans:
            self.fail_scans -= 1
            raise BackendError("the server is restarting")
        return super().scan_vectors(where)


def _worker(
    server: InMemoryBackend, state: InMemoryStateStore, model: DeterministicHashEmbedder, **config: Any
) -> MemoryCore:
    return MemoryCore(
        MemoryConfig(user_id="u1", session_id="s1", **config), embedder=model, backend=server, state_store=state
    )


def _written_elsewhere() -> tuple[_TimedServer, InMemoryStateStore, _SlowModel]:
    server, state, model = _TimedServer(), InMemoryStateStore(), _SlowModel()
    writer = _worker(server, state, model)
    for n in range(6):
        writer.add_messages(
            [
                {"role": "user", "content": f"my dog number {n} is called Rex{n}"},
                {"role": "assistant", "content": f"Rex{n} is a good name"},
            ]
        )
    writer.flush()
    return server, state, model


def test_a_users_first_recall_loads_the_copy_while_the_question_embeds() -> None:
    server, state, model = _written_elsewhere()
    want = [h.id for h in _worker(server, state, model, replica_docs=0).recall("what is my dog called?")]
    reader = _worker(server, state, model)
    server.scans.clear()
    model.delay, model.done_at = 0.05, []

    hits = reader.recall("what is my dog called?")

    assert [h.id for h in hits] == want and want
    [(thread, started)] = server.scans  # one read of the user's rows (the keyword index's rebuild reads the copy)
    assert thread == "memory-vec-copy-load"
    assert started < model.done_at[0], "the copy loaded after the question embedded, not meanwhile"
    server.scans.clear()
    assert [h.id for h in reader.recall("what is my dog called?")] == want
    assert server.scans == []  # later recalls: the copy


def test_a_copy_load_that_fails_ahead_of_the_recall_is_done_again_by_the_recall() -> None:
    server, state, model = _written_elsewhere()
    want = [h.id for h in _worker(server, state, model, replica_docs=0).recall("what is my dog called?")]
    reader = _worker(server, state, model)
    server.scans.clear()
    model.delay, server.fail_scans = 0.05, 1

    assert [h.id for h in reader.recall("what is my dog called?")] == want and want
    assert [thread for thread, _ in server.scans] == ["memory-vec-copy-load", "MainThread"]
