"""LlamaIndex adapter for memory-vec: rolling summary, vector recall, token budgets.

* :class:`VectorSummaryMemory` is a ``BaseMemory``: pass it as ``memory=`` to
  chat engines and agents.
* :class:`VectorSummaryMemoryBlock` is a ``BaseMemoryBlock`` for
  ``Memory.from_defaults(memory_blocks=[...])``.

Install with ``pip install 'memory-vec[llamaindex]'``.
"""

from __future__ import annotations

from llamaindex_memory_vec._llm import LlamaIndexPromptLLM
from llamaindex_memory_vec.block import VectorSummaryMemoryBlock
from llamaindex_memory_vec.memory import VectorSummaryMemory, build_core

__all__ = ["LlamaIndexPromptLLM", "VectorSummaryMemory", "VectorSummaryMemoryBlock", "build_core"]
