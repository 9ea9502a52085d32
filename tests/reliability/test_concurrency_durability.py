"""Concurrency, kill -9 durability, and faults against real stores."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import StateStoreError
from memory_vec.state.base import StateMessage
from memory_vec.testing import DeterministicHashEmbedder

from .conftest import EMBEDDER, SERVER_BACKENDS

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class MarkerSummarizer:
    """Summary = the seqs folded so far, so a double fold is visible."""

    name = "marker"

    def summarize(self, previous: str, messages: Sequence[StateMessage], *, max_tokens: int) -> str:
        seqs = [int(x) for x in re.findall(r"#(\d+)", previous)] + [m.seq for m in messages]
        return " ".join(f"#{s}" for s in seqs[-40:])  # stays within the summary budget


def check_session(core: MemoryCore, expected: int) -> None:
    history = core.session_history()
    seqs = [r.seq for r in history]
    assert len(history) == expected, "lost or duplicated messages"
    assert len({r.id for r in history}) == expected and len(set(seqs)) == expected
    assert seqs == sorted(seqs)
    state = core.working_state()
    recent = [m.seq for m in state.messages]
    assert recent == sorted(set(recent)) and all(s > state.folded_through for s in recent)
    folded = [int(x) for x in re.findall(r"#(\d+)", state.summary)]
    assert len(folded) == len(set(folded)), "a turn was folded twice"
    assert set(folded) | set(recent) <= set(seqs)


def test_eight_threads_one_session(core_factory) -> None:  # type: ignore[no-untyped-def]
    core = core_factory(
        summarizer=MarkerSummarizer(),
        fact_extractor="none",
        max_token_limit=200,
        summary_max_tokens=150,
        keep_recent_turns=2,
    )
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(20):
                core.add_message("user", f"thread {t} message {i} with some filler words")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    core.flush()
    check_session(core, 160)


WRITER = """
import json, sys
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder
sys.path.insert(0, {root!r})
from tests.reliability.test_concurrency_durability import MarkerSummarizer
core = MemoryCore(MemoryConfig(**json.loads(sys.argv[1])), embedder=DeterministicHashEmbedder(dimension=64),
                  summarizer=MarkerSummarizer())
n = int(sys.argv[2])
for i in range(n if n > 0 else 10**9):
    r = core.add_message("user", f"proc {{sys.argv[3]}} message {{i}} with filler words")
    print(r.id, r.seq, flush=True)
core.close()
"""


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
    )


def run_writer(config: MemoryConfig, n: int, tag: str) -> subprocess.Popen[str]:
    return spawn(WRITER.format(root=ROOT), config.model_dump_json(), str(n), tag)


def kill_after(proc: subprocess.Popen[str], lines: int) -> list[list[str]]:
    """The first ``lines`` lines the process printed (split), then kill -9 it."""
    read: list[list[str]] = []
    assert proc.stdout is not None
    deadline = time.time() + 120
    while len(read) < lines and time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        read.append(line.split())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(read) == lines, proc.stderr.read()[-2000:] if proc.stderr else ""
    return read


@pytest.mark.parametrize("state", ["sqlite", "redis"])
@pytest.mark.parametrize("kind", SERVER_BACKENDS)
def test_four_processes_one_session(kind, state, request, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from .conftest import _config_factory

    extra = {}
    if state == "redis":
        from tests.fixtures_redis import redis_url

        extra["redis_url"] = redis_url(request.getfixturevalue("redis_server"))
    config = _config_factory(kind, request, tmp_path)(
        fact_extractor="none", max_token_limit=200, summary_max_tokens=150, keep_recent_turns=2, state=state, **extra
    )
    procs = [run_writer(config, 25, str(p)) for p in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        assert len(out.splitlines()) == 25
    core = MemoryCore(config, embedder=EMBEDDER)
    check_session(core, 100)


@pytest.mark.parametrize("kind", ["chroma", "milvus-lite", "chroma+redis"])
def test_kill_9_loses_no_acknowledged_write(kind, request, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from .conftest import _config_factory

    extra = {}
    base_kind = kind.split("+")[0]
    if kind.endswith("+redis"):
        from tests.fixtures_redis import redis_url

        extra["redis_url"] = redis_url(request.getfixturevalue("redis_server"), db=1)
    config = _config_factory(base_kind, request, tmp_path)(
        fact_extractor="none", max_token_limit=300, summary_max_tokens=150, keep_recent_turns=2, **extra
    )
    acked = [(rid, int(seq)) for rid, seq in kill_after(run_writer(config, 0, "k"), 60)]
    core = MemoryCore(config, embedder=EMBEDDER)  # the restarted process
    stored = {r.id: r for r in core.session_history()}
    missing = [rid for rid, _ in acked if rid not in stored]
    assert not missing, f"{len(missing)} acknowledged writes lost"
    state = core.working_state()
    recent = {m.seq for m in state.messages}
    for _rid, seq in acked:  # the working state agrees with the store
        assert seq in recent or seq <= state.folded_through
    assert all(m.id in stored for m in state.messages if m.seq <= max(s for _, s in acked))


def test_redis_down_is_a_clear_error_and_nothing_is_written(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests._services import free_port

    config = MemoryConfig(
        backend="memory", redis_url=f"redis://127.0.0.1:{free_port()}/0", collection="redis-down", backend_timeout=1.0
    )
    with pytest.raises(StateStoreError, match=r"(?i)redis"):
        core = MemoryCore(config, embedder=DeterministicHashEmbedder(dimension=64))
        core.add_message("user", "hello while redis is down")
