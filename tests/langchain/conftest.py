"""Fixtures for the LangChain adapter: fast cores, prompt capture, scripted models."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from langchain_memory_vec import as_prompt_callable
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder

SUMMARY_MARKER = "- SUMMARY-MARKER the user keeps a 5000 budget"
SMALL_BUDGET = {"max_token_limit": 300, "summary_max_tokens": 100, "relevant_token_limit": 150, "keep_recent_turns": 2}


class PromptCapture(BaseCallbackHandler):
    """Records every prompt (string or chat) that reaches a model, with its tags."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.chats: list[list[BaseMessage]] = []
        self.tags: list[list[str]] = []

    def on_llm_start(self, serialized: Any, prompts: list[str], **kwargs: Any) -> None:
        self.prompts.extend(prompts)
        self.tags.append(list(kwargs.get("tags") or []))

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.chats.extend(messages)
        self.prompts.extend("\n".join(f"{m.type}: {m.text}" for m in chat) for chat in messages)
        self.tags.append(list(kwargs.get("tags") or []))


class ScriptedChatModel(BaseChatModel):
    """A chat model whose answer is a function of the messages; supports tools.

    ``GenericFakeChatModel`` has no ``bind_tools``, which ``create_agent``
    needs for a tool loop. Every call's messages are kept in ``calls``.
    """

    respond: Callable[[list[BaseMessage]], AIMessage]
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.calls.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.respond(list(messages)))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


@pytest.fixture
def stores() -> tuple[InMemoryBackend, InMemoryStateStore]:
    return InMemoryBackend(), InMemoryStateStore()


@pytest.fixture
def summary_llm() -> FakeListLLM:
    return FakeListLLM(responses=[SUMMARY_MARKER])


@pytest.fixture
def core_factory(
    stores: tuple[InMemoryBackend, InMemoryStateStore], summary_llm: FakeListLLM
) -> Callable[..., MemoryCore]:
    """Cores on one shared in-process store, hashing embedder, fake summary LLM."""
    backend, state = stores
    embedder = DeterministicHashEmbedder(dimension=256)

    def make(*, llm: Any = summary_llm, **config: Any) -> MemoryCore:
        # Folds inline, so a test reads the LLM's summary right after the turn
        # (test_background_folds.py covers folds off the turn).
        settings = {
            "user_id": "alice",
            "session_id": "s1",
            "score_threshold": 0.0,
            "summary_in_background": False,
            **SMALL_BUDGET,
            **config,
        }
        return MemoryCore(
            MemoryConfig(**settings),
            embedder=embedder,
            backend=backend,
            state_store=state,
            llm=as_prompt_callable(llm) if llm is not None else None,
        )

    return make


@pytest.fixture
def capture() -> PromptCapture:
    return PromptCapture()
