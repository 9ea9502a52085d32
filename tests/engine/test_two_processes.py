"""Two worker processes over one server: a long-lived process keyword-scores
a memory another process wrote after its first recall (within a second), and
stops serving what the other process forgot. The shared working state (SQLite
under one persist_dir) carries the keyword versions between them."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec.backends._milvus_consistency import OTHERS_BOUND_S
from memory_vec.testing import DeterministicHashEmbedder, parts

pytestmark = [pytest.mark.integration, pytest.mark.services]

EMBEDDER = DeterministicHashEmbedder(dimension=64)
ROOT = Path(__file__).resolve().parents[2]


def _other_process(config: MemoryConfig, code: str) -> None:
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


def _bm25_of(core: MemoryCore, query: str, text: str) -> float | None:
    for hit in core.recall(query, k=10):
        if hit.text == text:
            return float(hit.components.get("bm25", 0.0))
    return None


@pytest.mark.slow
@pytest.mark.parametrize("server", ["chroma_server", "milvus_server"])
def test_a_long_lived_process_sees_the_other_process_keywords(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = request.getfixturevalue(server).url
    config = MemoryConfig(
        backend="chroma" if server.startswith("chroma") else "milvus",
        url=url,
        collection=f"kw_{uuid.uuid4().hex[:8]}",
        persist_dir=str(tmp_path),
        user_id="u1",
        session_id="s1",
        score_threshold=0.0,
        fact_extractor="none",
    )
    worker = MemoryCore(config, embedder=EMBEDDER)
    try:
        worker.add_message("user", "we talked about the weather today")
        assert _bm25_of(worker, "weather", "we talked about the weather today")  # index built now
        text = "the gate code for the warehouse is ZQ7781"
        _other_process(config, f"core.add_message('user', {text!r}, session_id='s2')")
        deadline, score = time.monotonic() + 1.0, None
        while time.monotonic() < deadline and not score:
            score = _bm25_of(worker, "ZQ7781 gate code", text)
        assert score, "the other process's memory was not keyword-scored within a second"
        _other_process(config, "core.forget(session_id='s2')")
        deadline, found = time.monotonic() + 1.0, True
        while time.monotonic() < deadline and found:
            found = any(h.text == text for h in worker.recall("ZQ7781 gate code", k=10))
        assert not found, "a memory the other process forgot is still served"
    finally:
        release_stores()


def test_the_keyword_cache_stays_bounded(make_core: Any) -> None:
    core = make_core(keyword_cache_users=3, keyword_cache_docs=10_000)
    for i in range(6):
        core.add_message("user", f"user {i} keeps a note about topic{i}", user_id=f"user{i}")
        core.recall(f"topic{i}", user_id=f"user{i}")
    assert parts(core).store.keywords.users == 3
    assert core.recall("topic0", user_id="user0")[0].components["bm25"] > 0  # rebuilt when needed


def _texts(core: MemoryCore, query: str) -> list[str]:
    return [h.text for h in core.recall(query, k=10)]


def _within(seconds: float, check: Any) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
    return bool(check())


@pytest.mark.slow
@pytest.mark.parametrize("server", ["chroma_server", "milvus_server"])
def test_a_long_lived_process_follows_the_other_process_updates_and_shared_memories(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The worker's recall reads the engine: another process's supersede and a
    global memory of another user reach it (Milvus: within the stated bound for
    other clients' writes); that user's private memory never does."""
    url = request.getfixturevalue(server).url
    config = MemoryConfig(
        backend="chroma" if server.startswith("chroma") else "milvus",
        url=url,
        collection=f"rp_{uuid.uuid4().hex[:8]}",
        persist_dir=str(tmp_path),
        user_id="u1",
        session_id="s1",
        score_threshold=0.0,
        fact_extractor="none",
    )
    other_user = config.model_copy(update={"user_id": "u2"})
    # Chroma reads show other clients' writes at once; Milvus Session reads within its stated bound.
    wait = 1.0 if server.startswith("chroma") else OTHERS_BOUND_S
    worker = MemoryCore(config, embedder=EMBEDDER)
    try:
        old = worker.remember("the team budget is 5000 euros").id
        assert "the team budget is 5000 euros" in _texts(worker, "team budget")  # the copy is loaded
        _other_process(config, f"core.update({old!r}, 'the team budget is 8000 euros')")
        assert _within(
            wait,
            lambda: (
                "the team budget is 8000 euros" in _texts(worker, "team budget")
                and "the team budget is 5000 euros" not in _texts(worker, "team budget")
            ),
        ), "the other process's supersede did not reach the worker's recall"
        _other_process(
            other_user,
            "core.remember('the office wifi password is KIWI-42', visibility='global')\n"
            "core.remember('my private diary code is PRIVATE-99')",
        )
        assert _within(wait, lambda: "the office wifi password is KIWI-42" in _texts(worker, "wifi password")), (
            "another user's global memory did not reach the worker's recall"
        )
        assert not any("PRIVATE-99" in t for t in _texts(worker, "private diary code PRIVATE-99"))
    finally:
        release_stores()
