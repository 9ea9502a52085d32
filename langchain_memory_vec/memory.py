"""``VectorSummaryMemory``: a ``BaseChatMemory`` drop-in backed by memory-vec.

LangChain's ``BaseChatMemory`` (``langchain_classic``) is deprecated and goes
away in LangChain 2.0; for agents use
:class:`langchain_memory_vec.VectorSummaryMiddleware`. This class keeps
``ConversationChain``, ``LLMChain`` and hand-written LCEL chains working.
"""

from __future__ import annotations

import sys
from typing import Any

from langchain_classic.memory.chat_memory import BaseChatMemory
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from pydantic import Field, model_validator

from memory_vec import MemoryConfig, MemoryContext, MemoryCore
from memory_vec.embeddings.models import LangChainEmbedder
from memory_vec.errors import InvalidInputError

from ._convert import context_messages, history_text, text_of, to_core, to_langchain
from ._llm import as_prompt_callable

__all__ = ["VectorSummaryMemory", "CoreChatMessageHistory", "PROMPT", "CHAT_PROMPT"]

_TEMPLATE = """The following is a friendly conversation between a human and an AI. The AI is talkative and \
provides lots of specific details from its context. If the AI does not know the answer to a question, it \
truthfully says it does not know.

{relevant_memories}

Current conversation:
{history}
Human: {input}
AI:"""

PROMPT = PromptTemplate(input_variables=["relevant_memories", "history", "input"], template=_TEMPLATE)
"""String prompt with both slots, for ``ConversationChain`` / ``LLMChain`` / LCEL."""

