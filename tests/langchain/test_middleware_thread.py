"""VectorSummaryMiddleware against threads the core does not fully hold: a
turn that ended without a text answer, a failed model call, a thread older
than the middleware, a re-run with no new message. The model must see every
turn the thread has that the core cannot give, once, in order."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_memory_vec import VectorSummaryMiddleware
from memory_vec import MemoryCore

from .conftest import ScriptedChatModel


@tool(return_direct=True)
def book_flight(dest: str) -> str:
    """Book a flight."""
    return f"Booked flight to {dest}, confirmation ZX-1234."


@tool
def order_status(order: str) -> str:
    """Where an order is."""
    return f"Order {order} is in Lyon."


def respond(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, HumanMessage) and "book" in last.text.lower():
        return AIMessage(
            content="", tool_calls=[{"name": "book_flight", "args": {"dest": "Oslo"}, "id": "b1", "type": "tool_call"}]
        )
    if isinstance(last, HumanMessage) and "order" in last.text.lower():
        return AIMessage(
            content="", tool_calls=[{"name": "order_status", "args": {"order": "A17"}, "id": "o1", "type": "tool_call"}]
        )
    if isinstance(last, ToolMessage) and "Lyon" in last.text and _failing["next"]:
        _failing["next"] = False
        raise RuntimeError("rate limited")
    return AIMessage(content=f"OK ({len(messages)}).")


_failing = {"next": False}
CFG = {"configurable": {"thread_id": "t1", "user_id": "alice"}}


def texts(messages: list[BaseMessage]) -> list[str]:
    return [m.text for m in messages if m.text and m.type != "system"]


def agent_for(core: MemoryCore, checkpointer: Any = None) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(respond=respond)
    agent = create_agent(
        model,
        tools=[book_flight, order_status],
        middleware=[VectorSummaryMiddleware(core=core)],
        checkpointer=checkpointer or InMemorySaver(),
    )
    return agent, model


def ask(agent: Any, text: str | None) -> dict[str, Any]:
    return agent.invoke({"messages": [{"role": "user", "content": text}] if text else []}, CFG)


def test_a_turn_that_ended_in_a_direct_tool_result_is_still_seen(core_factory: Any) -> None:
    agent, model = agent_for(core_factory())
    for text in ["Hi, I am Alice.", "Please book me a flight to Oslo."]:
        ask(agent, text)
    ask(agent, "What is my confirmation code?")
    seen = texts(model.calls[-1])
    assert "Booked flight to Oslo, confirmation ZX-1234." in seen
    assert (
        seen.index("Hi, I am Alice.")
        < seen.index("Please book me a flight to Oslo.")
        < seen.index("What is my confirmation code?")
    )
    assert seen.count("Please book me a flight to Oslo.") == 1


def test_a_turn_whose_model_call_failed_is_still_seen(core_factory: Any) -> None:
    agent, model = agent_for(core_factory())
    ask(agent, "Hi, I am Alice.")
    _failing["next"] = True
    with pytest.raises(RuntimeError, match="rate limited"):
        ask(agent, "Where is my order A17?")
    ask(agent, "Thanks, and now?")
    seen = texts(model.calls[-1])
    assert "Where is my order A17?" in seen and "Order A17 is in Lyon." in seen
    assert seen.index("Hi, I am Alice.") < seen.index("Where is my order A17?") < seen.index("Thanks, and now?")


def test_a_thread_older_than_the_core_keeps_its_history(core_factory: Any) -> None:
    saver = InMemorySaver()
    plain_model = ScriptedChatModel(respond=respond)
    plain = create_agent(plain_model, tools=[book_flight, order_status], checkpointer=saver)
    for text in ["My flight number is LX-318.", "I sit in row 12."]:
        ask(plain, text)  # before the middleware was added
    agent, model = agent_for(core_factory(), saver)
    ask(agent, "Hello again.")
    ask(agent, "Which flight am I on?")
    seen = texts(model.calls[-1])
    assert seen[:2] == ["My flight number is LX-318.", "OK (1)."]
    assert seen[-1] == "Which flight am I on?" and seen.count("Hello again.") == 1


def test_a_rerun_without_a_new_message_sends_and_stores_the_turn_once(core_factory: Any) -> None:
    core = core_factory()
    agent, model = agent_for(core)
    ask(agent, "Hello.")
    ask(agent, "Thanks.")
    ask(agent, None)  # the finished thread run again
    seen = texts(model.calls[-1])
    assert seen.count("Thanks.") == 1 and seen.count("Hello.") == 1
    stored = [m.content for m in core.working_state(user_id="alice", session_id="t1").messages]
    assert stored.count("Thanks.") == 1


def test_a_structured_response_is_stored_as_the_turns_answer(core_factory: Any) -> None:
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    class Contact(BaseModel):
        name: str
        phone: str

    def extract(messages: list[BaseMessage]) -> AIMessage:
        phone = "555-0101" if "555" in messages[-1].text else "unknown"
        return AIMessage(
            content="",
            tool_calls=[
                {
                    "name": "Contact",
                    "args": {"name": "Bob", "phone": phone},
                    "id": f"s{len(messages)}",
                    "type": "tool_call",
                }
            ],
        )

    core = core_factory()
    model = ScriptedChatModel(respond=extract)
    agent = create_agent(
        model,
        tools=[],
        response_format=ToolStrategy(Contact),
        middleware=[VectorSummaryMiddleware(core=core)],
        checkpointer=InMemorySaver(),
    )
    ask(agent, "Extract the contact: Bob, phone 555-0101.")
    ask(agent, "What was Bob's phone number?")
    ask(agent, None)  # a re-run stores nothing twice
    stored = [(m.role, m.content) for m in core.working_state(user_id="alice", session_id="t1").messages]
    assert stored[:3] == [
        ("user", "Extract the contact: Bob, phone 555-0101."),
        ("assistant", '{"name":"Bob","phone":"555-0101"}'),
        ("user", "What was Bob's phone number?"),
    ]
    assert [role for role, _ in stored].count("user") == 2
    assert '{"name":"Bob","phone":"555-0101"}' in texts(model.calls[1])


def test_turns_the_core_cut_for_its_budget_are_not_sent_from_the_thread() -> None:
    # A view that starts after seq 1 left older turns out on purpose (the budget, a fold
    # still running): the thread's copies of them must not come back.
    from datetime import datetime, timezone

    from memory_vec import MemoryContext
    from memory_vec._model.records import ChatMessage

    thread: list[Any] = [
        HumanMessage("old question", id="h1"),
        AIMessage("old answer", id="a1"),
        HumanMessage("newer question", id="h2"),
        AIMessage("newer answer", id="a2"),
    ]
    now = datetime.now(timezone.utc)
    shown = [
        ChatMessage("user", "newer question", now, 3, "m3", {"lc_id": "h2"}),
        ChatMessage("assistant", "newer answer", now, 4, "m4", {"lc_id": "a2"}),
    ]
    ctx = MemoryContext(summary="", recent=shown, relevant=[], tokens={})
    sent = VectorSummaryMiddleware._earlier_turns(thread, [], ctx)
    assert [m.text for m in sent] == ["newer question", "newer answer"]
    first = [ChatMessage("user", "old question", now, 1, "m1", {"lc_id": "h1"}), *shown]
    predates = [HumanMessage("before the middleware", id="h0"), AIMessage("ok", id="a0"), *thread]
    sent = VectorSummaryMiddleware._earlier_turns(predates, [], MemoryContext("", first, [], {}))
    assert [m.text for m in sent][:2] == ["before the middleware", "ok"]
