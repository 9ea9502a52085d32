"""as_prompt_callable: text out, and calls detached from the surrounding run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from langchain_memory_vec import as_prompt_callable

from .conftest import PromptCapture


def test_chat_model_answer_becomes_text() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage(content=[{"type": "text", "text": "- a summary"}])]))
    assert as_prompt_callable(model)("summarize") == "- a summary"


def test_rejects_a_non_langchain_llm() -> None:
    with pytest.raises(TypeError, match="BaseLanguageModel"):
        as_prompt_callable(lambda p: p)  # type: ignore[arg-type]


def test_calls_inside_a_user_run_do_not_reach_its_callbacks(capture: PromptCapture) -> None:
    own = PromptCapture()
    summarize = as_prompt_callable(FakeListLLM(responses=["- internal"]), callbacks=[own])
    step = RunnableLambda(lambda text: summarize(f"INTERNAL PROMPT {text}"))
    assert step.invoke("x", {"callbacks": [capture], "tags": ["user-run"]}) == "- internal"
    assert capture.prompts == []  # the user's handler saw no LLM call
    assert own.prompts == ["INTERNAL PROMPT x"]  # the memory's own handler did


def test_calls_inside_astream_events_do_not_show(capture: PromptCapture) -> None:
    summarize = as_prompt_callable(FakeListLLM(responses=["- internal"]))

    async def run() -> list[dict[str, Any]]:
        step = RunnableLambda(lambda text: summarize(f"INTERNAL PROMPT {text}"))
        return [e async for e in step.astream_events("x", version="v2")]

    events = asyncio.run(run())
    assert events and not any(e["event"].startswith("on_llm") for e in events)
