"""The store every CLI test opens: a YAML config file, and a core on the same store."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_vec import MemoryConfig, MemoryCore


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "memory.yaml"
    path.write_text(
        f"backend: memory\npersist_dir: {tmp_path / 'store'}\nembedding_model: 'hash:64'\n"
        "user_id: alice\nsession_id: s1\nscore_threshold: 0.0\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def core(config_file: Path) -> MemoryCore:
    """The same store the CLI opens (shared per process and persist_dir)."""
    return MemoryCore(MemoryConfig.from_yaml(config_file))
