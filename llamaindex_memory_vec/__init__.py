"""LlamaIndex adapter for memory-vec: rolling summary, vector recall, token budgets.

* :class:`VectorSummaryMemory` is a ``BaseMemory``: pass it as ``memory=`` to
  chat engines and agents.
* :class:`VectorSummaryMemoryBlock` is a ``BaseMemoryBlock`` for
  ``Memory.from_defaults(memory_blocks=[...])``.
* :class:`MemoryRetriever` is a ``BaseRetriever`` over recall (``NodeWithScore``
  with scores and metadata), for query engines: ``memory.as_retriever()``.

Install with ``pip install 'memory-vec[llamaindex]'``.
"""

from __future__ import annotations

from llamaindex_memory_vec._llm import LlamaIndexPromptLLM
from llamaindex_memory_vec.block import VectorSummaryMemoryBlock
from llamaindex_memory_vec.memory import VectorSummaryMemory, build_core
from llamaindex_memory_vec.retriever import MemoryRetriever, memory_node

__all__ = [
    "LlamaIndexPromptLLM",
    "MemoryRetriever",
    "VectorSummaryMemory",
    "VectorSummaryMemoryBlock",
    "build_core",
    "memory_node",
]
