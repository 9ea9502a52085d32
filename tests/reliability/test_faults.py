"""A server backend stopped mid-conversation: the chat keeps answering
without recall, writes are queued (never dropped), everything resumes."""

from __future__ import annotations

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import BackendUnavailableError
from tests._services import Service, find_binary, missing, start_service
from tests.fixtures_chroma import _heartbeat_ok

from .conftest import EMBEDDER

pytestmark = [pytest.mark.integration, pytest.mark.services, pytest.mark.slow]


def _start_chroma(port: int | None = None, data_dir: str | None = None) -> Service:
    binary = find_binary("chroma", "MEMVEC_CHROMA_BIN")
    if binary is None:
        missing("the `chroma` server binary")
    assert binary is not None
    return start_service(
        "chroma-fault",
        lambda p, d: [binary, "run", "--path", f"{d}/data", "--host", "127.0.0.1", "--port", str(p)],
        ready=_heartbeat_ok,
        timeout=60,
        port=port,
        data_dir=data_dir,
    )


@pytest.mark.parametrize("replica_docs", [0, 20_000], ids=["no-replica", "replica"])
def test_chroma_server_stopped_mid_conversation(tmp_path, replica_docs: int) -> None:  # type: ignore[no-untyped-def]
    server = _start_chroma()
    try:
        config = MemoryConfig(
            backend="chroma",
            url=server.url,
            collection="faults",
            persist_dir=str(tmp_path),
            backend_timeout=3.0,
            backend_retries=1,
            fact_extractor="none",
            score_threshold=0.0,
            replica_docs=replica_docs,
        )
        core = MemoryCore(config, embedder=EMBEDDER)
        core.add_message("user", "my locker number is 42")
        assert core.recall("locker number", k=1)[0].text == "my locker number is 42"

        server.stop()  # the server goes away mid-conversation
        ctx = core.build_context("what is my locker number?")
        if replica_docs:
            # The user's copy in this process answers (no other process can
            # write while the server is away, so it is current).
            assert not ctx.degraded
            assert core.recall("locker number", k=1)[0].text == "my locker number is 42"
        else:
            assert ctx.degraded and ctx.relevant == []
            assert core.last_trace is not None and core.last_trace.degraded
        assert "locker" in ctx.render_history()  # still answers from the working buffer
        queued = core.add_message("user", "and my bike lock code is 9911")
        assert queued.pending and core.writer.pending_count >= 1
        with pytest.raises(BackendUnavailableError):
            core.flush()  # reported failed, not silently dropped

        server = _start_chroma(port=server.port, data_dir=server.data_dir)  # it comes back
        core.flush()
        assert core.writer.pending_count == 0
        texts = [h.text for h in core.recall("lock code and locker number", k=5)]
        assert "and my bike lock code is 9911" in texts and "my locker number is 42" in texts
        assert not core.build_context("bike lock").degraded
    finally:
        server.stop()
