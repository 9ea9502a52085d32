"""LangChain adapter for memory-vec: a thin translation layer, no memory logic.

* :class:`VectorSummaryMiddleware` for ``langchain.agents.create_agent``
  (the path forward: LangChain 2.0 removes ``BaseChatMemory``).
* :class:`VectorSummaryMemory`, a ``BaseChatMemory`` drop-in for
  ``ConversationChain``, ``LLMChain`` and LCEL chains, with :data:`PROMPT` /
  :data:`CHAT_PROMPT` templates that have both memory slots. Build it with
  ``VectorSummaryMemory.for_prompt(prompt, ...)`` so its variables fit the
  chain's prompt.
* :class:`MemoryRetriever`, a ``BaseRetriever`` over recall (documents with
  scores and metadata) for LCEL chains and ``RunnableWithMessageHistory``:
  ``memory.as_retriever()`` / ``middleware.as_retriever()``.

Install with ``pip install 'memory-vec[langchain]'``.
"""

from __future__ import annotations

from langchain_memory_vec._llm import INTERNAL_TAG, as_prompt_callable
from langchain_memory_vec._user import MissingUserIdError
from langchain_memory_vec.memory import CoreChatMessageHistory, VectorSummaryMemory
from langchain_memory_vec.middleware import VectorSummaryMiddleware
from langchain_memory_vec.prompts import CHAT_PROMPT, PROMPT, MissingPromptVariableError
from langchain_memory_vec.retriever import MemoryRetriever, format_memories, memory_document
from langchain_memory_vec.store import NamespaceScopeError, VectorSummaryStore

__all__ = [
    "CHAT_PROMPT",
    "INTERNAL_TAG",
    "PROMPT",
    "CoreChatMessageHistory",
    "MemoryRetriever",
    "MissingPromptVariableError",
    "MissingUserIdError",
    "NamespaceScopeError",
    "VectorSummaryMemory",
    "VectorSummaryMiddleware",
    "VectorSummaryStore",
    "as_prompt_callable",
    "format_memories",
    "memory_document",
]
