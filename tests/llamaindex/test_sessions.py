"""Long conversations, isolation between users, restart, and the real embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine

from llamaindex_memory_vec import VectorSummaryMemory
from memory_vec import MemoryConfig
from memory_vec._rules.tokens import get_token_counter
from memory_vec.backends import InMemoryBackend, create_backend
from memory_vec.state import create_state_store
from memory_vec.testing import DeterministicHashEmbedder, parts

from .conftest import CapturingLLM, texts


@pytest.mark.slow
def test_hundred_turns_stay_within_budget(memory: VectorSummaryMemory, summarizer_llm: CapturingLLM) -> None:
    llm = CapturingLLM(max_tokens=12)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    counter = get_token_counter("cl100k_base")
    cfg = memory.config

    for turn in range(100):
        engine.chat(f"Turn {turn}: the weather, the garden and item number {turn * 7} are on my mind today.")
        sent = llm.chats[-1]
        recent = [m for m in sent if m.role != MessageRole.SYSTEM]
        assert sum(counter.count(m.content or "") for m in recent) <= cfg.max_token_limit
        assert texts(sent)[-1].startswith(f"user: Turn {turn}:")

    system = [m for m in llm.chats[-1] if m.role == MessageRole.SYSTEM]
    assert system and counter.count(system[0].content or "") <= (
        cfg.summary_max_tokens + cfg.relevant_token_limit + 20  # headers and separators
    )
    assert len(summarizer_llm.prompts) >= 5  # folded many times
    assert len(memory.get_all()) == 200  # nothing lost


def test_users_do_not_see_each_other(make_memory: Callable[..., VectorSummaryMemory]) -> None:
    alice = make_memory(user_id="alice", session_id="s")
    bob = make_memory(user_id="bob", session_id="s")
    alice.put(ChatMessage(role="user", content="Alice's secret code word is pineapple."))
    bob.put(ChatMessage(role="user", content="Bob likes trains."))

    bob_history = bob.get("what is the secret code word?")
    assert "pineapple" not in " ".join(m.content or "" for m in bob_history)
    assert texts(bob.get_all()) == ["user: Bob likes trains."]
    assert texts(alice.get_all()) == ["user: Alice's secret code word is pineapple."]


def test_sessions_of_one_user_share_recall_not_history(make_memory: Callable[..., VectorSummaryMemory]) -> None:
    first = make_memory(session_id="monday")
    second = make_memory(session_id="tuesday")
    first.put(ChatMessage(role="user", content="I am allergic to peanuts."))
    second.put(ChatMessage(role="user", content="Suggest a snack without peanuts"))

    history = second.get()
    assert history[0].role == MessageRole.SYSTEM and "allergic to peanuts" in (history[0].content or "")
    assert texts(history[1:]) == ["user: Suggest a snack without peanuts"]


def test_restart_resumes_the_session(tmp_path: Path, hash_embedder: DeterministicHashEmbedder) -> None:
    """A new process on the same embedded Chroma store and SQLite working state."""
    config = MemoryConfig(
        user_id="u1",
        session_id="s1",
        backend="chroma",
        persist_dir=str(tmp_path),
        collection="li-restart",
        max_token_limit=300,
        summary_max_tokens=100,
        score_threshold=0.0,
    )
    llm = CapturingLLM(reply="- the user plans a trip with a 5000 euro budget")

    def start() -> VectorSummaryMemory:
        return VectorSummaryMemory.from_defaults(
            config=config,
            llm=llm,
            embedder=hash_embedder,
            backend=create_backend(config),
            state_store=create_state_store(config),
        )

    before = start()
    before.put(ChatMessage(role="user", content="My budget cap is 5000 euros."))
    for i in range(20):
        before.put(ChatMessage(role="user", content=f"Small talk about the garden and the weather, part {i}."))
    expected_history = before.get()
    expected_all = texts(before.get_all())
    before.core.close()
    parts(before.core).backend.close()  # releases the embedded store's process lock
    parts(before.core).state.close()

    after = start()

    assert parts(after.core).state is not parts(before.core).state
    assert texts(after.get()) == texts(expected_history)
    assert "5000 euro budget" in (after.get()[0].content or "")
    assert texts(after.get_all()) == expected_all
    after.put(ChatMessage(role="user", content="next message"))
    assert texts(after.get_all())[-1] == "user: next message"
    assert after.core.working_state().messages[-1].seq == len(expected_all) + 1


@pytest.mark.slow
@pytest.mark.integration
def test_real_default_embedder_recalls_a_paraphrase(tmp_path: Path) -> None:
    memory = VectorSummaryMemory.from_defaults(
        config=MemoryConfig(user_id="u-int", session_id="s-int", max_token_limit=300, summary_max_tokens=100),
        backend=InMemoryBackend(),
        state_store=create_state_store(MemoryConfig(state="memory")),
    )
    memory.put(ChatMessage(role="user", content="My dog is called Rex and he is a German shepherd."))
    for i in range(24):
        memory.put(ChatMessage(role="user", content=f"Let's plan the quarterly marketing report, section {i}."))
    assert all("Rex" not in (m.content or "") for m in memory.get()[1:])  # out of the recent window

    history = memory.get("What breed is my pet?")

    assert history[0].role == MessageRole.SYSTEM
    relevant = (history[0].content or "").split("Relevant memories", 1)
    assert len(relevant) == 2 and "German shepherd" in relevant[1]
