"""``VectorSummaryMemory``: a ``BaseChatMemory`` drop-in backed by memory-vec.

LangChain's ``BaseChatMemory`` (``langchain_classic``) is deprecated and goes
away in LangChain 2.0; for agents use
:class:`langchain_memory_vec.VectorSummaryMiddleware`. This class keeps
``ConversationChain``, ``LLMChain`` and hand-written LCEL chains working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_classic.memory.chat_memory import BaseChatMemory
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage
from langchain_core.prompts import BasePromptTemplate
from pydantic import Field, model_validator

from langchain_memory_vec._convert import context_messages, history_text, text_of, to_core, to_langchain
from langchain_memory_vec._llm import as_prompt_callable
from langchain_memory_vec.prompts import check_prompt_variables, prompt_variables
from langchain_memory_vec.retriever import MemoryRetriever
from memory_vec import MemoryConfig, MemoryContext, MemoryCore, MessageInput
from memory_vec._model.errors import InvalidInputError
from memory_vec._rules.storable import storable_text
from memory_vec.embeddings.models import LangChainEmbedder

__all__ = ["CoreChatMessageHistory", "VectorSummaryMemory"]

_DEFAULT_MEMORY_KEY = "history"
_DEFAULT_RELEVANT_KEY = "relevant_memories"


class CoreChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history that reads and writes one core session.

    ``messages`` are the session's recent (not yet summarized) turns from the
    core's working state; adding messages stores them in the core.

    Args:
        core: the :class:`~memory_vec.MemoryCore` holding the session.
        user_id, session_id: scope; default the core's config.
    """

    def __init__(self, core: MemoryCore, *, user_id: str | None = None, session_id: str | None = None) -> None:
        self.core = core
        self.user_id = user_id
        self.session_id = session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # read-only view of the core's state
        state = self.core.working_state(session_id=self.session_id, user_id=self.user_id)
        return [to_langchain(m) for m in state.messages]

    async def aget_messages(self) -> list[BaseMessage]:
        state = await self.core.aworking_state(session_id=self.session_id, user_id=self.user_id)
        return [to_langchain(m) for m in state.messages]

    def _inputs(self, messages: Sequence[BaseMessage]) -> list[MessageInput]:
        """The messages as core inputs; one left with no text (only control characters) is not stored."""
        limits = self.core.config.max_content_bytes, self.core.config.max_metadata_bytes
        return [i for i in (to_core(m, *limits) for m in messages) if i.content.strip()]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.core.add_messages(self._inputs(messages), session_id=self.session_id, user_id=self.user_id)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await self.core.aadd_messages(
            self._inputs(messages),
            session_id=self.session_id,
            user_id=self.user_id,
        )

    def clear(self) -> None:
        self.core.clear(session_id=self.session_id, user_id=self.user_id)

    async def aclear(self) -> None:
        await self.core.aclear(session_id=self.session_id, user_id=self.user_id)


