"""forget() leaves no trace of the user's text in the library's own files."""

from __future__ import annotations

import uuid
from pathlib import Path

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec.testing import DeterministicHashEmbedder


def _files_with(root: Path, marker: bytes) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and marker in p.read_bytes()]


def test_forget_leaves_no_trace_in_the_sqlite_working_state(tmp_path: Path) -> None:
    marker = f"ZEBRA{uuid.uuid4().hex[:8]}"
    config = MemoryConfig(backend="memory", state="sqlite", persist_dir=str(tmp_path), user_id="gone",
                          collection=f"f_{uuid.uuid4().hex[:8]}", fact_extractor="none")
    core = MemoryCore(config, embedder=DeterministicHashEmbedder(dimension=32))
    keeper = MemoryCore(config.model_copy(update={"user_id": "stays"}), embedder=core.embedder)
    try:
        for i in range(30):
            core.add_message("user", f"my secret word is {marker} number {i}")
        keeper.add_message("user", "the other user's note stays")
        assert _files_with(tmp_path, marker.encode())  # it was on disk
        receipt = core.forget()
        assert receipt.remaining_after_scan == 0
        assert _files_with(tmp_path, marker.encode()) == []
        assert keeper.working_state().messages[0].content == "the other user's note stays"
    finally:
        release_stores()
