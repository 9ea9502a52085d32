"""Collection names a user may pick (Chinese, spaces, short ones) work on every backend."""

from __future__ import annotations

import pytest

from memory_vec import MemoryCore

from .conftest import EMBEDDER, ConfigFactory

NAMES = ["用户记忆", "my memories", "ab", "127.0.0.1", "Team.Notes_v2-1"]  # see also tests/backends


@pytest.mark.parametrize("name", NAMES)
def test_collection_name_stores_and_reopens(make_config: ConfigFactory, name: str) -> None:
    writer = MemoryCore(make_config(collection=name, session_id="s1"), embedder=EMBEDDER)
    writer.add_messages([("user", "my travel budget is 5000 euros"), ("assistant", "noted")])
    writer.close()
    reader = MemoryCore(make_config(collection=name, session_id="s2"), embedder=EMBEDDER)
    try:
        recalled = [m.text for m in reader.build_context("what is my travel budget?").relevant]
        assert any("5000" in text for text in recalled), recalled
    finally:
        reader.close()
