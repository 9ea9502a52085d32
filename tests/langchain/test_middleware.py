"""VectorSummaryMiddleware with create_agent: injection, writes, budget, scope, streaming."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_memory_vec import INTERNAL_TAG, MissingUserIdError, VectorSummaryMiddleware
from memory_vec import MemoryCore
from memory_vec._rules.summary import SUMMARY_PROMPT
from memory_vec.testing import parts

from .conftest import SMALL_BUDGET, SUMMARY_MARKER, ScriptedChatModel

FILLER = "Also, the garden, the bike lane and the weekend plans came up again in some detail."


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}, 24 degrees."


def respond(messages: list[BaseMessage]) -> AIMessage:
    """Ask the tool for weather questions, then answer from its result; else acknowledge."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"The tool says: {last.text}")
    if isinstance(last, HumanMessage) and "weather" in last.text.lower():
        return AIMessage(
            content="",
            tool_calls=[
                {"name": "get_weather", "args": {"city": "Lisbon"}, "id": f"call-{len(messages)}", "type": "tool_call"}
            ],
        )
    return AIMessage(content=f"Noted. {FILLER}")


def agent_for(core: MemoryCore) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(respond=respond)
    agent = create_agent(
        model, tools=[get_weather], middleware=[VectorSummaryMiddleware(core=core)], checkpointer=InMemorySaver()
    )
    return agent, model


def ask(agent: Any, text: str, thread: str, user: str) -> dict[str, Any]:
    return agent.invoke(
        {"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": thread, "user_id": user}}
    )


def test_tool_turn_injects_memory_and_writes_once(core_factory: Any) -> None:
    core: MemoryCore = core_factory()
    ask(*[agent_for(core)[0]], "My home city is Lisbon, remember that.", "old-thread", "alice")
    agent, model = agent_for(core)
    ask(agent, "Hello there.", "t1", "alice")
    model.calls.clear()
    result = ask(agent, "What is the weather in my home city?", "t1", "alice")

    assert len(model.calls) == 2  # tool call, then the final answer
    for call in model.calls:
        system = call[0]
        assert isinstance(system, SystemMessage)
        assert "My home city is Lisbon" in system.text and "Relevant memories" in system.text
        assert [m.text for m in call[1:3]] == ["Hello there.", f"Noted. {FILLER}"]  # earlier turn
    final_call = model.calls[1]
    ai = next(i for i, m in enumerate(final_call) if isinstance(m, AIMessage) and m.tool_calls)
    assert isinstance(final_call[ai + 1], ToolMessage)
    assert final_call[ai + 1].tool_call_id == final_call[ai].tool_calls[0]["id"]

    # Nothing injected was persisted in the thread; the checkpointer has the whole turn.
    assert not any(isinstance(m, SystemMessage) for m in result["messages"])
    assert result["messages"][-1].text.startswith("The tool says: Sunny in Lisbon")
    stored = core.working_state(user_id="alice", session_id="t1").messages
    assert [(m.role, m.content) for m in stored] == [
        ("user", "Hello there."),
        ("assistant", f"Noted. {FILLER}"),
        ("user", "What is the weather in my home city?"),
        ("assistant", "The tool says: Sunny in Lisbon, 24 degrees."),
    ]


def test_long_thread_stays_within_budget_with_summary(core_factory: Any) -> None:
    core: MemoryCore = core_factory()
    agent, model = agent_for(core)
    for i in range(30):
        text = f"Weather check {i}?" if i % 5 == 0 else f"Note {i}: the budget of item {i} is {i}00."
        ask(agent, text, "long", "alice")
    system = model.calls[-1][0]
    assert isinstance(system, SystemMessage) and SUMMARY_MARKER in system.text
    for call in model.calls[-3:]:
        earlier = [m for m in call[1:] if not isinstance(m, SystemMessage)]
        current = max(i for i, m in enumerate(earlier) if isinstance(m, HumanMessage))
        earlier_tokens = sum(parts(core).counter.count(m.text) for m in earlier[:current])
        summary_tokens = parts(core).counter.count(core.working_state(user_id="alice", session_id="long").summary)
        assert earlier_tokens + summary_tokens <= SMALL_BUDGET["max_token_limit"]
        assert len(call) < 20  # the thread holds ~70 messages by now
        for i, m in enumerate(call):  # every tool call is followed by its result
            if isinstance(m, AIMessage) and m.tool_calls:
                assert isinstance(call[i + 1], ToolMessage)


def test_users_are_isolated_by_context_and_configurable(core_factory: Any) -> None:
    core: MemoryCore = core_factory()
    agent, model = agent_for(core)
    agent.invoke(
        {"messages": [{"role": "user", "content": "My locker code is 4711."}]},
        {"configurable": {"thread_id": "a1"}},
        context={"user_id": "alice"},
    )
    ask(agent, "My locker code is 9999.", "b1", "bob")
    model.calls.clear()
    ask(agent, "What is my locker code?", "b2", "bob")
    seen_by_bob = "\n".join(m.text for call in model.calls for m in call)
    assert "9999" in seen_by_bob and "4711" not in seen_by_bob
    model.calls.clear()
    agent.invoke(
        {"messages": [{"role": "user", "content": "What is my locker code?"}]},
        {"configurable": {"thread_id": "a2"}},
        context={"user_id": "alice"},
    )
    seen_by_alice = "\n".join(m.text for call in model.calls for m in call)
    assert "4711" in seen_by_alice and "9999" not in seen_by_alice


