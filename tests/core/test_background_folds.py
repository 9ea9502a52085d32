"""Folds by a slow summarizer run off the turn (memory_vec._pipelines.background): the
turn does not wait, flush() and close() do, and nothing is lost when a fold
never ran."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.state.base import StateMessage
from memory_vec.testing import DeterministicHashEmbedder, parts

FILLER = "about the venue, the catering and the guest list " * 3


class GatedSummarizer:
    """A stand-in for an LLM summarizer: each fold waits until ``gate`` opens."""

    name = "gated-llm"

    def __init__(self, *, fail: bool = False) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.folded: list[list[str]] = []
        self.fail = fail

    def summarize(self, previous: str, messages: Sequence[StateMessage], *, max_tokens: int) -> str:
        self.started.set()
        assert self.gate.wait(30), "the test never opened the gate"
        if self.fail:
            raise RuntimeError("model unavailable")
        self.folded.append([m.content for m in messages])
        return (previous + "\n" if previous else "") + f"- folded {len(messages)} turns"


def _config(**overrides: Any) -> MemoryConfig:
    settings: dict[str, Any] = {
        "user_id": "u1",
        "session_id": "s1",
        "max_token_limit": 200,
        "summary_max_tokens": 60,
        "keep_recent_turns": 2,
        "fact_extractor": "none",
        **overrides,
    }
    return MemoryConfig(**settings)


def _core(summarizer: Any, **overrides: Any) -> MemoryCore:
    return MemoryCore(
        _config(**overrides),
        embedder=DeterministicHashEmbedder(64),
        summarizer=summarizer,
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
    )


def _chat_until_fold_due(core: MemoryCore, turns: int = 6) -> list[Any]:
    results = []
    for i in range(turns):
        results += core.add_messages([("user", f"Turn {i} {FILLER}"), ("assistant", f"Noted {i}.")])
    return results


def test_a_slow_summarizer_folds_off_the_turn_and_flush_waits_for_it() -> None:
    summarizer = GatedSummarizer()
    core = _core(summarizer)
    results = _chat_until_fold_due(core)  # returns although the summarizer is blocked
    assert summarizer.started.wait(10), "a fold was due and should have started in the background"
    assert not any(r.summarized for r in results)
    assert core.working_state().summary == ""  # not folded yet; every turn still in the working state
    assert len(core.working_state().messages) == 12
    assert "fold due: runs off the turn" in " ".join(core.last_trace.events if core.last_trace else [])
    summarizer.gate.set()
    core.flush()
    state = core.working_state()
    assert state.summary.startswith("- folded") and state.folded_through > 0
    assert len(state.messages) < 12 and summarizer.folded[0][0].startswith("Turn 0")
    core.close()


def test_summary_in_background_false_folds_inside_the_turn() -> None:
    summarizer = GatedSummarizer()
    summarizer.gate.set()
    core = _core(summarizer, summary_in_background=False)
    assert any(r.summarized for r in _chat_until_fold_due(core))
    assert core.working_state().summary.startswith("- folded")
    core.close()


def test_the_offline_extractive_summarizer_folds_inline_by_default() -> None:
    core = MemoryCore(
        _config(), embedder=DeterministicHashEmbedder(64), backend=InMemoryBackend(), state_store=InMemoryStateStore()
    )
    assert any(r.summarized for r in _chat_until_fold_due(core))
    core.close()


def test_a_failed_background_fold_keeps_the_turns_and_is_due_again(caplog: pytest.LogCaptureFixture) -> None:
    summarizer = GatedSummarizer(fail=True)
    summarizer.gate.set()
    core = _core(summarizer)
    _chat_until_fold_due(core)
    core.flush()
    assert core.working_state().summary == "" and len(core.working_state().messages) == 12
    assert "fold refused" in caplog.text
    summarizer.fail = False
    core.add_messages([("user", "One more turn."), ("assistant", "Sure.")])
    core.flush()
    assert core.working_state().summary.startswith("- folded")
    core.close()


def test_a_fold_that_never_ran_is_not_lost(tmp_path: Path) -> None:
    """The process "dies" while its fold waits (the core is dropped without
    close, its worker blocked): a new core on the same store folds every turn
    on its next turn; nothing of the acknowledged turns is missing."""
    blocked = GatedSummarizer()
    config = _config(backend="sqlite", persist_dir=str(tmp_path))
    first = MemoryCore(config, embedder=DeterministicHashEmbedder(64), summarizer=blocked)
    _chat_until_fold_due(first)
    assert blocked.started.wait(10)
    release_stores()  # the store's clients go; the blocked fold can never commit through them
    working = GatedSummarizer()
    working.gate.set()
    second = MemoryCore(config, embedder=DeterministicHashEmbedder(64), summarizer=working)
    assert len(second.working_state().messages) == 12  # every acknowledged turn is still there
    second.add_messages([("user", "Back again."), ("assistant", "Welcome back.")])
    second.flush()
    assert working.folded and working.folded[0][0].startswith("Turn 0")
    assert second.working_state().summary.startswith("- folded")
    blocked.gate.set()  # let the orphaned worker finish; its stale fold must not double-fold
    second.close()
    release_stores()


def test_close_runs_what_is_due() -> None:
    summarizer = GatedSummarizer()
    summarizer.gate.set()
    core = _core(summarizer)
    _chat_until_fold_due(core)
    state_store = parts(core).state
    core.close()
    assert state_store.load("u1", "s1").summary.startswith("- folded")


def test_the_worker_thread_ends_when_nothing_is_due() -> None:
    """A per-request core dropped without close() leaves no thread behind."""
    summarizer = GatedSummarizer()
    summarizer.gate.set()
    core = _core(summarizer)
    _chat_until_fold_due(core)
    core.flush()
    assert summarizer.folded

    def fold_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "memory-vec-folds"]

    for _ in range(100):
        if not fold_threads():
            break
        threading.Event().wait(0.05)
    assert not fold_threads()
    core.add_messages([("user", f"Again {FILLER}"), ("assistant", "Fine.")] * 3)  # a new fold starts a new worker
    core.flush()
    assert len(summarizer.folded) >= 2
    core.close()