class VectorSummaryMemory(BaseChatMemory):
    """Rolling summary + recent turns + recalled memories for LangChain chains.

    ``load_memory_variables`` gives the history (summary and recent turns,
    within ``config.max_token_limit``) under ``memory_key`` and the memories
    recalled for the current input under ``relevant_memories_key``.
    ``save_context`` stores the user input and the answer in one embedding
    call (the input's vector from recall is reused).

    **Prompt rule.** A chain never shows its prompt to its memory, and
    ``LLMChain`` and LCEL prompts silently ignore variables the prompt does
    not use; so the memory matches a prompt only when it is shown one:

    * ``VectorSummaryMemory.for_prompt(prompt, ...)`` builds a memory for
      ``prompt``. The prompt must have ``{history}`` (``memory_key``); the
      recalled memories go to ``{relevant_memories}`` when the prompt has that
      slot and are folded into ``{history}`` when it has not: never dropped.
    * ``memory.check_prompt(prompt)`` raises
      :class:`~langchain_memory_vec.MissingPromptVariableError` when the
      prompt lacks a variable this memory fills.
    * Built without a prompt, the memory fills ``{history}`` and
      ``{relevant_memories}``, the slots of :data:`PROMPT` and
      :data:`CHAT_PROMPT`; ``relevant_memories_key=None`` folds the memories
      into the history instead. ``ConversationChain`` compares its prompt
      with ``memory_variables`` itself and refuses a mismatch.

    History turns are labelled ``user:`` / ``assistant:`` (a turn's further
    lines indented, so stored text cannot start another turn); :data:`PROMPT`
    labels the current turn the same way. With ``return_messages=True`` each
    turn is its own message. The summary and the recalled memories are
    delimited blocks of data (``<summary>``, ``<memories>``).

    Setup, with ``ConversationChain`` and the package's :data:`PROMPT`::

        from langchain_classic.chains import ConversationChain
        from memory_vec import MemoryConfig
        from langchain_memory_vec import PROMPT, VectorSummaryMemory

        memory = VectorSummaryMemory.for_prompt(
            PROMPT,
            config=MemoryConfig(user_id="alice", session_id="chat-1"),
            llm=llm,                       # optional: LLM summaries
        )
        chain = ConversationChain(llm=llm, memory=memory, prompt=PROMPT)

    ``for_prompt`` with ConversationChain's stock prompt (only ``{history}``)
    folds the memories into the history; that prompt labels the current turn
    ``Human:`` / ``AI:``, so :data:`PROMPT` is the better fit.

    LCEL (``ConversationChain`` is legacy)::

        memory = VectorSummaryMemory.for_prompt(PROMPT, config=MemoryConfig(user_id="alice"))
        chain = PROMPT | llm
        inputs = {"input": question}
        answer = chain.invoke({**inputs, **memory.load_memory_variables(inputs)})
        memory.save_context(inputs, {"output": answer})

    Async: ``await memory.aload_memory_variables(inputs)``,
    ``await memory.asave_context(inputs, outputs)``, ``await memory.aclear()``;
    ``await memory.chat_memory.aget_messages()`` for the stored recent turns.

    Args:
        config: memory-vec settings (scope, budgets, backend); default
            ``MemoryConfig()``.
        llm: optional LangChain LLM or chat model for summaries. Its calls run
            detached from the user's run, so they never appear in the user's
            callbacks or stream.
        embeddings: optional LangChain ``Embeddings``; default the config's
            offline embedder.
        core: a ready :class:`~memory_vec.MemoryCore` instead of
            ``config`` / ``llm`` / ``embeddings``.
        memory_key: variable holding the history.
        relevant_memories_key: variable holding the recalled memories; None
            folds them into the history.
        return_messages: history as messages (the summary is a system
            message) instead of a string.
        input_key, output_key: which chain input/output to store, as in
            LangChain's own memories (needed for multi-input chains).
    """

    config: MemoryConfig | None = None
    # Bare generic: pydantic would try to build a parametrized BaseLanguageModel[Any].
    llm: BaseLanguageModel | None = None  # type: ignore[type-arg]
    embeddings: Embeddings | None = None
    core: MemoryCore | None = Field(default=None, exclude=True)
    memory_key: str = _DEFAULT_MEMORY_KEY
    relevant_memories_key: str | None = _DEFAULT_RELEVANT_KEY

    @model_validator(mode="before")
    @classmethod
    def _bind_core(cls, data: Any) -> Any:
        # Build the core before the fields are validated, so ``chat_memory``
        # is the core's session from the start: the base class default
        # (InMemoryChatMessageHistory, which warns) is never built.
        if not isinstance(data, dict):
            return data
        if data.get("chat_memory") is not None:
            raise InvalidInputError(
                "VectorSummaryMemory manages chat_memory itself (it reflects the core's session); "
                "do not pass chat_memory, pass config=MemoryConfig(user_id=..., session_id=...) instead"
            )
        core = data.get("core")
        config, llm, embeddings = data.get("config"), data.get("llm"), data.get("embeddings")
        if core is not None:
            if config is not None or llm is not None or embeddings is not None:
                raise InvalidInputError(
                    "VectorSummaryMemory: pass either core=... or config/llm/embeddings, not both "
                    "(a ready core already has its config, summarizer and embedder)"
                )
        else:
            if embeddings is not None and not isinstance(embeddings, Embeddings):
                raise InvalidInputError(f"embeddings must be a LangChain Embeddings, got {type(embeddings).__name__}")
            core = MemoryCore(
                MemoryConfig.from_dict(config) if isinstance(config, dict) else config,
                embedder=LangChainEmbedder(embeddings) if embeddings is not None else None,
                llm=as_prompt_callable(llm) if llm is not None else None,
            )
        if not isinstance(core, MemoryCore):
            raise InvalidInputError(f"core must be a memory_vec.MemoryCore, got {type(core).__name__}")
        return {**data, "core": core, "config": core.config, "chat_memory": CoreChatMessageHistory(core)}

    @model_validator(mode="after")
    def _check_keys(self) -> VectorSummaryMemory:
        if self.relevant_memories_key is not None and self.relevant_memories_key == self.memory_key:
            raise InvalidInputError(
                f"relevant_memories_key and memory_key are both {self.memory_key!r}; use two names, "
                "or relevant_memories_key=None to fold the memories into the history"
            )
        return self

    @classmethod
    def for_prompt(cls, prompt: BasePromptTemplate[Any], **kwargs: Any) -> VectorSummaryMemory:
        """A memory whose variables fit ``prompt``; the way to build one for a chain.

        The recalled memories go to ``{relevant_memories}`` when ``prompt``
        has that variable and are folded into the history when it has not
        (unless ``relevant_memories_key`` is given, which is then checked).
        The prompt is checked before anything is built.

        Args:
            prompt: the chain's prompt (string or chat).
            **kwargs: the constructor's arguments (``config``, ``llm``,
                ``core``, ``memory_key``...).

        Raises:
            MissingPromptVariableError: the prompt has no history variable
                (``memory_key``), or lacks an explicitly given
                ``relevant_memories_key``.
        """
        memory_key = kwargs.get("memory_key", _DEFAULT_MEMORY_KEY)
        if "relevant_memories_key" not in kwargs and _DEFAULT_RELEVANT_KEY not in prompt_variables(prompt):
            kwargs["relevant_memories_key"] = None
        relevant_key = kwargs.get("relevant_memories_key", _DEFAULT_RELEVANT_KEY)
        check_prompt_variables(prompt, memory_key=memory_key, relevant_memories_key=relevant_key)
        return cls(**kwargs)

    @property
    def _core(self) -> MemoryCore:
        assert self.core is not None  # set by the validator
        return self.core

    def as_retriever(self, **fields: Any) -> MemoryRetriever:
        """A LangChain retriever over this memory's user: recall as ``Document`` s with scores.

        Bound to the memory's user (``config.user_id``), all of its sessions; a run
        that names another user in ``config["configurable"]["user_id"]`` is refused.
        Use it in LCEL: ``{"context": retriever | format_docs, "question": RunnablePassthrough()}``.

        Args:
            **fields: :class:`~langchain_memory_vec.MemoryRetriever` settings (``k``,
                ``filters``, ``scope``, ``session_id``, ``include_shared``, or
                ``user_id`` to read another of your users).
        """
        fields.setdefault("user_id", self._core.config.user_id)
        if fields.get("scope") == "session":
            fields.setdefault("session_id", self._core.config.session_id)
        return MemoryRetriever(core=self._core, **fields)

    # ------------------------------------------------------------------ variables
    @property
    def memory_variables(self) -> list[str]:
        """``[memory_key, relevant_memories_key]`` (the latter when not None)."""
        keys = [self.memory_key]
        if self.relevant_memories_key is not None:
            keys.append(self.relevant_memories_key)
        return keys

    def check_prompt(self, prompt: BasePromptTemplate[Any]) -> None:
        """Raise when ``prompt`` lacks a variable this memory fills.

        Call it for a prompt you wrote (``for_prompt`` calls it for you):
        chains and LCEL prompts ignore variables the prompt does not use.

        Raises:
            MissingPromptVariableError: naming the missing variable and the fixes.
        """
        check_prompt_variables(prompt, memory_key=self.memory_key, relevant_memories_key=self.relevant_memories_key)

    def _input_key(self, inputs: dict[str, Any]) -> str | None:
        if self.input_key is not None:
            if self.input_key not in inputs:
                raise InvalidInputError(f"input_key {self.input_key!r} is not among the inputs {sorted(inputs)}")
            return self.input_key
        candidates = sorted(set(inputs) - set(self.memory_variables) - {"stop"})
        if not candidates:
            return None
        if len(candidates) > 1:
            raise InvalidInputError(
                f"VectorSummaryMemory got several input keys {candidates} and cannot tell which one is "
                f"the user's message. Fix: VectorSummaryMemory(..., input_key={candidates[0]!r}) "
                "naming the key to store and recall with."
            )
        return candidates[0]

    def _query(self, inputs: dict[str, Any]) -> str | None:
        key = self._input_key(inputs)
        return None if key is None else text_of(inputs[key])

    def _variables(self, ctx: MemoryContext) -> dict[str, Any]:
        fold = self.relevant_memories_key is None
        history: str | list[BaseMessage]
        if self.return_messages:
            history = context_messages(ctx, fold_relevant=fold)
        else:
            history = history_text(ctx, fold_relevant=fold)
        variables: dict[str, Any] = {self.memory_key: history}
        if self.relevant_memories_key is not None:
            variables[self.relevant_memories_key] = ctx.render()
        return variables

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """History and relevant memories for ``inputs`` (recall uses the input)."""
        return self._variables(self._core.build_context(self._query(inputs)))

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables`."""
        return self._variables(await self._core.abuild_context(self._query(inputs)))

    # ------------------------------------------------------------------ writes
    def _pair(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[Any]:
        key = self._input_key(inputs)
        if key is None:
            raise InvalidInputError(f"save_context found no input to store in {sorted(inputs)}")
        user, answer = self._get_input_output({key: inputs[key]}, outputs)
        limit = self._core.config.max_content_bytes
        pair = [
            (role, storable_text(text_of(value), limit)[0]) for role, value in (("user", user), ("assistant", answer))
        ]
        return [(role, text) for role, text in pair if text.strip()] or pair  # an empty answer: the input still kept

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Store the user input and the answer (one embedding call)."""
        self._core.add_messages(self._pair(inputs, outputs))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Async :meth:`save_context`."""
        await self._core.aadd_messages(self._pair(inputs, outputs))

    def clear(self) -> None:
        """Forget this session: its summary, recent turns and stored records."""
        self._core.clear()

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await self._core.aclear()
