"""A core built and used before the process forks (``gunicorn --preload``, a
module-level core), on every backend: the child reads and writes at once
(the parent's idle backend workers do not exist there), its ``close`` leaves
the parent's store alone, and embedded Chroma, whose engine does not survive
a fork, is refused with a named error instead of hanging."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_vec import MemoryCore
from memory_vec._model.errors import StoreLockedError
from memory_vec._storage.store import release_stores
from memory_vec.testing import parts

from .test_fork import in_child

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")


def _words(hits: list) -> set[str]:  # type: ignore[type-arg]
    return {w for h in hits for w in h.text.split()}


@pytest.mark.slow
def test_a_forked_child_uses_the_parents_core_and_leaves_the_parents_store_alone(
    core_factory: Callable[..., MemoryCore], backend_kind: str
) -> None:
    # No retries, a long timeout: a child call handed to the parent's (absent)
    # pool worker would fail with BackendTimeoutError instead of being retried.
    core = core_factory(user_id="ana", session_id="s1", backend_retries=0, backend_timeout=20)
    try:
        core.add_message("user", "the parent wrote this before the fork about tulips")
        core.flush()
        assert core.recall("tulips", k=3)  # the parent's connections and pool are open and used

        def child() -> None:
            import faulthandler

            faulthandler.dump_traceback_later(60, exit=True)  # a hang shows where, then fails the test
            if backend_kind == "chroma":
                with pytest.raises(StoreLockedError, match="before this process forked"):
                    parts(core).store.backend.count()
                with pytest.raises(StoreLockedError, match="before this process forked"):
                    core.add_message("user", "the child wrote this about orchids", session_id="s2")
                core.flush()  # refused before it was written or entered in the working state
                core.close()  # the parent's client is not closed
            else:
                core.add_message("user", "the child wrote this about orchids", session_id="s2")
                core.flush()
                assert {"orchids", "tulips"} <= _words(core.recall("orchids tulips", k=5))
                core.close()
            release_stores()  # the child's close of the stores: not the parent's lock, client or Milvus Lite server

        in_child(child)
        core.add_message("user", "the parent wrote this after the fork about daisies")
        core.flush()
        assert {"daisies", "tulips"} <= _words(core.recall("daisies tulips", k=5))
        if backend_kind not in ("memory", "chroma"):  # the child's acknowledged write is in the shared store
            deadline = time.monotonic() + 15  # the Milvus server shows other clients' writes within its bound
            while "orchids" not in _words(core.recall("orchids", k=5)) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert "orchids" in _words(core.recall("orchids", k=5))
    finally:
        core.close()
        release_stores()


def test_a_forked_child_cannot_open_the_embedded_store_its_parent_holds(
    core_factory: Callable[..., MemoryCore], backend_kind: str
) -> None:
    if backend_kind not in ("chroma", "milvus-lite"):
        pytest.skip("embedded, single-process stores only")
    core = core_factory(user_id="ana")
    try:
        core.add_message("user", "held by the parent")
        core.flush()

        def child() -> None:
            # Another collection in the parent's directory: a store of its own, the parent's lock
            with pytest.raises(StoreLockedError, match=r"another process|forked"):
                core_factory(user_id="bo", collection="built_in_the_child")

        in_child(child)
        assert parts(core).store.backend.count() == 1
    finally:
        core.close()
        release_stores()


@pytest.mark.slow
def test_a_forked_child_talks_to_milvus_on_a_connection_of_its_own(
    core_factory: Callable[..., MemoryCore], backend_kind: str
) -> None:
    """gRPC does not let one channel serve both sides of a fork, and pymilvus
    shares one connection per address: the child must connect again, and must
    not close the parent's copy."""
    if "milvus" not in backend_kind:
        pytest.skip("Milvus backends only")
    core = core_factory(user_id="ana")
    try:
        core.add_message("user", "the parent wrote this before the fork about tulips")
        core.flush()
        backend = parts(core).store.backend.inner
        parents = backend._client

        def child() -> None:
            core.add_message("user", "the child wrote this about orchids", session_id="s2")
            core.flush()
            assert backend._client is not parents
            core.close()
            release_stores()

        in_child(child)
        assert backend._client is parents
        core.add_message("user", "the parent wrote this after the fork about daisies")
        core.flush()
        assert {"daisies", "tulips"} <= _words(core.recall("daisies tulips", k=5))
    finally:
        core.close()
        release_stores()


@pytest.mark.slow
@pytest.mark.parametrize("server", ["chroma-server", "milvus-server"])
def test_a_forked_child_of_a_worker_with_redis_state(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The deployment of workers on several hosts: a server and Redis state (keyword
    logs, the shared vector cache), with a core the parent used before the fork."""
    from tests.fixtures_redis import redis_url

    from .conftest import EMBEDDER, _config_factory

    config = _config_factory(server, request, tmp_path)(
        state="redis",
        redis_url=redis_url(request.getfixturevalue("redis_server"), db=4),
        user_id="ana",
        session_id="s1",
        backend_retries=0,
        backend_timeout=20,
    )
    core = MemoryCore(config, embedder=EMBEDDER)
    try:
        core.add_message("user", "the parent wrote this before the fork about tulips")
        core.flush()
        assert core.recall("tulips", k=3)

        def child() -> None:
            core.add_message("user", "the child wrote this about orchids", session_id="s2")
            core.flush()
            assert {"orchids", "tulips"} <= _words(core.recall("orchids tulips", k=5))
            core.close()
            release_stores()

        in_child(child)
        deadline = time.monotonic() + 15  # the Milvus server shows other clients' writes within its bound
        while "orchids" not in _words(core.recall("orchids", k=5)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "orchids" in _words(core.recall("orchids", k=5))
        assert [m.content for m in core.working_state(session_id="s2").messages] == [
            "the child wrote this about orchids"
        ]
    finally:
        core.close()
        release_stores()
