"""Collection names a user may pick (Chinese, spaces, short ones) work on every backend."""

from __future__ import annotations

import pytest

from memory_vec import MemoryCore
from memory_vec.testing import parts

from .conftest import EMBEDDER, ConfigFactory

NAMES = ["用户记忆", "my memories", "ab", "127.0.0.1", "Team.Notes_v2-1"]  # see also tests/backends


@pytest.mark.slow
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
        # A server outlives the test: the next test's collection of this name is a new one,
        # not one recorded with this test's working state (a persist_dir under tmp_path).
        reader.close()
        parts(reader).backend.drop()
        parts(reader).backend.close()


@pytest.mark.slow
def test_names_mapped_alike_stay_apart(make_config: ConfigFactory) -> None:
    """'my memories' and 'my  memories' share a readable part, 'my-memories' is kept as given: three collections
    in one directory (or server), each serving only its own memories."""
    cores = {
        name: MemoryCore(make_config(collection=name, session_id="s1"), embedder=EMBEDDER)
        for name in ("my memories", "my  memories", "my-memories")
    }
    try:
        for name, core in cores.items():
            core.add_messages([("user", f"the code word of {name} is {name.upper().replace(' ', '_')}")])
            core.flush()
        for name, core in cores.items():
            recalled = [m.text for m in core.build_context("what is the code word?", session_id="s2").relevant]
            assert [t for t in recalled if "code word" in t] == [
                f"the code word of {name} is {name.upper().replace(' ', '_')}"
            ], (name, recalled)
    finally:
        for core in cores.values():
            core.close()
            parts(core).backend.drop()
            parts(core).backend.close()
