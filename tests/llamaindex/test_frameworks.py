"""The memory and the block inside real LlamaIndex engines, agents and Memory."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool

from llamaindex_memory_vec import VectorSummaryMemory, VectorSummaryMemoryBlock
from memory_vec.testing import parts

from .conftest import CapturingLLM, texts

FILLER = "We talked about the weather, the garden and some music for a while today."


def test_simple_chat_engine_sends_memory_and_stores_both_sides(memory: VectorSummaryMemory) -> None:
    llm = CapturingLLM(reply="Noted, 5000 euros.")
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="You are helpful.")

    engine.chat("My budget cap is 5000 euros.")
    for i in range(10):
        engine.chat(f"{FILLER} ({i})")
    engine.chat("What is my budget cap in euros?")

    sent = llm.chats[-1]
    assert sent[0].role == MessageRole.SYSTEM and sent[0].content == "You are helpful."
    assert sent[1].role == MessageRole.SYSTEM
    assert "My budget cap is 5000 euros." in (sent[1].content or "")  # recalled after it left the window
    assert texts(sent)[-1] == "user: What is my budget cap in euros?"
    assert texts(engine.chat_history)[-2:] == [
        "user: What is my budget cap in euros?",
        "assistant: Noted, 5000 euros.",
    ]
    assert len(engine.chat_history) == 24


def test_simple_chat_engine_stream_saves_after_stream_ends(memory: VectorSummaryMemory) -> None:
    llm = CapturingLLM(max_tokens=4)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

    response = engine.stream_chat("Tell me a story")
    streamed = "".join(response.response_gen)
    # response_gen returns only after the writer thread finished saving

    assert streamed == "text text text text"
    assert texts(memory.get_all()) == ["user: Tell me a story", "assistant: text text text text"]
    assert texts(llm.chats[0]) == ["user: Tell me a story"]


def test_simple_chat_engine_async_and_async_stream(memory: VectorSummaryMemory) -> None:
    llm = CapturingLLM(max_tokens=3)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

    async def run() -> str:
        await engine.achat("first async question")
        response = await engine.astream_chat("second async question")
        chunks = [delta async for delta in response.async_response_gen()]
        # async_response_gen returns only after the writer task finished saving
        return "".join(chunks)

    streamed = asyncio.run(run())
    assert streamed == "text text text"
    assert texts(memory.get_all()) == [
        "user: first async question",
        "assistant: text text text",
        "user: second async question",
        "assistant: text text text",
    ]
    assert texts(llm.chats[1])[-1] == "user: second async question"


def test_condense_plus_context_engine_over_index(make_memory: Callable[..., VectorSummaryMemory]) -> None:
    # The scripted LLM gives the same keyword-laden reply ten times; contextual
    # vectors and context-aware BM25 would let every filler turn inherit it.
    # Real chats don't repeat like that: test the engine wiring on plain turns.
    memory = make_memory(contextual_embedding=False, ranking={"bm25_context_weight": 0.0, "bm25_weight": 0.5})
    index = VectorStoreIndex.from_documents(
        [Document(text="The office is open from 9 to 17."), Document(text="Parking is free on Sundays.")],
        embed_model=MockEmbedding(embed_dim=8),
    )
    llm = CapturingLLM(reply="The office opens at 9.")
    engine = CondensePlusContextChatEngine.from_defaults(
        retriever=index.as_retriever(similarity_top_k=1), llm=llm, memory=memory
    )

    engine.chat("My name is Ada and I prefer short answers.")
    for i in range(10):
        engine.chat(f"{FILLER} ({i})")
    engine.chat("When does the office open, Ada asks?")

    # MockLLM is a completion model: the engine sends both calls as prompts.
    condense_prompt, answer_prompt = llm.prompts[-2], llm.prompts[-1]
    assert "Follow Up Input: When does the office open, Ada asks?" in condense_prompt
    assert "The office is open from 9 to 17." in answer_prompt or "Parking is free on Sundays." in answer_prompt
    assert "My name is Ada and I prefer short answers." in answer_prompt  # recalled by the memory
    assert "Ada" in condense_prompt.split("Chat History:")[1]  # memory's system message in the history
    assert answer_prompt.rstrip().endswith("user: When does the office open, Ada asks?\nassistant:")
    assert texts(memory.get_all())[-2:] == [
        "user: When does the office open, Ada asks?",
        "assistant: The office opens at 9.",
    ]


class ScriptedToolLLM:
    """Response generator for MockFunctionCallingLLM: calls the tool when asked
    about the budget, answers with the tool's output, keeps what it was sent."""

    def __init__(self) -> None:
        self.calls: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.calls.append([m.model_copy(deep=True) for m in messages])
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content=f"The tool says: {last.content}")
        if kwargs.get("tools") and "budget" in (last.content or "").lower():
            return ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="call-1", tool_name="get_budget", tool_kwargs={})],
            )
        return ChatMessage(role="assistant", content="Okay.")


def get_budget() -> str:
    """Return the project's budget."""
    return "The project budget is 5000 euros."


