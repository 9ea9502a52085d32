"""A LlamaIndex LLM as the ``prompt -> text`` callable the core expects."""

from __future__ import annotations

from llama_index.core.llms import LLM

__all__ = ["LlamaIndexPromptLLM"]


class LlamaIndexPromptLLM:
    """Calls ``llm.complete(prompt)`` and returns the answer's text.

    The core's :class:`~memory_vec._rules.summary.LLMSummarizer` (and extraction)
    accept any ``prompt -> str`` callable; this is the LlamaIndex one.
    Chat-only models work too: LlamaIndex routes ``complete`` through chat.

    Args:
        llm: any LlamaIndex ``LLM`` (OpenAI, Ollama, ``MockLLM``...).
    """

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def __call__(self, prompt: str) -> str:
        return self.llm.complete(prompt).text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.llm).__name__})"