@pytest.mark.parametrize(
    ("config", "context"),
    [
        ({"configurable": {"thread_id": "t1"}}, None),
        ({"configurable": {"thread_id": "t1", "user_id": ""}}, {"user_id": ""}),
        ({"configurable": {"thread_id": "t1"}}, {"name": "no user id here"}),
    ],
    ids=["nothing", "empty", "context-without-user"],
)
def test_a_run_without_a_user_id_is_refused_before_anything_is_read_or_stored(
    core_factory: Any, config: dict[str, Any], context: Any
) -> None:
    core: MemoryCore = core_factory(user_id="default")  # the config's own user is no fallback
    core.add_message("user", "Pooled secret: the vault code is 1234.", session_id="t0")
    agent, model = agent_for(core)

    with pytest.raises(MissingUserIdError, match=r"context=\{'user_id'.*config\['configurable'\]\['user_id'\]"):
        agent.invoke({"messages": [{"role": "user", "content": "What is the vault code?"}]}, config, context=context)
    with pytest.raises(MissingUserIdError):
        asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "hi"}]}, config, context=context))

    assert model.calls == []  # refused before the model saw the pooled memory
    assert core.working_state(user_id="default", session_id="t1").messages == []
    assert [m.content for m in core.working_state(user_id="default", session_id="t0").messages] == [
        "Pooled secret: the vault code is 1234."
    ]


def test_async_agent_and_summary_calls_stay_out_of_the_stream(core_factory: Any) -> None:
    core: MemoryCore = core_factory()
    agent, _model = agent_for(core)

    async def run() -> tuple[list[dict[str, Any]], list[Any]]:
        events: list[dict[str, Any]] = []
        chunks: list[Any] = []
        config = {"configurable": {"thread_id": "s1", "user_id": "alice"}}
        for i in range(8):
            msg = {"messages": [{"role": "user", "content": f"Fact {i}: {FILLER}"}]}
            if i % 2:
                events += [e async for e in agent.astream_events(msg, config, version="v2")]
            else:
                chunks += [c async for c in agent.astream(msg, config, stream_mode="messages")]
        return events, chunks

    events, chunks = asyncio.run(run())
    assert SUMMARY_MARKER in core.working_state(user_id="alice", session_id="s1").summary
    assert len(core.working_state(user_id="alice", session_id="s1").messages) < 16
    assert any(e["event"] == "on_chat_model_end" for e in events)
    first_line = SUMMARY_PROMPT.splitlines()[0]
    for e in events:
        assert INTERNAL_TAG not in e.get("tags", [])
        assert first_line not in str(e["data"].get("input", ""))
        assert SUMMARY_MARKER not in str(e["data"].get("output", ""))
    assert chunks and not any(SUMMARY_MARKER in str(c[0].content) for c in chunks)


def test_a_turn_of_several_user_messages_is_sent_and_stored_whole(core_factory: Any) -> None:
    """A document, then a question about it: both reach the model and the memory."""
    core: MemoryCore = core_factory()
    agent, model = agent_for(core)
    ask(agent, "Hi, I'm Alice.", "t1", "alice")
    agent.invoke(
        {
            "messages": [
                {"role": "user", "content": "Here is my contract: the rent is 1200 EUR."},
                {"role": "user", "content": "When is the rent due?"},
            ]
        },
        {"configurable": {"thread_id": "t1", "user_id": "alice"}},
    )
    sent = [m.text for m in model.calls[-1] if isinstance(m, HumanMessage)]
    assert sent[-2:] == ["Here is my contract: the rent is 1200 EUR.", "When is the rent due?"]
    stored = [m.content for m in core.working_state(user_id="alice", session_id="t1").messages]
    assert stored[-3:-1] == ["Here is my contract: the rent is 1200 EUR.", "When is the rent due?"]


def test_a_pasted_document_over_the_content_limit_does_not_fail_the_turn(core_factory: Any) -> None:
    core: MemoryCore = core_factory(max_content_bytes=4096)
    agent, _model = agent_for(core)
    document = "The lease says the rent is 1200 EUR. " + "clause " * 2000
    result = agent.invoke(
        {"messages": [{"role": "user", "content": document}]}, {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    )
    assert result["messages"][-1].text.startswith("Noted.")
    (user, answer) = core.working_state(user_id="alice", session_id="t1").messages
    assert user.content.startswith("The lease says the rent is 1200 EUR.") and "[… cut here:" in user.content
    assert len(user.content.encode()) <= 4096 and answer.role == "assistant"
