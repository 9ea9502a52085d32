"""``VectorSummaryMemory``: memory-vec as a LlamaIndex ``BaseMemory``."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import ConfigDict, Field, model_validator
from llama_index.core.llms import LLM
from llama_index.core.memory.types import BaseMemory

from llamaindex_memory_vec._convert import (
    Translated,
    context_text,
    from_core,
    from_record,
    message_text,
    note_skipped,
    to_core,
)
from llamaindex_memory_vec._llm import LlamaIndexPromptLLM
from llamaindex_memory_vec.retriever import MemoryRetriever, retriever_of
from memory_vec import MemoryConfig, MemoryContext, MemoryCore
from memory_vec._rules.storable import check_inputs
from memory_vec.embeddings import LlamaIndexEmbedder
from memory_vec.state import WorkingState

__all__ = ["VectorSummaryMemory", "build_core"]


def build_core(
    config: MemoryConfig | dict[str, Any] | None = None,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
    **core_kwargs: Any,
) -> MemoryCore:
    """A :class:`~memory_vec.MemoryCore` from LlamaIndex objects.

    Args:
        config: a ``MemoryConfig`` (or a dict of its settings); default
            ``MemoryConfig()``.
        llm: a LlamaIndex LLM, used for summaries (wrapped as ``prompt -> text``).
        embed_model: a LlamaIndex ``BaseEmbedding``, used as the embedder.
        **core_kwargs: passed to ``MemoryCore`` (``backend=``, ``state_store=``,
            ``summarizer=``, ``token_counter=``, ``embedder=``).
    """
    if isinstance(config, dict):
        config = MemoryConfig.from_dict(config)
    if embed_model is not None:
        if core_kwargs.get("embedder") is not None:
            raise ValueError("pass either embed_model= (a LlamaIndex BaseEmbedding) or embedder=, not both")
        core_kwargs["embedder"] = LlamaIndexEmbedder(embed_model)
    if llm is not None:
        if core_kwargs.get("llm") is not None:
            raise ValueError("llm= was given twice")
        core_kwargs["llm"] = LlamaIndexPromptLLM(llm)
    return MemoryCore(config, **core_kwargs)


class VectorSummaryMemory(BaseMemory):
    """Rolling summary + vector recall + token budget, as a LlamaIndex memory.

    A drop-in for ``ChatMemoryBuffer`` / ``ChatSummaryMemoryBuffer``: every
    message put is stored whole in the working buffer and as a vector;
    old turns fold into a summary when the buffer passes its budget; ``get``
    returns a system message with the summary and the memories relevant to
    the current input, then the recent turns, all within the core's budgets.
    All the memory rules live in :class:`memory_vec.MemoryCore`; this class
    only translates LlamaIndex messages.

    Setup and a minimal example::

        from llama_index.core.chat_engine import SimpleChatEngine
        from llamaindex_memory_vec import VectorSummaryMemory
        from memory_vec import MemoryConfig

        memory = VectorSummaryMemory.from_defaults(
            config=MemoryConfig(user_id="alice", session_id="chat-1"), llm=llm
        )
        engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
        engine.chat("My budget cap is 5000 euros.")

    Async use: ``aget``, ``aput``, ``aput_messages``, ``aset``, ``areset``
    and ``aget_all`` never block the event loop (agents call these)::

        await memory.aput(ChatMessage(role="user", content="hi"))
        history = await memory.aget()

    Content that is not text (images, audio...) is not stored; a message
    keeps its text blocks, a message with no text at all is skipped. What
    was left out is logged (INFO, logger ``llamaindex_memory_vec``) and,
    when the rest was stored, noted in ``memory.core.last_trace.events``.

    Attributes:
        config: the core's settings (serialized with the memory).
        core: the :class:`~memory_vec.MemoryCore` doing the work (not serialized;
            ``from_dict`` builds a new one from ``config``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: MemoryConfig = Field(description="Settings of the memory-vec core (scope, budgets, backend).")
    core: MemoryCore = Field(exclude=True, description="The memory-vec core that stores and recalls.")

    @model_validator(mode="before")
    @classmethod
    def _core_from_config(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        core, config = data.get("core"), data.get("config")
        if core is None:
            core = build_core(config)
        elif config is not None and (
            config is not core.config
            and (MemoryConfig.from_dict(config) if isinstance(config, dict) else config) != core.config
        ):
            raise ValueError("pass config= or core= (whose config is used), not two different configs")
        data["core"], data["config"] = core, core.config
        return data

    @classmethod
    def class_name(cls) -> str:
        return "VectorSummaryMemory"

    @classmethod
    def from_defaults(
        cls,
        config: MemoryConfig | dict[str, Any] | None = None,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        *,
        core: MemoryCore | None = None,
        chat_history: list[ChatMessage] | None = None,
        **core_kwargs: Any,
    ) -> VectorSummaryMemory:
        """Build the memory from settings and LlamaIndex objects, or a ready core.

        Args:
            config: a ``MemoryConfig`` or a dict of its settings.
            llm: a LlamaIndex LLM for summaries; without one the core's
                extractive summarizer (no LLM) is used.
            embed_model: a LlamaIndex ``BaseEmbedding``; default is the core's
                offline embedder from ``config.embedding_model``.
            core: an existing ``MemoryCore`` (then give none of the above).
            chat_history: messages to store first (embedded and stored).
            **core_kwargs: passed to ``MemoryCore`` (``backend=``, ``state_store=``,
                ``summarizer=``, ``embedder=``, ``token_counter=``).
        """
        if core is not None:
            given = [n for n, v in (("config", config), ("llm", llm), ("embed_model", embed_model)) if v is not None]
            if given or core_kwargs:
                raise ValueError(
                    f"from_defaults(core=...) uses the core as it is; do not also pass {given + sorted(core_kwargs)}"
                )
        else:
            core = build_core(config, llm, embed_model, **core_kwargs)
        memory = cls(core=core, config=core.config)
        if chat_history:
            memory.put_messages(chat_history)
        return memory

    # ------------------------------------------------------------------ scope
    @property
    def user_id(self) -> str:
        return self.core.config.user_id

    @property
    def session_id(self) -> str:
        return self.core.config.session_id

    # ------------------------------------------------------------------ reads
    def as_retriever(self, **kwargs: Any) -> MemoryRetriever:
        """A LlamaIndex retriever over this memory's user (all of its sessions): recall
        as ``NodeWithScore`` s, for ``RetrieverQueryEngine`` or a retriever tool.

        Args:
            **kwargs: :class:`~llamaindex_memory_vec.MemoryRetriever` settings (``k``,
                ``filters``, ``scope``, ``session_id``, ``include_shared``, or
                ``user_id`` to read another of your users).
        """
        return retriever_of(self.core, **kwargs)

    @staticmethod
    def _explicit_query(input: str | ChatMessage | None) -> str | None:
        if isinstance(input, ChatMessage):
            return message_text(input)[0] or None
        return input

    @staticmethod
    def _last_user_text(state: WorkingState) -> str | None:
        return next((m.content for m in reversed(state.messages) if m.role == "user"), None)

    @staticmethod
    def _history(ctx: MemoryContext) -> list[ChatMessage]:
        head = context_text(ctx)  # summary and memories, each a delimited block of data
        history = [from_core(m) for m in ctx.history_messages()]  # each turn its own message
        return [ChatMessage(role=MessageRole.SYSTEM, content=head), *history] if head else history

    def get(self, input: str | ChatMessage | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The chat history to send to the LLM.

        A system message with the summary and the memories relevant to
        ``input`` (default: the last user message of the session), each a
        delimited block of data, then the recent messages, each part within
        the core's token budget. Stored vectors are only read (one recall
        query). Extra keyword arguments that chat engines pass
        (``initial_token_count``) are accepted and not used: the budget is
        ``config.max_token_limit``.
        """
        query = self._explicit_query(input)
        if input is None:
            query = self._last_user_text(self.core.working_state())
        return self._history(self.core.build_context(query))

    def get_all(self) -> list[ChatMessage]:
        """Every message stored for this session, oldest first (raw, unsummarized).

        Read from the stored records (including writes still pending in a
        background writer); stored vectors are not changed.
        """
        return [from_record(r) for r in self.core.session_history()]

    # ------------------------------------------------------------------ writes
    def put(self, message: ChatMessage) -> None:
        """Store one message: working buffer plus one new vector (maybe a fold)."""
        self.put_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store several messages in order, with one embedding call.

        Each message with text adds one vector; a message with no text is
        skipped, and what was left out is logged and noted in the write's trace.
        """
        translated = to_core(messages, self.core.config.max_content_bytes, self.core.config.max_metadata_bytes)
        if translated.inputs:
            self.core.add_messages(translated.inputs)
        note_skipped(self.core, translated.skipped, wrote=bool(translated.inputs))

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the session's working history (summary and recent turns) by ``messages``.

        Stored vectors of earlier messages are kept (they stay recallable and
        in ``get_all``); ``messages`` are embedded and stored as new vectors,
        so passing the same history again stores it again. Use ``reset`` to
        delete the session's vectors.
        """
        translated = self._translated(messages)  # checked first: a refused message clears nothing
        self.core.reset_working_state()
        if translated.inputs:
            self.core.add_messages(translated.inputs)
        note_skipped(self.core, translated.skipped, wrote=bool(translated.inputs))

    def _translated(self, messages: list[ChatMessage]) -> Translated:
        translated = to_core(messages, self.core.config.max_content_bytes, self.core.config.max_metadata_bytes)
        check_inputs(translated.inputs, self.core.config)
        return translated

    def reset(self) -> None:
        """Forget this session: its working state and every stored vector of it.

        Other sessions of the same user keep their memories (``MemoryCore.clear``).
        """
        self.core.clear()

    # ------------------------------------------------------------------ async twins
    # Same steps as the sync methods; only the core calls are the async ones.
    async def aget(self, input: str | ChatMessage | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Async :meth:`get`."""
        query = self._explicit_query(input)
        if input is None:
            query = self._last_user_text(await self.core.aworking_state())
        return self._history(await self.core.abuild_context(query))

    async def aget_all(self) -> list[ChatMessage]:
        """Async :meth:`get_all`."""
        return [from_record(r) for r in await self.core.asession_history()]

    async def aput(self, message: ChatMessage) -> None:
        """Async :meth:`put`."""
        await self.aput_messages([message])

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`put_messages`."""
        translated = to_core(messages, self.core.config.max_content_bytes, self.core.config.max_metadata_bytes)
        if translated.inputs:
            await self.core.aadd_messages(translated.inputs)
        note_skipped(self.core, translated.skipped, wrote=bool(translated.inputs))

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`set`."""
        translated = self._translated(messages)
        await self.core.areset_working_state()
        if translated.inputs:
            await self.core.aadd_messages(translated.inputs)
        note_skipped(self.core, translated.skipped, wrote=bool(translated.inputs))

    async def areset(self) -> None:
        """Async :meth:`reset`."""
        await self.core.aclear()