def test_function_agent_with_memory(make_memory: Callable[..., VectorSummaryMemory]) -> None:
    memory = make_memory()
    script = ScriptedToolLLM()
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(get_budget)],
        llm=MockFunctionCallingLLM(response_generator=script),
        system_prompt="You are a project assistant.",
    )

    async def run() -> tuple[str, str]:
        first = await agent.run(user_msg="What is the project budget?", memory=memory)
        second = await agent.run(user_msg="Thanks! Remind me what we discussed.", memory=memory)
        return str(first), str(second)

    first, second = asyncio.run(run())

    assert first == "The tool says: The project budget is 5000 euros."
    assert second == "Okay."
    stored = texts(memory.get_all())
    assert stored[:4] == [
        "user: What is the project budget?",
        "assistant: [tool call get_budget({})]",  # the call stays next to its result
        "tool: The project budget is 5000 euros.",
        "assistant: The tool says: The project budget is 5000 euros.",
    ]
    assert stored[-2:] == ["user: Thanks! Remind me what we discussed.", "assistant: Okay."]
    last_sent = texts(script.calls[-1])
    assert last_sent[0] == "system: You are a project assistant."
    assert "user: What is the project budget?" in last_sent  # previous turn came from memory
    assert last_sent[-1] == "user: Thanks! Remind me what we discussed."


def test_agent_tool_call_is_stored_as_text_before_its_result(memory: VectorSummaryMemory) -> None:
    script = ScriptedToolLLM()
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(get_budget)], llm=MockFunctionCallingLLM(response_generator=script)
    )

    async def run() -> None:
        await agent.run(user_msg="What is the budget?", memory=memory)

    asyncio.run(run())
    roles = [m.role.value for m in memory.get_all()]
    call_at = roles.index("assistant")
    assert roles[call_at + 1] == "tool"  # a tool result never comes without its call


def test_memory_block_inside_memory(make_block: Callable[..., VectorSummaryMemoryBlock]) -> None:
    block = make_block()
    memory = Memory.from_defaults(session_id="li-1", token_limit=200, token_flush_size=60, memory_blocks=[block])

    memory.put(ChatMessage(role="user", content="My budget cap is 5000 euros for the trip."))
    memory.put(ChatMessage(role="assistant", content="Noted."))
    for i in range(8):
        memory.put(ChatMessage(role="user", content=f"{FILLER} ({i})"))
        memory.put(ChatMessage(role="assistant", content="Sure."))

    flushed = block.core.working_state()
    stored_first = parts(block.core).backend.scan(_session_filter(block))
    assert any(r.text == "My budget cap is 5000 euros for the trip." for r in stored_first)  # flushed → core
    assert flushed.next_seq > 1

    history = memory.get(input="What is my budget cap in euros?")
    system = history[0]
    assert system.role == MessageRole.SYSTEM
    assert "<long_term_memory>" in (system.content or "")
    assert "My budget cap is 5000 euros for the trip." in (system.content or "")
    assert texts(history)[-1].startswith("assistant: ")


def test_memory_block_in_a_chat_engine_sends_recall_to_llm(
    make_block: Callable[..., VectorSummaryMemoryBlock],
) -> None:
    block = make_block()
    memory = Memory.from_defaults(session_id="li-2", token_limit=200, token_flush_size=60, memory_blocks=[block])
    llm = CapturingLLM(reply="Okay.")
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

    engine.chat("My favourite colour is teal.")
    for i in range(8):
        engine.chat(f"{FILLER} ({i})")
    engine.chat("Which colour is my favourite?")

    system = llm.chats[-1][0]
    assert system.role == MessageRole.SYSTEM
    assert "My favourite colour is teal." in (system.content or "")


def test_block_skips_non_text_and_logs_it(
    make_block: Callable[..., VectorSummaryMemoryBlock], caplog: pytest.LogCaptureFixture
) -> None:
    from llama_index.core.base.llms.types import ImageBlock, TextBlock

    block = make_block()
    with caplog.at_level(logging.INFO, logger="llamaindex_memory_vec"):
        asyncio.run(block.aput([ChatMessage(role="user", blocks=[ImageBlock(url="https://example.com/x.png")])]))
    assert block.core.working_state().messages == []
    assert any("no text to store (image)" in r.getMessage() for r in caplog.records)
    assert asyncio.run(block.aget([])) == ""

    async def mixed() -> list[str]:  # the rest is stored: the note joins that write's trace
        await block.aput(
            [ChatMessage(role="user", blocks=[TextBlock(text="a cat"), ImageBlock(url="https://example.com/y.png")])]
        )
        trace = block.core.last_trace
        return trace.events if trace is not None else []

    assert any("blocks without text skipped: image" in e for e in asyncio.run(mixed()))


def _session_filter(block: VectorSummaryMemoryBlock) -> Any:
    from memory_vec.backends import RecordFilter

    cfg = block.core.config
    return RecordFilter(user_id=cfg.user_id, session_id=cfg.session_id, kinds=("message",))
