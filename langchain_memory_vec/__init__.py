"""LangChain adapter for memory-vec: a thin translation layer, no memory logic.

* :class:`VectorSummaryMiddleware` for ``langchain.agents.create_agent``
  (the path forward: LangChain 2.0 removes ``BaseChatMemory``).
* :class:`VectorSummaryMemory`, a ``BaseChatMemory`` drop-in for
  ``ConversationChain``, ``LLMChain`` and LCEL chains, with :data:`PROMPT` /
  :data:`CHAT_PROMPT` templates that have both memory slots.

Install with ``pip install 'memory-vec[langchain]'``.
"""

from __future__ import annotations

from ._llm import INTERNAL_TAG, as_prompt_callable
from .memory import CHAT_PROMPT, PROMPT, CoreChatMessageHistory, VectorSummaryMemory
from .middleware import VectorSummaryMiddleware

__all__ = [
    "VectorSummaryMemory",
    "VectorSummaryMiddleware",
    "CoreChatMessageHistory",
    "PROMPT",
    "CHAT_PROMPT",
    "INTERNAL_TAG",
    "as_prompt_callable",
]
