"""A persist_dir written by memory-vec 0.1 opens with the new engine and
loses nothing. tests/data/legacy_0_1 was built by the 0.1 code itself
(commit f391e6f) with make_legacy.py beside it: two collections of embedded
Chroma and two of Milvus Lite, all sharing 0.1's one state.sqlite3 per
persist_dir (the layout that leaked between collections)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec.testing import DeterministicHashEmbedder

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "legacy_0_1"
EMBEDDER = DeterministicHashEmbedder(dimension=64)  # what make_legacy.py used


def _legacy_messages(path: Path) -> set[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        return set(conn.execute("SELECT user_id, session_id, content FROM messages").fetchall())


@pytest.mark.parametrize("backend", ["chroma", "milvus"])
def test_a_0_1_persist_dir_opens_without_loss(backend: str, tmp_path: Path) -> None:
    persist = tmp_path / backend
    shutil.copytree(FIXTURE / backend, persist)
    legacy = persist / "state.sqlite3"
    before = _legacy_messages(legacy)
    assert before, "the fixture has working-state messages"
    cores = {
        coll: MemoryCore(
            MemoryConfig(
                backend=backend,
                persist_dir=str(persist),
                collection=coll,
                user_id="alice",
                session_id="s1",
                fact_extractor="none",
                score_threshold=0.0,
                max_token_limit=200,
                summary_max_tokens=80,
                keep_recent_turns=2,
            ),
            embedder=EMBEDDER,
        )
        for coll in ("legacy_a", "legacy_b")
    }
    try:
        # Stored records of both collections are all there and recalled.
        for coll, word in (("legacy_a", "apricot"), ("legacy_b", "blueberry")):
            core = cores[coll]
            hits = core.recall(f"the {coll} secret fruit is {word} number 5", k=3)
            assert hits and f"{word} number 5" in hits[0].text
            texts = {r.text for r in core.session_history()}
            assert {f"note {i}: the {coll} secret fruit is {word} number {i}" for i in range(6)} <= texts
        # Every working-state message of the shared 0.1 file now lives in
        # exactly the collections' own state (none lost), and the 0.1 file
        # has handed all its sessions over.
        after = {
            ("alice", s, m.content)
            for core in cores.values()
            for s in ("s1", "s2")
            for m in core.working_state(session_id=s).messages
        }
        assert before <= after
        assert _legacy_messages(legacy) == set()
        summaries = [core.working_state().summary for core in cores.values()]
        assert any(summaries), "the 0.1 running summary was kept"
        # New writes go to the collection's own state and stay there.
        cores["legacy_a"].add_message("user", "a new message after the upgrade")
        assert "a new message after the upgrade" not in {m.content for m in cores["legacy_b"].working_state().messages}
    finally:
        release_stores()
