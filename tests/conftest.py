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


# The C++ Milvus server binds fixed ports (its etcd's 2379, metrics from 9091): one per machine.
# Under pytest-xdist (scripts/test.sh runs the server tier with `-n 2 --dist loadgroup`) every test
# that may use it goes in one xdist_group, so only the worker that runs that group starts it.
MILVUS_SERVER_GROUP = "milvus-server"
# How tests name that server: the fixture, or a parameter value that makes a test (or its
# fixtures) request it through request.getfixturevalue (backend kinds, fixture names).
_MILVUS_SERVER_NAMES = frozenset({"milvus_server", "milvus-server"})


def uses_milvus_server(item: pytest.Item) -> bool:
    """Whether a collected test may use the C++ Milvus server, judged before it runs."""
    if "milvus_server" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(
        isinstance(value, str) and value in _MILVUS_SERVER_NAMES for value in callspec.params.values()
    ):
        return True
    cls = getattr(item, "cls", None)  # the conformance suites name theirs in a class attribute
    return getattr(cls, "service_fixture", None) == "milvus_server"


def _in_loadgroup_worker(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "loadgroup", False))  # set by xdist in a --dist loadgroup worker


def _group_suffix_missing(item: pytest.Item) -> bool:
    return not item.nodeid.endswith(f"@{MILVUS_SERVER_GROUP}")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    grouped = []
    if config.pluginmanager.hasplugin("xdist"):  # the marker is xdist's (and --strict-markers)
        grouped = [item for item in items if uses_milvus_server(item)]
        for item in grouped:  # before xdist's own hook reads the groups into the node ids
            item.add_marker(pytest.mark.xdist_group(MILVUS_SERVER_GROUP))
    result = yield
    if _in_loadgroup_worker(config):
        # The scheduler groups tests by an "@<group>" suffix of their node ids. pytest-xdist 3.8
        # writes it to Item._nodeid, which pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386):
        # without this the group is silently spread over the workers and each starts a server.
        for item in grouped:
            if _group_suffix_missing(item) and hasattr(item, "_id"):  # pytest >= 9.2 (structured ids)
                from _pytest.nodeid import NodeId

                item._id = NodeId.parse(f"{item.nodeid}@{MILVUS_SERVER_GROUP}")
    return result


@pytest.fixture(autouse=True)
def _milvus_server_only_in_its_group(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that used the C++ Milvus server outside its group fails here (a worker outside
    the group would try to start a second server): uses_milvus_server must learn how it asks
    for the server, or the node id lost its group suffix (see pytest_collection_modifyitems)."""
    yield
    if "milvus_server" not in request.fixturenames or not request.config.pluginmanager.hasplugin("xdist"):
        return
    marked = any(MILVUS_SERVER_GROUP in mark.args for mark in request.node.iter_markers("xdist_group"))
    if not marked or (_in_loadgroup_worker(request.config) and _group_suffix_missing(request.node)):
        pytest.fail(
            f"{request.node.nodeid} used the milvus_server fixture but is not in xdist_group"
            f" {MILVUS_SERVER_GROUP!r} (see tests/conftest.py: uses_milvus_server)"
        )


# Session-scoped server fixtures, one module per engine (each starts its
# server lazily, on first use, and stops it at the end of the session).
pytest_plugins = ["tests.fixtures_chroma", "tests.fixtures_milvus", "tests.fixtures_redis"]
