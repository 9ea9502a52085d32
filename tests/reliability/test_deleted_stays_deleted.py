"""What a user deletes, an expiry removes or forget() erases stays gone: the
working state (the log heal re-stores lost writes from) must not bring it
back, in this core or the next process's."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import MemoryNotFoundError
from memory_vec._storage.store import release_stores
from memory_vec.testing import parts

from .conftest import EMBEDDER, _config_factory

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fresh_stores")]


@pytest.fixture(params=["sqlite", "chroma"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., MemoryConfig]:
    factory = _config_factory(str(request.param), request, tmp_path)
    return lambda **kw: factory(**{"user_id": "alice", "session_id": "s", **kw})


def _next_process(config: MemoryConfig) -> MemoryCore:
    release_stores()  # as a new process: nothing cached, the store opened again
    return MemoryCore(config, embedder=EMBEDDER)


@pytest.mark.slow
def test_a_deleted_message_is_not_healed_back(config: Callable[..., MemoryConfig]) -> None:
    cfg = config()
    core = MemoryCore(cfg, embedder=EMBEDDER)
    secret = core.add_message("user", "My passport number is XK778812")
    core.add_message("assistant", "Noted.")
    assert core.delete(secret.id)
    assert [m.content for m in core.build_context("passport").recent] == ["Noted."]
    core.close()

    later = _next_process(cfg)
    assert later.maintain().restored == 0
    with pytest.raises(MemoryNotFoundError):
        later.get(secret.id)
    assert secret.id not in {m.id for m in later.session_history()}
    assert [m.content for m in later.working_state().messages] == ["Noted."]
    later.close()


def test_a_message_expired_by_its_ttl_is_not_healed_back(config: Callable[..., MemoryConfig]) -> None:
    cfg = config(ttl_days_by_kind={"message": 1.0})
    core = MemoryCore(cfg, embedder=EMBEDDER)
    old = core.add_message("user", "Let us talk about Elm street", timestamp=1_000_000.0)
    new = core.add_message("user", "And now about the harbour")
    assert old.id in core.maintain().expired
    core.close()

    later = _next_process(cfg)
    later.build_context("Elm street")  # heals the session, as the next request would
    with pytest.raises(MemoryNotFoundError):
        later.get(old.id)
    assert [m.id for m in later.working_state().messages] == [new.id]
    later.close()


def test_a_fold_running_when_the_user_is_forgotten_leaves_no_summary(
    config: Callable[..., MemoryConfig],
) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_llm(prompt: str) -> str:  # a summary of what is about to be forgotten
        started.set()
        release.wait(30)
        return "- The user's passport number is XK778812."

    cfg = config(max_token_limit=200, keep_recent_turns=2, summary_max_tokens=60)
    core = MemoryCore(cfg, embedder=EMBEDDER, llm=slow_llm)
    for i in range(12):
        core.add_message(
            "user" if i % 2 == 0 else "assistant",
            f"Turn {i}: my passport number is XK778812, and words to take tokens.",
        )
    assert started.wait(30)  # the fold is running off the turn
    receipt = core.forget()
    release.set()
    core.flush()  # the fold ends; its commit must fail on the forgotten session
    assert receipt.remaining_after_scan == 0
    state = core.working_state()
    assert (state.summary, state.folded_through, state.messages) == ("", 0, [])
    assert parts(core).state.sessions("alice") == []
    assert core.build_context("passport").summary == ""
    assert core.export_memories()["sessions"] == {}
    core.close()
