"""Background writes by default on a store one process owns (embedded
Chroma, Milvus Lite) and on the servers (leases in the working state, see
test_shared_background.py): which stores get them, what stays synchronous, and
that a turn acknowledged by ``add_messages`` survives the process: a
kill -9 before the flush (healed by the next process, from any session),
and a plain exit without ``close()``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import BackendUnavailableError
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.state.base import NewMessage
from memory_vec.state.sqlite import SQLiteStateStore, sqlite_state_path

from .conftest import EMBEDDER
from .test_concurrency_durability import kill_after, spawn

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fresh_stores")]


def _unflushed_file(config: MemoryConfig) -> Path:
    return Path(sqlite_state_path(config.persist_dir, config.backend, config.collection) + ".unflushed")


@pytest.mark.parametrize(
    ("kind", "extra", "background"),
    [
        ("chroma", {}, True),
        ("milvus-lite", {}, True),
        ("chroma", {"state": "memory"}, False),  # the turn is not on disk until its vectors are
        ("chroma", {"background_writes": False}, False),
        ("sqlite", {}, False),  # a local transaction: cheaper inline (other processes still wait out leases)
        ("sqlite", {"background_writes": True}, True),
        ("memory", {}, False),
        ("memory", {"background_writes": True}, True),
        ("chroma-server", {}, True),  # other processes read the server: leases in the SQLite state
        ("chroma-server", {"state": "memory"}, False),  # nowhere to keep a lease others would see
    ],
)
def test_which_stores_write_in_the_background(
    kind: str, extra: dict[str, Any], background: bool, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from .conftest import _config_factory

    core = MemoryCore(_config_factory(kind, request, tmp_path)(**extra), embedder=EMBEDDER)
    assert core.store.writer.background is background
    result = core.add_message("user", "I moved to Porto in March.")
    assert result.pending is background
    core.flush()
    assert [r.id for r in core.store.backend.get([result.id])] == [result.id]


@pytest.mark.parametrize("kind", ["chroma", "milvus-lite"])
def test_writes_other_than_a_turn_are_stored_before_they_return(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from .conftest import _config_factory

    config = _config_factory(kind, request, tmp_path)(flush_interval=300.0)
    core = MemoryCore(config, embedder=EMBEDDER)
    assert core.store.writer.background
    turn = core.add_message("user", "My budget is 5000 dollars.")
    assert turn.pending and core.store.writer.pending_count > 0
    # An explicit memory and an edit are not in the working state, so heal could not
    # bring them back: they are stored before returning (and carry the queued turn along).
    memory = core.remember("Prefers window seats.")
    assert not memory.pending and core.store.writer.pending_count == 0
    edited = core.update(memory.id, "Prefers aisle seats.")
    assert not edited.pending and core.store.writer.pending_count == 0
    [new] = core.store.backend.get([edited.id])
    assert new.text == "Prefers aisle seats."
    [old] = core.store.backend.get([memory.id], where=RecordFilter(include_superseded=True))
    assert old.superseded_by == edited.id
    assert core.store.backend.get([turn.id])


DIES_BEFORE_ITS_FLUSH = """
import json, sys, time
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder
config = MemoryConfig(**json.loads(sys.argv[1]))
embedder = DeterministicHashEmbedder(dimension=64)
first = MemoryCore(config.with_overrides(session_id="monday"), embedder=embedder)
first.add_message("user", "The budget is 5000 dollars.")
first.flush()
later = MemoryCore(config.with_overrides(session_id="tuesday"), embedder=embedder)
r = later.add_message("user", "Actually the budget is now 8000 dollars.")
print(r.id, *r.fact_ids, flush=True)
time.sleep(600)  # killed here, long before the writer's next flush
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["chroma", "milvus-lite"])
def test_a_turn_lost_with_its_process_is_recalled_from_another_session(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from .conftest import _config_factory

    config = _config_factory(kind, request, tmp_path)(flush_interval=300.0)
    [[message_id, *fact_ids]] = kill_after(spawn(DIES_BEFORE_ITS_FLUSH, config.model_dump_json()), 1)
    assert fact_ids
    journal = _unflushed_file(config)
    assert [json.loads(line) for line in journal.read_text().splitlines() if line] == [[config.user_id, "tuesday"]]
    # The next process recalls from a third session: "tuesday" is never read, yet its
    # turn is there, with its fact and the supersede it made.
    core = MemoryCore(config.with_overrides(session_id="wednesday"), embedder=EMBEDDER)
    assert core.store.backend.get([message_id]) == []  # nothing of it reached the store
    hits = core.recall("what is the budget", k=5)
    assert "8000" in hits[0].text
    assert not any("5000" in h.text for h in hits)
    core.flush()
    assert {r.id for r in core.store.backend.get([message_id, *fact_ids])} == {message_id, *fact_ids}
    old = [
        r for r in core.store.backend.scan(RecordFilter(kinds=("fact",), include_superseded=True)) if "5000" in r.text
    ]
    assert old and all(r.superseded_by == fact_ids[0] for r in old)
    assert not journal.exists()  # healed and flushed: nothing left to name


EXITS_WITHOUT_CLOSE = """
import json, sys
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder
core = MemoryCore(MemoryConfig(**json.loads(sys.argv[1])), embedder=DeterministicHashEmbedder(dimension=64))
for i in range(5):
    print(core.add_message("user", f"note {i}: the shed needs paint").id, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["chroma", "milvus-lite"])
def test_a_script_that_never_closes_still_stores_its_turns(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from .conftest import _config_factory

    config = _config_factory(kind, request, tmp_path)(flush_interval=300.0)
    proc = spawn(EXITS_WITHOUT_CLOSE, config.model_dump_json())
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-2000:]
    ids = out.split()
    assert len(ids) == 5
    assert not _unflushed_file(config).exists()
    core = MemoryCore(config, embedder=EMBEDDER)
    # Read the engine under the core: no heal has run, the rows were written at exit.
    assert {r.id for r in core.store.backend.get(ids)} == set(ids)


def test_the_file_names_each_session_once_and_survives_a_torn_line(tmp_path: Path) -> None:
    from memory_vec._storage.unflushed import UnflushedSessions

    path = str(tmp_path / "s.unflushed")
    journal = UnflushedSessions(path)
    journal.mark(1, [("u1", "s1"), ("u1", "s1")])
    journal.mark(1, [("u1", "s1"), ("u2", "会话")])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('\n["u3", "s')  # a crash in the middle of a mark
    assert UnflushedSessions(path).carried == {("u1", "s1"), ("u2", "会话")}
    # The next process names a session after the torn line: it is read back.
    again = UnflushedSessions(path)
    again.mark(7, [("u4", "s4")])
    assert UnflushedSessions(path).carried == {("u1", "s1"), ("u2", "会话"), ("u4", "s4")}
    # Its writer flushed: its own name goes, the dead process's stay until healed.
    again.clear(7)
    assert UnflushedSessions(path).carried == {("u1", "s1"), ("u2", "会话")}
    again.healed(("u1", "s1"))
    again.healed(("u2", "会话"))
    again.clear(7)
    assert not os.path.exists(path)


def test_two_writers_on_one_file_keep_each_other_s_names(tmp_path: Path) -> None:
    from memory_vec._storage.unflushed import UnflushedSessions, open_unflushed, release_unflushed

    path = str(tmp_path / "s.unflushed")
    a, b = open_unflushed(path), open_unflushed(path)
    assert a is b  # one per file per process, as two stores over one state file share it
    a.mark(1, [("alice", "s1")])
    a.mark(2, [("bob", "s1")])
    a.clear(2)  # bob's writer has nothing pending; alice's still has
    assert UnflushedSessions(path).carried == {("alice", "s1")}
    a.clear(1)
    assert not os.path.exists(path)
    release_unflushed(a)
    release_unflushed(b)
    assert open_unflushed(path) is not a


class _Owned(InMemoryBackend):
    """The in-process engine dressed as one a single process owns, able to go down."""

    persistent = True
    supports_multiprocess = False
    down = False

    def get(self, ids: Any, where: Any = None) -> Any:
        if self.down:
            raise BackendUnavailableError("the engine is down")
        return super().get(ids, where=where) if where is not None else super().get(ids)


def test_sessions_a_dead_process_left_are_healed_once_the_backend_is_back(tmp_path: Path) -> None:
    state = SQLiteStateStore(str(tmp_path / "state.sqlite3"))
    for session in ("s1", "s2"):  # what a process wrote to its log before it died
        state.append("alice", session, [NewMessage(f"m-{session}", "user", f"note in {session}", 1.7e9, 5)])
    Path(str(tmp_path / "state.sqlite3") + ".unflushed").write_text(
        '\n["alice", "s1"]\n["alice", "s2"]', encoding="utf-8"
    )
    backend = _Owned()
    backend.down = True
    config = MemoryConfig(
        user_id="alice", session_id="s3", fact_extractor="none", backend_retries=0, collection="owned"
    )
    core = MemoryCore(config, backend=backend, state_store=state, embedder=EMBEDDER)  # no recursion, no error
    assert core.store.writer.carried_sessions() == [("alice", "s1"), ("alice", "s2")]
    backend.down = False
    core.recall("note", k=5)  # the next call tries again
    core.flush()
    assert {r.id for r in backend.get(["m-s1", "m-s2"])} == {"m-s1", "m-s2"}
    assert core.store.writer.carried_sessions() == []
    assert not Path(str(tmp_path / "state.sqlite3") + ".unflushed").exists()


class _SlowWrites(InMemoryBackend):
    """An engine whose writes wait for a signal: a flush caught in the middle."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.entered, self.release = threading.Event(), threading.Event()

    def insert_new(self, records: Any, vectors: Any) -> None:
        self.entered.set()
        assert self.release.wait(10)
        self.upsert(records, vectors)


def test_a_forget_waits_for_the_batch_the_thread_is_storing() -> None:
    import threading

    import numpy as np

    from memory_vec._model.records import MemoryRecord
    from memory_vec._storage.writer import RecordWriter, WriterSettings

    backend = _SlowWrites()
    backend.open(dimension=4, model_id="m")
    writer = RecordWriter(backend, WriterSettings(background=True, flush_interval=0.01))
    try:
        record = MemoryRecord(
            id="r1", text="my locker code is 4412", role="user", user_id="gone", session_id="s", timestamp=1.0, seq=1
        )
        writer.write([record], np.eye(4, dtype=np.float32)[:1], new=True, deferred=True)
        assert backend.entered.wait(10)  # the thread took the batch and is writing it
        forgot = threading.Thread(target=writer.forget_where, args=(RecordFilter(user_id="gone"),))
        forgot.start()
        forgot.join(0.3)
        assert forgot.is_alive()  # waiting: a delete now would land before the row does
        backend.release.set()
        forgot.join(10)
        backend.delete(where=RecordFilter(user_id="gone"))  # what forget does next
        assert backend.count() == 0
    finally:
        backend.release.set()
        writer.close()


@pytest.mark.parametrize("kind", ["chroma"])
def test_a_queued_superseded_message_is_not_healed_back_to_current(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from .conftest import _config_factory

    config = _config_factory(kind, request, tmp_path)(flush_interval=300.0, fact_extractor="none")
    core = MemoryCore(config, embedder=EMBEDDER)  # no facts: the message itself is superseded
    old = core.add_message("user", "The budget is 5000 dollars.")
    new = core.add_message("user", "Actually the budget is now 8000 dollars.")
    assert old.id in new.superseded_ids and core.store.writer.pending_count > 0
    # A per-request core on the same store heals the session: the queued, superseded
    # message is there (in the queue), not lost.
    with caplog.at_level("WARNING", logger="memory_vec"):
        MemoryCore(config, embedder=EMBEDDER).build_context("what is the budget?")
    assert "re-stored" not in caplog.text  # nothing taken for lost, nothing embedded again
    core.flush()
    [stored] = core.store.backend.get([old.id], where=RecordFilter(include_superseded=True))
    assert stored.superseded_by is not None
    assert not any("5000" in h.text for h in core.recall("what is the budget", k=5))


@pytest.mark.parametrize("kind", ["chroma"])
def test_reset_and_import_store_the_queued_turns_before_changing_the_log(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from .conftest import _config_factory

    core = MemoryCore(_config_factory(kind, request, tmp_path)(flush_interval=300.0), embedder=EMBEDDER)
    turn = core.add_message("user", "I keep bees on the roof.")
    assert core.store.writer.pending_count > 0
    core.reset_working_state()  # the log heal would re-store the turn from is emptied
    assert core.store.writer.pending_count == 0 and core.store.backend.get([turn.id])
    exported = core.export_memories()
    other = core.add_message("user", "The hives face south.", session_id="s2")
    core.import_memories({**exported, "records": []})  # sessions only: it replaces working states
    assert core.store.writer.pending_count == 0 and core.store.backend.get([other.id])


def test_a_core_given_its_own_state_store_writes_inline(tmp_path: Path) -> None:
    config = MemoryConfig(backend="chroma", persist_dir=str(tmp_path), collection="own_state")
    state = SQLiteStateStore(str(tmp_path / "mine.sqlite3"))
    core = MemoryCore(config, state_store=state, embedder=EMBEDDER)  # a store of its own: no thread to outlive it
    assert core.store.writer.background is False
    core.close()


def test_the_thread_goes_on_after_an_error_that_is_not_the_backend_s() -> None:
    import time

    import numpy as np

    from memory_vec._model.errors import StateStoreError
    from memory_vec._model.records import MemoryRecord
    from memory_vec._storage.writer import RecordWriter, WriterSettings

    backend = InMemoryBackend()
    backend.open(dimension=4, model_id="m")
    failures = [StateStoreError("the log for other processes is down")]

    def on_stored(records: Any) -> None:
        if failures:
            raise failures.pop()

    writer = RecordWriter(backend, WriterSettings(background=True, flush_interval=0.02), on_stored=on_stored)
    try:
        for i in (1, 2):
            record = MemoryRecord(
                id=f"r{i}", text=f"note {i}", role="user", user_id="u", session_id="s", timestamp=float(i), seq=i
            )
            writer.write([record], np.eye(4, dtype=np.float32)[:1], new=True, deferred=True)
            deadline = time.time() + 10
            while writer.pending_count and time.time() < deadline:
                time.sleep(0.01)
        assert backend.count() == 2 and writer.pending_count == 0
        assert isinstance(writer.last_error, StateStoreError) or writer.last_error is None
    finally:
        writer.close()
