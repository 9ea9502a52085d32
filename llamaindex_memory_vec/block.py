"""``VectorSummaryMemoryBlock``: memory-vec as a block of LlamaIndex's ``Memory``."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import LLM
from llama_index.core.memory.memory import BaseMemoryBlock

from llamaindex_memory_vec._convert import context_text, last_user_text, note_skipped, to_core
from llamaindex_memory_vec.memory import build_core
from llamaindex_memory_vec.retriever import MemoryRetriever, retriever_of
from memory_vec import MemoryConfig, MemoryCore

__all__ = ["VectorSummaryMemoryBlock"]


class VectorSummaryMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``llama_index.core.memory.Memory``.

    ``Memory`` keeps the newest messages itself and flushes the oldest to its
    blocks. This block stores what is flushed in a
    :class:`~memory_vec.MemoryCore` (a vector per message; older turns fold
    into a rolling summary) and, on every ``get``, returns as text:

    * the summary of what was flushed, and the flushed turns not yet
      folded into it (they have left ``Memory``'s window, so they are shown
      here until folded);
    * the stored memories relevant to the current input (the last user
      message), from this and the user's other sessions.

    Stored text is rendered as data: turns as ``role: text`` with further
    lines indented (no stored line reads as another turn), the summary and
    the memories in delimited blocks, and the block's own tag escaped inside.
    Each part stays within the core's token budgets. The scope (user and
    session) is the core's config, so use one block (or one core) per
    conversation.

    Example::

        from llama_index.core.memory import Memory
        from llamaindex_memory_vec import VectorSummaryMemoryBlock
        from memory_vec import MemoryConfig

        block = VectorSummaryMemoryBlock.from_defaults(
            config=MemoryConfig(user_id="alice", session_id="chat-1"), llm=llm
        )
        memory = Memory.from_defaults(session_id="chat-1", token_limit=4000, memory_blocks=[block])

    Async use: ``Memory`` calls ``aget`` / ``aput``; they run the core's async
    twins and never block the event loop.
    """

    name: str = Field(default="long_term_memory", description="Name of the block in Memory's template.")
    core: MemoryCore = Field(exclude=True, description="The memory-vec core that stores and recalls.")

    @classmethod
    def from_defaults(
        cls,
        config: MemoryConfig | dict[str, Any] | None = None,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        *,
        core: MemoryCore | None = None,
        name: str = "long_term_memory",
        priority: int = 0,
        **core_kwargs: Any,
    ) -> VectorSummaryMemoryBlock:
        """Build the block from settings and LlamaIndex objects, or a ready core.

        Args:
            config: a ``MemoryConfig`` or a dict of its settings.
            llm: a LlamaIndex LLM for summaries (default: extractive, no LLM).
            embed_model: a LlamaIndex ``BaseEmbedding`` (default: the core's offline one).
            core: an existing ``MemoryCore`` (then give none of the above).
            name: the block's name in ``Memory``'s template.
            priority: ``Memory``'s truncation priority (0 = never truncated).
            **core_kwargs: passed to ``MemoryCore`` (``backend=``, ``state_store=``...).
        """
        if core is None:
            core = build_core(config, llm, embed_model, **core_kwargs)
        elif config is not None or llm is not None or embed_model is not None or core_kwargs:
            raise ValueError("from_defaults(core=...) uses the core as it is; pass no other core settings")
        return cls(core=core, name=name, priority=priority)

    def as_retriever(self, **kwargs: Any) -> MemoryRetriever:
        """A LlamaIndex retriever over this memory's user (all of its sessions): recall
        as ``NodeWithScore`` s, for ``RetrieverQueryEngine`` or a retriever tool.

        Args:
            **kwargs: :class:`~llamaindex_memory_vec.MemoryRetriever` settings (``k``,
                ``filters``, ``scope``, ``session_id``, ``include_shared``, or
                ``user_id`` to read another of your users).
        """
        return retriever_of(self.core, **kwargs)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """Summary, flushed recent turns and relevant memories, as text.

        Stored vectors are only read (one recall query for the last user
        message in ``messages``; none when there is no user message).
        """
        ctx = await self.core.abuild_context(last_user_text(messages))
        # Memory wraps the text in <name>...</name>: stored text must not close that either.
        return context_text(ctx, with_recent=True, tags=(self.name,))

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store the flushed messages: one vector each, in one embedding call.

        Messages without text are skipped; what was left out is logged and
        noted in the write's trace.
        """
        translated = to_core(messages, self.core.config.max_content_bytes, self.core.config.max_metadata_bytes)
        if translated.inputs:
            await self.core.aadd_messages(translated.inputs)
        note_skipped(self.core, translated.skipped, wrote=bool(translated.inputs))
