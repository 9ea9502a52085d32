"""Wrap a LangChain LLM or chat model into the core's ``prompt -> str`` callable.

Summary calls belong to memory-vec, not to the user's run: they must never
show up in the user's stream, ``astream_events`` or chat UI. LangChain
propagates the parent run (its callbacks, tags and stream handlers) through a
context variable, so each call here runs in a fresh, empty
:class:`contextvars.Context` with a config of its own.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

__all__ = ["INTERNAL_TAG", "as_prompt_callable"]

INTERNAL_TAG = "memory_vec:internal"
# LangGraph's "messages" stream mode skips runs tagged "nostream"; the empty
# context already detaches the call, this keeps it out even if a caller
# passes the graph's callbacks in explicitly.
_NOSTREAM_TAG = "nostream"


def as_prompt_callable(
    llm: BaseLanguageModel[Any],
    *,
    callbacks: Sequence[BaseCallbackHandler] | None = None,
    run_name: str = "memory_vec_summary",
) -> Callable[[str], str]:
    """A ``prompt -> text`` callable for :class:`memory_vec.MemoryCore`.

    Args:
        llm: a LangChain LLM (``BaseLLM``) or chat model (``BaseChatModel``).
        callbacks: handlers for the summary calls only (e.g. a tracer); they
            never receive the user's runs, and the user's never receive these.
        run_name: run name of the summary calls in traces.

    Returns:
        A function that sends the prompt and returns the answer's text.

    Raises:
        TypeError: when ``llm`` is not a LangChain language model.
    """
    if not isinstance(llm, BaseLanguageModel):
        raise TypeError(
            f"llm must be a LangChain LLM or chat model (BaseLanguageModel), got {type(llm).__name__}; "
            "pass e.g. ChatOpenAI(...) or FakeListLLM(...)"
        )
    handlers = list(callbacks or [])

    def call(prompt: str) -> str:
        config = RunnableConfig(
            callbacks=handlers,
            tags=[INTERNAL_TAG, _NOSTREAM_TAG],
            metadata={"memory_vec": "summary"},
            run_name=run_name,
        )
        result = contextvars.Context().run(llm.invoke, prompt, config)
        if isinstance(result, BaseMessage):
            return result.text
        return str(result)

    return call
