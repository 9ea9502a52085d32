"""A real Chroma server (``chroma run``) against the conformance suite."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from memory_vec import MemoryConfig
from memory_vec._model.errors import BackendUnavailableError
from memory_vec.backends import Backend, create_backend
from memory_vec.backends.chroma import ChromaBackend
from memory_vec.backends.guard import GuardedBackend
from memory_vec.testing.conformance import BackendConformance, make_record
from tests._services import Service, free_port

pytestmark = [pytest.mark.integration, pytest.mark.services]


class TestChromaServer(BackendConformance):
    """Many processes may write to one server collection."""

    supports_reopen = True
    supports_multiprocess = True
    exclusive_process_lock = False

    @pytest.fixture
    def backend(self, chroma_server: Service) -> Iterator[ChromaBackend]:
        collection = f"conf-{uuid.uuid4().hex[:12]}"
        store = ChromaBackend(url=chroma_server.url, collection=collection)
        yield store
        cleanup = ChromaBackend(url=chroma_server.url, collection=collection)
        cleanup.drop()
        cleanup.close()
        store.close()

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, ChromaBackend)
        return ChromaBackend(url=backend.url, collection=backend.collection_name)

    def subprocess_code(self, backend: Backend) -> str:
        assert isinstance(backend, ChromaBackend)
        return textwrap.dedent(f"""
            from memory_vec.backends.chroma import ChromaBackend
            backend = ChromaBackend(url={backend.url!r}, collection={backend.collection_name!r})
        """)


def test_config_with_url_builds_a_guarded_server_backend(chroma_server: Service) -> None:
    config = MemoryConfig(
        backend="chroma",
        url=chroma_server.url,
        collection=f"cfg-{uuid.uuid4().hex[:8]}",
        backend_timeout=5,
        backend_retries=1,
    )
    backend = create_backend(config)
    assert isinstance(backend, GuardedBackend) and isinstance(backend.inner, ChromaBackend)
    try:
        backend.open(dimension=4, model_id="m4")
        backend.upsert([make_record("r1")], np.eye(4, dtype=np.float32)[:1])
        assert backend.count() == 1
        backend.drop()
    finally:
        backend.close()


def test_unreachable_server_is_backend_unavailable() -> None:
    backend = ChromaBackend(url=f"http://127.0.0.1:{free_port()}", collection="nowhere")
    with pytest.raises(BackendUnavailableError, match=r"unreachable.*Check that it is running"):
        backend.open(dimension=4, model_id="m4")


def test_a_new_collections_index_still_being_flushed_is_retried_not_fatal() -> None:
    """Chroma 1.x serves a read that races a new collection's first flush with this
    error; a moment later the read works. The guard retries it (as the background
    writer makes the race common: tests/reliability/test_isolation.py failed 1 run in 3)."""
    from chromadb.errors import InternalError

    from memory_vec._model.errors import BackendError
    from memory_vec.backends._chroma_errors import Translate

    racing = InternalError(
        "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk"
    )
    with pytest.raises(BackendUnavailableError, match="still writing"), Translate("http://x", "scan records"):
        raise racing
    damaged = InternalError(
        "Error constructing hnsw segment reader: Error creating hnsw segment reader: Error loading hnsw index"
    )
    with pytest.raises(BackendError) as caught, Translate("http://x", "scan records"):
        raise damaged
    assert not isinstance(caught.value, BackendUnavailableError)  # a damaged index is not retried

    calls = []

    class FlushingThenReady(ChromaBackend):
        def __init__(self) -> None:  # no server: only count() is called
            pass

        def count(self, where=None) -> int:  # type: ignore[no-untyped-def, override]
            calls.append(1)
            with Translate("http://x", "count records"):
                if len(calls) < 3:
                    raise racing
            return 7

        def close(self) -> None:
            pass

    guarded = GuardedBackend(FlushingThenReady(), timeout=5.0, retries=2, backoff=0.01)
    assert guarded.count() == 7 and len(calls) == 3
    guarded.close()
