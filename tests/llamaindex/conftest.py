"""Fixtures for the LlamaIndex adapter tests: capturing mock LLMs and memories
on in-process stores with the hashing embedder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ChatResponseGen, CompletionResponse
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import MockLLM

from llamaindex_memory_vec import VectorSummaryMemory, VectorSummaryMemoryBlock
from memory_vec import MemoryConfig
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder


class CapturingLLM(MockLLM):
    """``MockLLM`` that keeps every chat message list and prompt it receives.

    ``reply`` (when set) is the text of every answer; otherwise ``MockLLM``
    answers ("text text ..." with ``max_tokens``, or the prompt echoed).
    """

    reply: str | None = Field(default=None, exclude=True)
    chats: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)
    prompts: list[str] = Field(default_factory=list, exclude=True)

    def __init__(self, reply: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reply = reply

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        if self.reply is not None:
            return CompletionResponse(text=self.reply)
        return super().complete(prompt, formatted=formatted, **kwargs)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.chats.append([m.model_copy(deep=True) for m in messages])
        return super().chat(messages, **kwargs)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        self.chats.append([m.model_copy(deep=True) for m in messages])
        return super().stream_chat(messages, **kwargs)


def texts(messages: Sequence[ChatMessage]) -> list[str]:
    return [f"{m.role.value}: {m.content}" for m in messages]


@pytest.fixture
def backend() -> InMemoryBackend:
    return InMemoryBackend()


@pytest.fixture
def summarizer_llm() -> CapturingLLM:
    return CapturingLLM(reply="- the user works on the budget plan")


@pytest.fixture
def make_memory(
    backend: InMemoryBackend, hash_embedder: DeterministicHashEmbedder, summarizer_llm: CapturingLLM
) -> Callable[..., VectorSummaryMemory]:
    """A memory on the shared in-process backend; small budgets make folds happen."""
    state = InMemoryStateStore()

    def factory(**settings: Any) -> VectorSummaryMemory:
        settings.setdefault("user_id", "u1")
        settings.setdefault("session_id", "s1")
        settings.setdefault("score_threshold", 0.0)
        settings.setdefault("max_token_limit", 300)
        settings.setdefault("summary_max_tokens", 100)
        settings.setdefault("summary_in_background", False)  # read the LLM's summary right after a turn
        settings.setdefault("relevant_token_limit", 200)
        return VectorSummaryMemory.from_defaults(
            config=MemoryConfig(**settings),
            llm=summarizer_llm,
            embedder=hash_embedder,
            backend=backend,
            state_store=state,
        )

    return factory


@pytest.fixture
def memory(make_memory: Callable[..., VectorSummaryMemory]) -> VectorSummaryMemory:
    return make_memory()


@pytest.fixture
def make_block(
    backend: InMemoryBackend, hash_embedder: DeterministicHashEmbedder, summarizer_llm: CapturingLLM
) -> Callable[..., VectorSummaryMemoryBlock]:
    def factory(**settings: Any) -> VectorSummaryMemoryBlock:
        settings.setdefault("user_id", "u1")
        settings.setdefault("session_id", "s1")
        settings.setdefault("score_threshold", 0.0)
        settings.setdefault("max_token_limit", 300)
        settings.setdefault("summary_max_tokens", 100)
        settings.setdefault("summary_in_background", False)  # read the LLM's summary right after a turn
        return VectorSummaryMemoryBlock.from_defaults(
            config=MemoryConfig(**settings),
            llm=summarizer_llm,
            embedder=hash_embedder,
            backend=backend,
            state_store=InMemoryStateStore(),
        )

    return factory
