"""Every backend, built from config the way users build it, for reliability tests.

The hashing embedder stands in for the model (speed); the stores and
servers are real.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore, Summarizer
from memory_vec._storage.store import release_stores
from memory_vec.testing import DeterministicHashEmbedder

BACKENDS = ["memory", "sqlite", "chroma", "chroma-server", "milvus-lite", "milvus-lite-server", "milvus-server"]
SERVER_BACKENDS = ["chroma-server", "milvus-lite-server", "milvus-server"]
EMBEDDER = DeterministicHashEmbedder(dimension=64)

ConfigFactory = Callable[..., MemoryConfig]


@pytest.fixture
def fresh_stores() -> Iterator[None]:
    """The process's cached stores closed after the test (``pytest.mark.usefixtures``):
    the next test, or the test's own "next process", opens them anew."""
    yield
    release_stores()


def _config_factory(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> ConfigFactory:
    collection = f"rel_{uuid.uuid4().hex[:10]}"
    base: dict[str, Any] = {"collection": collection, "persist_dir": str(tmp_path / "store"), "score_threshold": 0.0}
    if kind in ("memory", "sqlite"):
        base["backend"] = kind
    elif kind == "chroma":
        base["backend"] = "chroma"
    elif kind == "chroma-server":
        base.update(backend="chroma", url=request.getfixturevalue("chroma_server").url)
    elif kind == "milvus-lite":
        base["backend"] = "milvus"
    elif kind == "milvus-lite-server":
        base.update(backend="milvus", url=request.getfixturevalue("milvus_lite_server").url)
    elif kind == "milvus-server":
        base.update(backend="milvus", url=request.getfixturevalue("milvus_server").url)
    else:  # pragma: no cover
        raise ValueError(kind)

    def make(**overrides: Any) -> MemoryConfig:
        return MemoryConfig(**{**base, **overrides})

    return make


@pytest.fixture(
    params=[
        pytest.param(kind, marks=[pytest.mark.services, pytest.mark.integration]) if kind in SERVER_BACKENDS else kind
        for kind in BACKENDS
    ]
)
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_config(backend_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> ConfigFactory:
    return _config_factory(backend_kind, request, tmp_path)


@pytest.fixture
def core_factory(make_config: ConfigFactory) -> Callable[..., MemoryCore]:
    def make(*, summarizer: Summarizer | None = None, **overrides: Any) -> MemoryCore:
        return MemoryCore(make_config(**overrides), embedder=EMBEDDER, summarizer=summarizer)

    return make
