"""Background writes on a shared server with the working state in Redis (a
deployment of workers) or in SQLite (workers on one host): a worker's turn
is acknowledged before its vectors are stored, so another worker (a second
store here, a second process where it matters) must wait for them before it
reads the user, and must heal what a worker that died left. Leases in the
working state (unflushed.SharedUnflushed) carry that; these tests hold a
worker's backend write back to open the window on purpose."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.backends import create_backend

from .conftest import EMBEDDER
from .test_concurrency_durability import kill_after, spawn

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fresh_stores")]


@pytest.fixture(params=["redis", "sqlite"])
def shared_config(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., MemoryConfig]:
    """A Chroma server with the working state in Redis (a deployment of
    workers) or in one SQLite file (workers on one host, the default state)."""
    from tests.fixtures_redis import redis_url

    from .conftest import _config_factory

    state: dict[str, Any] = {"state": "sqlite"}
    if request.param == "redis":
        state = {"state": "redis", "redis_url": redis_url(request.getfixturevalue("redis_server"), db=3)}
    factory = _config_factory("chroma-server", request, tmp_path)

    def make(**overrides: Any) -> MemoryConfig:
        return factory(**{**state, "user_id": "ana", "session_id": "s1", **overrides})

    return make


def other_worker(config: MemoryConfig, **overrides: Any) -> MemoryCore:
    """A second worker: its own client and writer on the same server and Redis."""
    config = config.model_copy(update=overrides)
    return MemoryCore(config, backend=create_backend(config), embedder=EMBEDDER)


class HeldWrites:
    """Holds a writer's backend writes until released (opens the window a
    fast write would close in milliseconds); ``before_taken``: its thread
    waits before it takes rows off the queue (they stay pending)."""

    def __init__(self, core: MemoryCore, monkeypatch: pytest.MonkeyPatch, *, before_taken: bool = False) -> None:
        self.open = threading.Event()
        self.open.set()
        writer = core.store.writer
        name = "_try_flush" if before_taken else "_store"
        original = getattr(writer, name)

        def held(*args: Any) -> Any:
            self.open.wait(30)
            return original(*args)

        monkeypatch.setattr(writer, name, held)


def recall_waiting_for(held: HeldWrites, reader: MemoryCore, query: str, k: int) -> list[Any]:
    """``reader`` recalls while ``held``'s writes wait: it must wait for them,
    and answer once they are released."""
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(reader.recall(query, k=k)))
    thread.start()
    thread.join(0.4)
    assert thread.is_alive(), "the reader read around another worker's acknowledged turn"
    held.open.set()
    thread.join(10)
    assert answers, "the reader never stopped waiting"
    return list(answers[0])


def leases(core: MemoryCore, user: str = "ana") -> list[str]:
    return [member for member, _ in core.store.state.unflushed_marks(user)[1]]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kind", "extra", "background"),
    [
        ("chroma-server", {"state": "redis"}, True),
        ("milvus-server", {"state": "redis"}, True),
        ("chroma", {"state": "redis"}, True),  # embedded, state in Redis: leases too
        ("chroma-server", {"state": "redis", "background_writes": False}, False),
        ("chroma-server", {}, True),  # the default state of a server: SQLite on this host
        ("milvus-server", {"state": "sqlite"}, True),
        ("sqlite", {}, False),  # inline (a local write), still waiting for other writers' leases
    ],
)
@pytest.mark.slow
def test_shared_state_writes_in_the_background_with_leases(
    kind: str,
    extra: dict[str, Any],
    background: bool,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.fixtures_redis import redis_url

    from .conftest import _config_factory

    if extra.get("state") == "redis":
        extra = {**extra, "redis_url": redis_url(request.getfixturevalue("redis_server"), db=3)}
    config = _config_factory(kind, request, tmp_path)(**extra)
    core = MemoryCore(config, embedder=EMBEDDER)
    assert core.store.state.name == extra.get("state", "sqlite")
    assert core.store.writer.background is background
    assert core.store.writer.shared is not None  # a synchronous worker still waits for the others
    held = HeldWrites(core, monkeypatch)
    held.open.clear()
    if not background:
        held.open.set()
    result = core.add_message("user", "I moved to Porto in March.")
    assert result.pending is background
    assert bool(leases(core, config.user_id)) is background  # leased while its rows wait
    held.open.set()
    core.flush()
    assert [r.id for r in core.store.backend.get([result.id])] == [result.id]
    assert leases(core, config.user_id) == []  # let go once stored


def test_a_store_one_process_owns_writes_in_the_background_without_leases(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from .conftest import _config_factory

    core = MemoryCore(_config_factory("chroma", request, tmp_path)(), embedder=EMBEDDER)
    assert core.store.writer.background and core.store.writer.shared is None  # no one else can read it
    assert core.add_message("user", "I moved to Porto in March.").pending


def test_an_inline_sqlite_backend_reader_waits_for_a_background_writer(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .conftest import _config_factory

    config = _config_factory("sqlite", request, tmp_path)(user_id="ana", session_id="s1", background_writes=True)
    a = MemoryCore(config, embedder=EMBEDDER)
    b = other_worker(config, session_id="s2", background_writes=None)
    assert not b.store.writer.background and b.store.writer.shared is not None
    held = HeldWrites(a, monkeypatch)
    held.open.clear()
    a.add_message("user", "My sister Lena lives in Graz.")
    assert "Graz" in recall_waiting_for(held, b, "where does my sister live", k=1)[0].text


@pytest.mark.slow
def test_another_worker_waits_for_a_queued_supersede(
    shared_config: Callable[..., MemoryConfig], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    config = shared_config()
    a = MemoryCore(config, embedder=EMBEDDER)
    b = other_worker(config, session_id="s2")
    held = HeldWrites(a, monkeypatch)
    a.add_message("user", "The budget is 5000 dollars.")
    a.flush()
    assert "5000" in b.recall("what is the budget", k=1)[0].text

    held.open.clear()
    update = a.add_message("user", "Actually the budget is now 8000 dollars.")
    assert update.pending and leases(a)
    texts = [h.text for h in recall_waiting_for(held, b, "what is the budget", k=3)]
    assert "8000" in texts[0]
    assert not any("5000" in t for t in texts)  # the old value is history, not current
    assert leases(a) == []
    assert "re-stored" not in caplog.text  # it waited; it did not embed the turn again


class LogReads:
    """Counts a worker's keyword-log reads made apart from its turn's first load (Redis
    reads them ahead in that load's round trip, ``RedisStateStore.load_with_unflushed``)."""

    def __init__(self, core: MemoryCore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.apart = 0
        self.ahead: list[int] = []
        state = core.store.state
        for name, counts in (
            ("keyword_changes_many", "apart"),
            ("keyword_changes", "apart"),
            ("load_with_unflushed", "ahead"),
        ):
            original = getattr(state, name, None)
            if original is not None:
                monkeypatch.setattr(state, name, self._counting(original, counts))

    def _counting(self, original: Callable[..., Any], counts: str) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if counts == "apart":
                self.apart += 1
            else:
                self.ahead.append(len(args[2]) if len(args) > 2 else 0)
            return original(*args, **kwargs)

        return counted


def test_a_turn_reads_the_other_workers_turn_with_its_first_load(
    shared_config: Callable[..., MemoryConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a worker holds a copy of the user, a turn's keyword-log reads ride in its first
    Redis round trip; what they bring in (another worker's stored turn) is still recalled."""
    config = shared_config()
    a = MemoryCore(config, embedder=EMBEDDER)
    b = other_worker(config, session_id="s2")
    a.add_message("user", "My sister Lena lives in Graz.")
    a.flush()
    assert "Graz" in b.build_context("where does my sister live", k=1).relevant[0].text  # b loads its copy
    a.add_message("user", "My brother Tomas keeps bees in Linz.")
    a.flush()
    reads = LogReads(b, monkeypatch)

    ctx = b.build_context("who keeps bees", k=1)
    b.add_message("user", "I should visit Tomas in Linz this spring.")

    assert "Linz" in ctx.relevant[0].text and "Tomas" in ctx.relevant[0].text
    if config.state == "redis":
        assert reads.ahead and all(reads.ahead), reads.ahead  # every turn's load asked for the logs
        assert reads.apart == 0
    b.flush()
    assert any("visit Tomas" in h.text for h in a.recall("when do I visit my brother", k=3))


@pytest.mark.slow
def test_a_turn_that_waits_for_another_worker_reads_the_logs_again(
    shared_config: Callable[..., MemoryConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The logs read ahead with the load predate what a held worker then stores: after the
    wait the turn reads them again, and recalls that worker's turn."""
    config = shared_config()
    a = MemoryCore(config, embedder=EMBEDDER)
    b = other_worker(config, session_id="s2")
    a.add_message("user", "My sister Lena lives in Graz.")
    a.flush()
    b.build_context("where does my sister live")  # b holds a copy of ana now
    held = HeldWrites(a, monkeypatch)
    held.open.clear()
    a.add_message("user", "My brother Tomas keeps bees in Linz.")
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(b.build_context("who keeps bees", k=1)))
    thread.start()
    thread.join(0.4)
    assert thread.is_alive(), "the turn read around another worker's acknowledged turn"
    held.open.set()
    thread.join(10)
    assert answers and "Linz" in answers[0].relevant[0].text


@pytest.mark.slow
def test_a_worker_stuck_in_a_write_keeps_its_lease_and_holds_readers_one_lease_at_most(
    shared_config: Callable[..., MemoryConfig], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    config = shared_config()
    a = MemoryCore(config, embedder=EMBEDDER)
    b = other_worker(config, session_id="s2")
    held = HeldWrites(a, monkeypatch)
    held.open.clear()
    a.add_message("user", "My sister Lena lives in Graz.")
    time.sleep(2.5)  # past the first lease: only a renewal keeps it live while the write hangs
    t0 = time.monotonic()
    b.recall("where does my sister live")
    waited = time.monotonic() - t0
    assert leases(a), "a live worker lost its lease while its write was slow"
    assert "re-stored" not in caplog.text  # not taken for dead: its turn was not embedded again
    held.open.set()
    # The reader gives up when the lease it first saw would have run out, not forever.
    assert 0.3 < waited < 6.0, waited
    a.flush()
    assert "Graz" in b.recall("where does my sister live", k=1)[0].text


@pytest.mark.slow
def test_forget_refuses_while_another_live_worker_still_holds_turns_of_the_user(
    shared_config: Callable[..., MemoryConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_vec._model.errors import BackendUnavailableError

    config = shared_config()
    a = MemoryCore(config, embedder=EMBEDDER)
    b = other_worker(config, session_id="s2")
    b.add_message("user", "I keep bees on the roof.")
    held = HeldWrites(a, monkeypatch)
    held.open.clear()
    a.add_message("user", "My passport number ends in 4471.")
    with pytest.raises(BackendUnavailableError, match="another worker"):
        b.forget()  # A's row would land after the delete: refused, nothing deleted
    assert b.export_memories()["records"]
    held.open.set()
    a.flush()
    b.forget()
    assert b.export_memories()["records"] == []


DYING_WORKER = """
import json, sys, time
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder
core = MemoryCore(MemoryConfig(**json.loads(sys.argv[1])), embedder=DeterministicHashEmbedder(dimension=64))
assert core.store.writer.background and core.store.writer.shared is not None
core.add_message("user", "I work as a nurse in Lisbon.")
core.flush()
core.store.writer._store = lambda batch: time.sleep(600)  # every later write hangs
r = core.add_message("user", "I adopted a cat named Miso last week.")
print("acked", r.id, r.pending, flush=True)
time.sleep(600)  # killed here
"""


@pytest.mark.slow
def test_a_turn_of_a_worker_killed_before_its_write_is_healed_by_the_next_reader(
    shared_config: Callable[..., MemoryConfig],
) -> None:
    config = shared_config()
    [[_, acked, pending]] = kill_after(spawn(DYING_WORKER, config.model_dump_json()), 1)
    assert pending == "True"
    b = other_worker(config, session_id="s2")
    assert b.store.backend.get([acked]) == []
    assert leases(b)  # left behind by the dead worker
    t0 = time.monotonic()
    hits = b.recall("what is the name of my cat", k=3)  # another session, the first read
    assert time.monotonic() - t0 < 10
    assert "Miso" in hits[0].text and acked in (hits[0].id, *hits[0].source_ids)
    assert leases(b) == []
    assert [r.id for r in b.store.backend.get([acked])] == [acked]


@pytest.mark.slow
def test_forget_drops_the_leases_a_dead_worker_left_on_the_user(shared_config: Callable[..., MemoryConfig]) -> None:
    config = shared_config()
    [[_, acked, _]] = kill_after(spawn(DYING_WORKER, config.model_dump_json()), 1)
    b = other_worker(config, session_id="s2")
    assert leases(b)
    time.sleep(2.5)  # the dead worker's lease runs out
    b.forget()
    assert leases(b) == []  # no id of the forgotten user is left behind in the leases
    assert b.store.backend.get([acked]) == [] and b.export_memories()["records"] == []


def test_forget_lets_go_of_the_user_leases(
    shared_config: Callable[..., MemoryConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = shared_config()
    a = MemoryCore(config, embedder=EMBEDDER)
    held = HeldWrites(a, monkeypatch, before_taken=True)
    held.open.clear()
    a.add_message("user", "I moved to Porto in March.")
    assert leases(a) and a.store.writer.pending_count
    a.forget()  # drops the queued rows: nothing of the user is left to wait for
    assert leases(a) == []
    held.open.set()
    b = other_worker(config, session_id="s2")
    t0 = time.monotonic()
    assert b.recall("where did I move") == []
    assert time.monotonic() - t0 < 1.0  # nothing to wait for


@pytest.mark.slow
def test_two_workers_in_two_processes_see_each_others_turns(
    shared_config: Callable[..., MemoryConfig], tmp_path: Path
) -> None:
    """Turns alternate between two processes, as a load balancer sends them:
    each one's recall finds the turn the other acknowledged just before."""
    config = shared_config()
    baton = tmp_path / "baton"
    baton.write_text("0")
    procs = [spawn(ALTERNATING, config.model_dump_json(), str(worker), str(baton)) for worker in (0, 1)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert out.split() == ["ok"] * 6


ALTERNATING = """
import json, os, sys, time
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder
ANIMALS = ["otter", "heron", "badger", "lynx", "marten", "ibis", "gecko", "walrus", "bison", "quokka", "tapir", "vole"]
config = MemoryConfig(**json.loads(sys.argv[1]))
me, baton = int(sys.argv[2]), sys.argv[3]  # the baton file: whose turn it is
core = MemoryCore(config, embedder=DeterministicHashEmbedder(dimension=64))
assert core.store.writer.background and core.store.writer.shared is not None

def turn():
    with open(baton) as fh:
        return int(fh.read() or -1)

def pass_baton(n):
    with open(baton + ".tmp", "w") as fh:
        fh.write(str(n))
    os.replace(baton + ".tmp", baton)

for n in range(12):
    if n % 2 != me:
        continue
    deadline = time.time() + 60
    while turn() != n:
        assert time.time() < deadline, "the other worker stopped"
        time.sleep(0.002)
    if n > 0:  # the other worker's turn n-1 was acknowledged just now; its vectors may still be queued
        animal = ANIMALS[n - 1]
        hits = core.recall(f"which {animal} did I see", k=3)
        assert any(animal in h.text for h in hits), (animal, [h.text for h in hits])
        print("ok", flush=True)
    core.add_message("user", f"Today I saw a {ANIMALS[n]} near the river.", session_id=f"w{me}")
    pass_baton(n + 1)
if me == 0:
    print("ok", flush=True)
core.close()
"""
