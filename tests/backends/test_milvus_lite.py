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