CHAT_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant.\n\n{relevant_memories}"),
        MessagesPlaceholder("history"),
        ("human", "{input}"),
    ]
)
"""Chat prompt with both slots, for ``return_messages=True``."""


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
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        state = self.core.working_state(session_id=self.session_id, user_id=self.user_id)
        return [to_langchain(m) for m in state.messages]

    def add_messages(self, messages: Any) -> None:
        self.core.add_messages(
            [to_core(m) for m in messages], session_id=self.session_id, user_id=self.user_id
        )

    async def aadd_messages(self, messages: Any) -> None:
        await self.core.aadd_messages(
            [to_core(m) for m in messages], session_id=self.session_id, user_id=self.user_id
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

    Setup, with the stock ``ConversationChain`` prompt::

        from langchain_classic.chains import ConversationChain
        from memory_vec import MemoryConfig
        from langchain_memory_vec import VectorSummaryMemory

        memory = VectorSummaryMemory(
            config=MemoryConfig(user_id="alice", session_id="chat-1"),
            llm=llm,                       # optional: LLM summaries
            relevant_memories_key=None,    # fold memories into {history}
        )
        chain = ConversationChain(llm=llm, memory=memory)

    LCEL (``ConversationChain`` is legacy)::

        from langchain_memory_vec import PROMPT

        memory = VectorSummaryMemory(config=MemoryConfig(user_id="alice"))
        chain = PROMPT | llm
        inputs = {"input": question}
        answer = chain.invoke({**inputs, **memory.load_memory_variables(inputs)})
        memory.save_context(inputs, {"output": answer})

    Async: ``await memory.aload_memory_variables(inputs)``,
    ``await memory.asave_context(inputs, outputs)``, ``await memory.aclear()``.

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
            folds them into the history so a prompt with only ``{history}``
            (the stock ``ConversationChain`` one) works unchanged.
        return_messages: history as messages (the summary is a system
            message) instead of a string.
        input_key, output_key: which chain input/output to store, as in
            LangChain's own memories (needed for multi-input chains).
    """

    config: MemoryConfig | None = None
    llm: BaseLanguageModel | None = None  # type: ignore[type-arg]
    embeddings: Embeddings | None = None
    core: MemoryCore | None = Field(default=None, exclude=True)
    memory_key: str = "history"
    relevant_memories_key: str | None = "relevant_memories"
    # Filled from the core after validation; the base class default
    # (InMemoryChatMessageHistory) is never built, so nothing warns.
    chat_memory: BaseChatMessageHistory = Field(default=None)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _build_core(self) -> VectorSummaryMemory:
        if self.core is not None:
            if self.config is not None or self.llm is not None or self.embeddings is not None:
                raise InvalidInputError(
                    "VectorSummaryMemory: pass either core=... or config/llm/embeddings, not both "
                    "(a ready core already has its config, summarizer and embedder)"
                )
        else:
            self.core = MemoryCore(
                self.config or MemoryConfig(),
                embedder=LangChainEmbedder(self.embeddings) if self.embeddings is not None else None,
                llm=as_prompt_callable(self.llm) if self.llm is not None else None,
            )
        if self.config is None:
            self.config = self.core.config
        if self.chat_memory is not None and not isinstance(self.chat_memory, CoreChatMessageHistory):
            raise InvalidInputError(
                "VectorSummaryMemory manages chat_memory itself (it reflects the core's session); "
                "do not pass chat_memory, pass config=MemoryConfig(user_id=..., session_id=...) instead"
            )
        if self.relevant_memories_key is not None and self.relevant_memories_key == self.memory_key:
            raise InvalidInputError(
                f"relevant_memories_key and memory_key are both {self.memory_key!r}; use two names, "
                "or relevant_memories_key=None to fold the memories into the history"
            )
        self.chat_memory = CoreChatMessageHistory(self.core)
        return self

    @property
    def _core(self) -> MemoryCore:
        assert self.core is not None  # set by the validator
        return self.core

    # ------------------------------------------------------------------ variables
    @property
    def memory_variables(self) -> list[str]:
        """``[memory_key, relevant_memories_key]`` (the latter when not None)."""
        keys = [self.memory_key]
        if self.relevant_memories_key is not None:
            keys.append(self.relevant_memories_key)
        self._check_calling_chain()
        return keys

    def check_prompt(self, prompt: BasePromptTemplate[Any]) -> None:
        """Raise when ``prompt`` lacks a variable this memory provides.

        Chains check this automatically; call it for LCEL chains.

        Raises:
            InvalidInputError: naming the missing slot and the two fixes.
        """
        variables = set(prompt.input_variables) | set(getattr(prompt, "optional_variables", []) or [])
        key = self.relevant_memories_key
        if key is not None and key not in variables:
            raise InvalidInputError(
                f"VectorSummaryMemory provides {{{key}}} but the prompt has no such variable "
                f"(it has {sorted(variables)}), so recalled memories would be dropped. Fix: add "
                f"{{{key}}} to the prompt (see langchain_memory_vec.PROMPT), or pass "
                "relevant_memories_key=None to fold the memories into the history."
            )
        if self.memory_key not in variables:
            raise InvalidInputError(
                f"VectorSummaryMemory provides {{{self.memory_key}}} but the prompt has no such variable "
                f"(it has {sorted(variables)}). Fix: add {{{self.memory_key}}} to the prompt or set "
                "memory_key to the prompt's history variable."
            )

    def _check_calling_chain(self) -> None:
        # Chains have no hook that shows the memory its prompt, and LLMChain
        # silently drops variables the prompt does not use. The calling
        # frame (Chain.prep_inputs, ConversationChain's validator) holds the
        # chain as ``self``: check its prompt there, once per prompt.
        frame = sys._getframe(2)
        for _ in range(3):
            if frame is None:
                return
            owner = frame.f_locals.get("self")
            if owner is not None and owner is not self and getattr(owner, "memory", None) is self:
                prompt = getattr(owner, "prompt", None)
                if isinstance(prompt, BasePromptTemplate):
                    self.check_prompt(prompt)
                return
            frame = frame.f_back

    def _input_key(self, inputs: dict[str, Any]) -> str | None:
        if self.input_key is not None:
            if self.input_key not in inputs:
                raise InvalidInputError(
                    f"input_key {self.input_key!r} is not among the inputs {sorted(inputs)}"
                )
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
        self._check_calling_chain()
        return self._variables(self._core.build_context(self._query(inputs)))

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables`."""
        self._check_calling_chain()
        return self._variables(await self._core.abuild_context(self._query(inputs)))

    # ------------------------------------------------------------------ writes
    def _pair(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[Any]:
        key = self._input_key(inputs)
        if key is None:
            raise InvalidInputError(f"save_context found no input to store in {sorted(inputs)}")
        user, answer = self._get_input_output({key: inputs[key]}, outputs)
        return [("user", text_of(user)), ("assistant", text_of(answer))]

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
