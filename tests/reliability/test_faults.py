"""A server backend stopped mid-conversation: the chat keeps answering
without recall, a turn is kept in the working state (never dropped) and
stored once the server is back."""

from __future__ import annotations

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import BackendUnavailableError
from memory_vec.testing import parts
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


def test_chroma_server_stopped_mid_conversation(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An outage (docs/architecture.md, "Outages"): the context comes back degraded
    with the recent turns, recall raises, a turn is kept in the working state
    (pending) and stored by the session's first call once the server is back."""
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
        )
        core = MemoryCore(config, embedder=EMBEDDER)
        core.add_message("user", "my locker number is 42")
        assert core.recall("locker number", k=1)[0].text == "my locker number is 42"

        server.stop()  # the server goes away mid-conversation
        ctx = core.build_context("what is my locker number?")
        assert ctx.degraded and ctx.relevant == []
        assert core.last_trace is not None and core.last_trace.degraded
        assert "locker" in ctx.render_history()  # still answers from the working state
        with pytest.raises(BackendUnavailableError):
            core.recall("locker number")  # reported failed, not an empty answer
        kept = core.add_message("user", "and my bike lock code is 9911")
        assert kept.pending  # acknowledged in the working state, not in the server
        assert "bike lock code" in core.build_context("bike").render_history()

        server = _start_chroma(port=server.port, data_dir=server.data_dir)  # it comes back
        assert not core.build_context("what about the bike?").degraded  # heals the session first
        assert parts(core).store.backend.get([kept.id])[0].text == "and my bike lock code is 9911"
        texts = [h.text for h in core.recall("lock code and locker number", k=5)]
        assert "and my bike lock code is 9911" in texts and "my locker number is 42" in texts
        assert not core.build_context("bike lock").degraded
    finally:
        server.stop()
