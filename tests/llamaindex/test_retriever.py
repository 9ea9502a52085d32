"""MemoryRetriever: recall as LlamaIndex nodes with scores, scoped to one named
user, in a RetrieverQueryEngine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode

from llamaindex_memory_vec import MemoryRetriever, VectorSummaryMemory, VectorSummaryMemoryBlock
from memory_vec import InvalidInputError, MemoryConfig, MemoryCore
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore


def test_nodes_carry_the_text_the_score_and_the_memorys_fields(
    make_memory: Callable[..., VectorSummaryMemory],
) -> None:
    memory = make_memory(fact_extractor="none")
    memory.put(ChatMessage(role="user", content="The budget for the Lisbon trip is 5000 euros."))
    memory.put(ChatMessage(role="assistant", content="Noted: 5000 euros for Lisbon."))
    memory.put(ChatMessage(role="user", content="My cat is called Miso."))

    retriever = memory.as_retriever(k=2)
    nodes = retriever.retrieve("budget for the Lisbon trip")

    assert isinstance(retriever, BaseRetriever) and len(nodes) == 2
    top = nodes[0]
    assert top.node.get_content() == "The budget for the Lisbon trip is 5000 euros."
    meta = top.node.metadata
    assert top.node.node_id == meta["id"]
    assert (meta["role"], meta["kind"], meta["user_id"], meta["session_id"]) == ("user", "message", "u1", "s1")
    assert abs(datetime.fromisoformat(meta["timestamp"]).timestamp() - datetime.now().timestamp()) < 60
    scores = [n.score for n in nodes]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    shown = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "role: user" in shown and meta["id"] not in shown  # the LLM sees who and when, not the ids


def test_scope_k_and_filters(make_memory: Callable[..., VectorSummaryMemory]) -> None:
    alice = make_memory(user_id="alice", fact_extractor="none")
    bob = make_memory(user_id="bob", fact_extractor="none")
    alice.core.add_message("user", "My locker code is 4711.", metadata={"topic": "gym"})
    alice.core.add_message("user", "The gym opens at six.", session_id="s2", metadata={"topic": "hours"})
    bob.core.add_message("user", "My locker code is 9999.")

    def texts(retriever: MemoryRetriever) -> list[str]:
        return [n.node.get_content() for n in retriever.retrieve("locker code at the gym")]

    assert "My locker code is 9999." not in texts(alice.as_retriever())
    assert texts(bob.as_retriever()) == ["My locker code is 9999."]
    assert len(texts(alice.as_retriever(k=1))) == 1
    assert texts(alice.as_retriever(filters={"topic": "hours"})) == ["The gym opens at six."]
    assert texts(alice.as_retriever(scope="session")) == ["My locker code is 4711."]
    nodes = asyncio.run(bob.as_retriever().aretrieve("locker code"))
    assert [n.node.get_content() for n in nodes] == ["My locker code is 9999."]
    with pytest.raises(InvalidInputError, match="user_id"):
        MemoryRetriever(alice.core, user_id=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="k must be"):
        alice.as_retriever(k=0)
    with pytest.raises(InvalidInputError, match="session_id"):
        MemoryRetriever(alice.core, user_id="alice", scope="session")


def test_the_block_gives_a_retriever_over_its_user(make_block: Callable[..., VectorSummaryMemoryBlock]) -> None:
    block = make_block(user_id="carol", fact_extractor="none")
    block.core.add_message("user", "Carol's favourite colour is teal.")
    nodes = block.as_retriever().retrieve("favourite colour")
    assert [n.node.get_content() for n in nodes] == ["Carol's favourite colour is teal."]
    assert nodes[0].node.metadata["user_id"] == "carol"


@pytest.fixture(scope="module")
def real_core() -> Iterator[MemoryCore]:
    """The config's default (real, offline) embedder on in-process stores."""
    core = MemoryCore(MemoryConfig(), backend=InMemoryBackend(), state_store=InMemoryStateStore())
    yield core
    core.close()


@pytest.mark.integration
@pytest.mark.slow
def test_a_query_engine_over_the_retriever_answers_from_the_users_memory(real_core: MemoryCore) -> None:
    real_core.add_message("user", "I am allergic to peanuts, never suggest them.", user_id="li-ann", session_id="a")
    real_core.add_message("user", "The team standup moved to 9:30.", user_id="li-ann", session_id="a")
    real_core.add_message("user", "I am allergic to shellfish.", user_id="li-ben", session_id="b")
    memory = VectorSummaryMemory.from_defaults(core=real_core)

    def engine(user: str) -> RetrieverQueryEngine:
        # MockLLM answers with the prompt it was given: the answer shows what reached the LLM
        return RetrieverQueryEngine.from_args(memory.as_retriever(user_id=user, k=2), llm=MockLLM())

    response = engine("li-ann").query("Which food allergy should a snack suggestion respect?")
    assert "allergic to peanuts" in str(response) and "shellfish" not in str(response)
    assert response.source_nodes[0].node.get_content() == "I am allergic to peanuts, never suggest them."
    assert response.source_nodes[0].score is not None and response.source_nodes[0].score > 0

    response = asyncio.run(engine("li-ben").aquery("Which food allergy do I have?"))
    assert "shellfish" in str(response) and "peanuts" not in str(response)
