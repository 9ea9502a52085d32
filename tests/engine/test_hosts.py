"""Several hosts over one server (#45): each "host" is a process with a
persist_dir of its own. With the default working state (one host's SQLite
file) the second host is refused at open, naming state="redis"; with
state="redis" it serves neither a superseded value nor a forgotten user's
text after the first host changed them; no recall raises while another
host deletes; and a Milvus server shows another client's write within the
stated bound."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_vec import ConfigError, MemoryConfig, MemoryCore, release_stores
from memory_vec.backends._milvus_consistency import OTHERS_BOUND_S
from memory_vec.backends.base import RecordFilter
from memory_vec.backends.milvus import MilvusBackend
from memory_vec.testing import DeterministicHashEmbedder
from memory_vec.testing.conformance import DIMENSION, MODEL_ID, make_record, vectors_for
from tests.fixtures_redis import redis_url

pytestmark = [pytest.mark.integration, pytest.mark.services]

EMBEDDER = DeterministicHashEmbedder(dimension=64)
ROOT = Path(__file__).resolve().parents[2]
SERVERS = ["chroma_server", "milvus_server"]
RECALLS = 1000
# The recalls run on this many threads sharing the reading host's core (as a threaded web
# worker has it). On the Milvus server a recall mostly waits: pymilvus keeps the Session
# timestamp per process, so in one process each read waits until the server applied the delete
# loop's last write (~190 ms a recall, ~24 ms without the loop); 16 threads overlap the waits
# (1,000 recalls in 31-45 s at load 7; one after another, 300 took 85 s). On the Chroma server
# a recall is client work (HTTP, JSON): more threads would only starve the delete loop of the
# GIL (16 threads: ~19 delete rounds overlapped the recalls; 4: ~90).
READERS = {"chroma_server": 4, "milvus_server": 16}


def _config(
    server: str, request: pytest.FixtureRequest, persist_dir: Path, collection: str, **extra: Any
) -> MemoryConfig:
    return MemoryConfig(
        backend="chroma" if server.startswith("chroma") else "milvus",
        url=request.getfixturevalue(server).url,
        collection=collection,
        persist_dir=str(persist_dir),
        user_id="u1",
        session_id="s1",
        score_threshold=0.0,
        fact_extractor="none",
        **extra,
    )


def _host(config: MemoryConfig, code: str) -> str:
    """``code`` run by a core of ``config`` in another process (another host: its own persist_dir)."""
    script = (
        "from memory_vec import MemoryConfig, MemoryCore\n"
        "from memory_vec.testing import DeterministicHashEmbedder\n"
        f"core = MemoryCore(MemoryConfig.model_validate_json({config.model_dump_json()!r}),"
        " embedder=DeterministicHashEmbedder(dimension=64))\n" + code + "\ncore.close()\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def _served(core: MemoryCore, query: str, user_id: str = "u1", session_id: str = "s1") -> str:
    """Everything the core would give a model: recalled texts and the built context."""
    recalled = " | ".join(h.text for h in core.recall(query, k=10, user_id=user_id, session_id=session_id))
    ctx = core.build_context(query, user_id=user_id, session_id=session_id)
    return f"{recalled} | {ctx.render_summary()} | {ctx.render_history()} | {ctx.render()}"


@pytest.mark.parametrize("server", SERVERS)
def test_a_second_host_with_its_own_sqlite_state_is_refused_at_open(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    collection = f"hosts_{uuid.uuid4().hex[:8]}"
    first = _config(server, request, tmp_path / "host-a", collection)
    _host(first, "core.remember('the team budget is 5000 euros')")
    second = _config(server, request, tmp_path / "host-b", collection)
    try:
        with pytest.raises(ConfigError, match="state='redis'"):
            MemoryCore(second, embedder=EMBEDDER)
        # The first host's processes (its persist_dir) still open it.
        again = MemoryCore(first, embedder=EMBEDDER)
        assert "5000" in again.recall("team budget", k=1)[0].text
    finally:
        release_stores()


@pytest.mark.parametrize("server", SERVERS)
def test_with_redis_state_a_second_host_serves_neither_the_old_value_nor_forgotten_text(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    collection = f"hosts_{uuid.uuid4().hex[:8]}"
    url = redis_url(request.getfixturevalue("redis_server"), db=5)
    first = _config(server, request, tmp_path / "host-a", collection, state="redis", redis_url=url)
    second_config = _config(server, request, tmp_path / "host-b", collection, state="redis", redis_url=url)
    old = _host(
        first,
        "print(core.remember('the team budget is 5000 euros').id)\n"
        "core.add_message('user', 'my locker code is ZQ7781', user_id='gone', session_id='g1')",
    ).split()[-1]
    second = MemoryCore(second_config, embedder=EMBEDDER)
    try:
        assert "5000" in _served(second, "team budget")  # read once: anything it keeps is now stale
        assert "ZQ7781" in _served(second, "locker code ZQ7781", "gone", "g1")
        _host(first, f"core.update({old!r}, 'the team budget is 8000 euros')\ncore.forget(user_id='gone')")
        served = _served(second, "team budget")
        assert "8000" in served and "5000" not in served
        assert "ZQ7781" not in _served(second, "locker code ZQ7781", "gone", "g1")
    finally:
        release_stores()


@pytest.mark.parametrize("server", SERVERS)
def test_no_recall_raises_while_another_host_deletes(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A bounded delete loop on one host (remember, delete; forget), RECALLS recalls on the
    other by READERS threads sharing its core."""
    collection = f"hosts_{uuid.uuid4().hex[:8]}"
    url = redis_url(request.getfixturevalue("redis_server"), db=6)
    deleter = MemoryCore(
        _config(server, request, tmp_path / "host-a", collection, state="redis", redis_url=url), embedder=EMBEDDER
    )
    reader = MemoryCore(
        _config(server, request, tmp_path / "host-b", collection, state="redis", redis_url=url), embedder=EMBEDDER
    )
    for i in range(20):
        deleter.add_message("user", f"note {i} about the orchard and the apples")
    stop, errors, recalled, rounds = threading.Event(), [], [], []

    def delete_loop() -> None:  # bounded: it stops with the recalls, or after 500 rounds
        for i in range(500):
            if stop.is_set():
                return
            deleter.delete(deleter.remember(f"the orchard has {i} apple trees").id)
            if i % 5 == 4:
                deleter.forget()
                deleter.add_message("user", f"note again {i} about the orchard")
            rounds.append(i)

    def read_loop(n: int) -> None:
        for _ in range(n):
            try:
                reader.recall("orchard apples note trees", k=10)
            except Exception as exc:  # counted and reported below
                errors.append(repr(exc))
            recalled.append(1)

    thread = threading.Thread(target=delete_loop)
    threads = READERS[server]
    shares = [RECALLS // threads + (i < RECALLS % threads) for i in range(threads)]
    readers = [threading.Thread(target=read_loop, args=(n,)) for n in shares]
    thread.start()
    try:
        before = len(rounds)
        for r in readers:
            r.start()
        for r in readers:
            r.join()
        during = len(rounds) - before
        assert thread.is_alive(), "the delete loop ended before the recalls: they were not concurrent"
    finally:
        stop.set()
        thread.join(60)
        release_stores()
    assert len(recalled) == RECALLS, f"{RECALLS - len(recalled)} recalls never ran (a reader thread died)"
    assert errors == [], f"{len(errors)} of {RECALLS} recalls raised: {errors[:3]}"
    # At least one forget (every fifth round) fell among the recalls, not only before or after them.
    assert during >= 5, f"only {during} delete rounds ran during the recalls"


def test_a_milvus_server_shows_another_clients_write_within_the_stated_bound(milvus_server: Any) -> None:
    name = f"bound_{uuid.uuid4().hex[:10]}"
    writer = MilvusBackend(milvus_server.url, collection=name)
    reader = MilvusBackend(milvus_server.url, collection=name)
    writer.open(dimension=DIMENSION, model_id=MODEL_ID)
    reader.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        assert reader.read_staleness == OTHERS_BOUND_S
        waits = []
        for i in range(3):
            record = make_record(f"r{i}", user_id="u1", seq=i)
            writer.upsert([record], vectors_for([record]))
            assert writer.get([record.id]) == [record]  # its own write at once (Session)
            t0 = time.monotonic()
            while not reader.get([record.id]) and time.monotonic() - t0 < 2 * OTHERS_BOUND_S:
                time.sleep(0.05)
            waits.append(time.monotonic() - t0)
            assert reader.get([record.id]), "another client's write not visible"
        assert max(waits) <= OTHERS_BOUND_S, waits
        hits = reader.query(np.asarray(vectors_for([record])[0]), k=5, where=RecordFilter(user_id="u1"))
        assert {h.record.id for h in hits} == {"r0", "r1", "r2"}
    finally:
        writer.drop()
        writer.close()
        reader.close()
