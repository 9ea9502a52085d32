"""Stores that the engine before #45 left with acknowledged turns unwritten open and heal.

tests/data/legacy_0_2_pending was written by that code itself (commit b05f8e4, with
make_pending.py beside it): background writes on, the writer thread holding 3 of alice's 7
acknowledged turns when the process was killed. On embedded Chroma and Milvus Lite its
unflushed-sessions file names the session; over a Chroma server a lease in the SQLite
working state does. The synchronous engine has neither: the working state's log is the one
crash-recovery path, and opening the store must store those turns before they are read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder
from tests._services import Service, find_binary, missing, start_service

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "legacy_0_2_pending"
EMBEDDER = DeterministicHashEmbedder(dimension=64)  # what make_pending.py used
STORED = {f"stored {i}: the plum count is {i}" for i in range(4)}
PENDING = {f"acknowledged {i}: the quince count is {i}" for i in range(4, 7)}


def _config(**kw: object) -> MemoryConfig:
    return MemoryConfig(user_id="alice", session_id="s1", fact_extractor="none", score_threshold=0.0, **kw)


def _assert_healed(core: MemoryCore) -> None:
    # Recall from another session reads the store, not the session's working state.
    hits = core.recall("the quince count is 6", k=3, session_id="another")
    assert hits and hits[0].text == "acknowledged 6: the quince count is 6"
    stored = {r.text for r in core.session_history()}
    assert stored >= STORED | PENDING, sorted(STORED | PENDING - stored)
    exported = core.export_memories(user_id="alice")
    texts = [r["text"] for r in exported["records"]]
    assert sorted(t for t in texts if t in STORED | PENDING) == sorted(STORED | PENDING), "each turn stored once"
    recent = [m.content for m in core.build_context("quince").recent]
    assert recent[-1] == "acknowledged 6: the quince count is 6"


@pytest.mark.parametrize("backend", ["chroma", "milvus"])
def test_an_unflushed_file_of_0_2_dev_is_healed_on_open(backend: str, tmp_path: Path) -> None:
    persist = tmp_path / backend
    shutil.copytree(FIXTURE / backend, persist)
    unflushed = next((persist / "state").glob("*.unflushed"))
    assert unflushed.read_text().strip(), "the fixture names the session whose turns were not written"
    with MemoryCore(
        _config(backend=backend, persist_dir=str(persist), collection="legacy_pending"), embedder=EMBEDDER
    ) as core:
        _assert_healed(core)
    assert not unflushed.exists(), "the marks go once their sessions are healed"


@pytest.mark.services
@pytest.mark.slow
def test_a_lease_of_0_2_dev_over_a_chroma_server_is_healed(tmp_path: Path) -> None:
    binary = find_binary("chroma", "MEMVEC_CHROMA_BIN")
    if binary is None:
        missing("the `chroma` server binary (pip install chromadb)")
    assert binary is not None
    data = tmp_path / "server-data"
    shutil.copytree(FIXTURE / "server-data", data)
    shutil.copytree(FIXTURE / "server", tmp_path / "server")
    server: Service = start_service(
        "chroma-legacy",
        lambda port, _dir: [binary, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        timeout=60,
    )
    try:
        config = _config(
            backend="chroma", url=server.url, persist_dir=str(tmp_path / "server"), collection="legacy_server"
        )
        with MemoryCore(config, embedder=EMBEDDER) as core:
            _assert_healed(core)
    finally:
        server.stop()
