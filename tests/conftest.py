"""Shared fixtures: fast fakes for unit tests, real models for integration."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import uuid
from collections.abc import Iterator

import pytest

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder
from tests._services import remove_service_data


@pytest.fixture
def hash_embedder() -> DeterministicHashEmbedder:
    return DeterministicHashEmbedder(dimension=256)


@pytest.fixture
def make_core(hash_embedder: DeterministicHashEmbedder):  # type: ignore[no-untyped-def]
    """Build a MemoryCore on fresh in-process stores with the hashing embedder."""

    def factory(backend=None, state=None, embedder=None, **config):  # type: ignore[no-untyped-def]
        config.setdefault("user_id", "u1")
        config.setdefault("session_id", "s1")
        config.setdefault("score_threshold", 0.0)
        return MemoryCore(
            MemoryConfig(**config),
            embedder=embedder or hash_embedder,
            backend=backend or InMemoryBackend(),
            state_store=state or InMemoryStateStore(),
        )

    return factory


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture(autouse=True, scope="session")
def _release_shared() -> Iterator[None]:
    yield
    try:
        release_stores()
    finally:
        # Set up before any server fixture, so torn down after they have stopped their servers.
        remove_service_data()


# The public conformance suites (memory_vec.testing) cannot carry this project's markers; their
# tests that start other Python processes take seconds each, so they go to the slow tier here.
_CONFORMANCE_TESTS_IN_PROCESSES = frozenset(
    {
        "test_concurrent_writers_from_processes",
        "test_persists_in_a_new_process",
        "test_processes_append_concurrently",
        "test_processes_swap_versions_atomically",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if getattr(item, "originalname", None) in _CONFORMANCE_TESTS_IN_PROCESSES:
            item.add_marker(pytest.mark.slow)


# Session-scoped server fixtures, one module per engine (each starts its
# server lazily, on first use, and stops it at the end of the session; the C++
# Milvus server is one per run, shared by pytest-xdist's workers).
pytest_plugins = ["tests.fixtures_chroma", "tests.fixtures_milvus", "tests.fixtures_redis"]
