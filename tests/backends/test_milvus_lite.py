"""Milvus Lite by a local path, run through the shared conformance suite."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_vec.backends.milvus import MilvusBackend
from memory_vec.testing.conformance import BackendConformance

pytestmark = pytest.mark.integration


class TestMilvusLite(BackendConformance):
    supports_reopen = True
    exclusive_process_lock = True  # a Lite path is single-process (StoreLockedError)
    large_batch_size = 10_000

    @pytest.fixture
    def backend(self, tmp_path: Path) -> Iterator[MilvusBackend]:
        path = tmp_path / "milvus.db"
        b = MilvusBackend(str(path), collection="conformance")
        yield b
        b.close()
        shutil.rmtree(path, ignore_errors=True)

    def reopen(self, backend: MilvusBackend) -> MilvusBackend:  # type: ignore[override]
        return MilvusBackend(backend.uri, collection=backend.collection)

    def subprocess_code(self, backend: MilvusBackend) -> str:  # type: ignore[override]
        return (
            "from memory_vec.backends.milvus import MilvusBackend\n"
            f"backend = MilvusBackend({backend.uri!r}, collection={backend.collection!r})\n"
        )

    def seal(self, backend: MilvusBackend) -> None:  # type: ignore[override]
        backend.flush()


def test_unknown_or_bad_options_are_config_errors_before_anything_is_created(tmp_path: Path) -> None:
    from memory_vec import MemoryConfig, MemoryCore
    from memory_vec.errors import ConfigError
    from memory_vec.testing import DeterministicHashEmbedder

    store = tmp_path / "store"
    for options, named in (({"consistency": "Strong"}, "consistency"),
                           ({"consistency_level": "Sometimes"}, "consistency_level")):
        config = MemoryConfig(backend="milvus", persist_dir=str(store), backend_options=options)
        with pytest.raises(ConfigError, match=named):
            MemoryCore(config, embedder=DeterministicHashEmbedder(dimension=16))
        assert not (store / "milvus.db").exists()


def test_consistency_level_is_taken_from_backend_options(tmp_path: Path) -> None:
    from memory_vec import MemoryConfig

    config = MemoryConfig(backend="milvus", persist_dir=str(tmp_path),
                          backend_options={"consistency_level": "Strong", "exact_fallback_limit": 0})
    backend = MilvusBackend.from_config(config)
    assert (backend._consistency, backend._exact_limit) == ("Strong", 0)
