"""``VectorSummaryMiddleware``: memory-vec for ``langchain.agents.create_agent``.

This is the path forward: ``BaseChatMemory`` (and so
:class:`~langchain_memory_vec.VectorSummaryMemory`) goes away in LangChain 2.0.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from langchain_memory_vec._convert import to_core, to_langchain
from langchain_memory_vec._llm import as_prompt_callable
from langchain_memory_vec._user import MissingUserIdError, run_user
from langchain_memory_vec.retriever import MemoryRetriever
from memory_vec import MemoryConfig, MemoryContext, MemoryCore, MessageInput
from memory_vec._model.errors import InvalidInputError
from memory_vec.embeddings.models import LangChainEmbedder

__all__ = ["VectorSummaryMiddleware"]

Scope = tuple[str, str | None]


class VectorSummaryMiddleware(AgentMiddleware):
    """Rolling summary and recalled memories for ``create_agent``.

    On every model call (``wrap_model_call``) the summary and the memories
    recalled for the current user message are added after the system message's
    own text, each as a delimited block of data (``<summary>``, ``<memories>``)
    headed by a note that it is not instructions. The turns before the current
    one are replaced by the core's recent turns, as messages, which fit
    ``config.max_token_limit``. The current turn (the user
    message and any tool calls with their results) is passed whole, so a
    tool call is never separated from its result. Nothing of this is written
    into the thread's state.

    Once per completed turn (``after_agent``), the user message and the
    final answer are stored; old turns then fold into the summary.

    Scope: the session is the thread id (``config["configurable"]["thread_id"]``,
    else the config's ``session_id``). The user is ``user_id`` from the runtime
    context (``agent.invoke(..., context={"user_id": ...})``, a dict or an
    object with that attribute) or from ``config["configurable"]["user_id"]``,
    and is required: a run without one raises
    :class:`~langchain_memory_vec.MissingUserIdError` before anything is read
    or stored (users are never pooled under the config's default user).

    Example::

        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver
        from memory_vec import MemoryConfig
        from langchain_memory_vec import VectorSummaryMiddleware

        agent = create_agent(
            model, tools=[...], checkpointer=InMemorySaver(),
            # llm= writes the summaries (a small chat model will do; omit it for the offline
            # summarizer); a scripted test model here would spend its replies on them
            middleware=[VectorSummaryMiddleware(config=MemoryConfig(max_token_limit=1500), llm=summary_model)],
        )
        agent.invoke(
            {"messages": [{"role": "user", "content": "My budget is 5000."}]},
            {"configurable": {"thread_id": "t1", "user_id": "alice"}},
        )

    Async: ``await agent.ainvoke(...)`` / ``agent.astream(...)`` use the
    async hooks, which never block the event loop.

    Args:
        config: memory-vec settings; default ``MemoryConfig()``.
        llm: optional LangChain LLM or chat model for summaries; its calls
            never appear in the agent's stream or callbacks.
        embeddings: optional LangChain ``Embeddings``.
        core: a ready :class:`~memory_vec.MemoryCore` instead of
            ``config`` / ``llm`` / ``embeddings``.
        summary_callbacks: callback handlers for the summary calls only.
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        llm: BaseLanguageModel[Any] | None = None,
        *,
        embeddings: Embeddings | None = None,
        core: MemoryCore | None = None,
        summary_callbacks: Sequence[BaseCallbackHandler] | None = None,
    ) -> None:
        super().__init__()
        if core is not None and (config is not None or llm is not None or embeddings is not None):
            raise InvalidInputError("VectorSummaryMiddleware: pass either core=... or config/llm/embeddings, not both")
        self.core = core or MemoryCore(
            config or MemoryConfig(),
            embedder=LangChainEmbedder(embeddings) if embeddings is not None else None,
            llm=as_prompt_callable(llm, callbacks=summary_callbacks) if llm is not None else None,
        )
        self.tools = []

    # ------------------------------------------------------------------ scope
    @staticmethod
    def _scope(runtime: Runtime[Any] | None) -> Scope:
        """The run's user (required) and thread; raises before anything is read or stored."""
        try:
            configurable: Mapping[str, Any] = get_config().get("configurable", {})
        except RuntimeError:  # called outside a graph run
            configurable = {}
        user = run_user(configurable, getattr(runtime, "context", None))
        if user is None:
            raise MissingUserIdError(
                "VectorSummaryMiddleware needs the user's id on every run (it will not pool users under a "
                "default one): pass it as the runtime context, agent.invoke(..., context={'user_id': 'alice'}) "
                "(a dict or an object with a user_id attribute), or as config['configurable']['user_id']; "
                "nothing was read or stored"
            )
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None) or configurable.get("thread_id")
        return user, None if thread is None else str(thread)

    def as_retriever(self, **fields: Any) -> MemoryRetriever:
        """A LangChain retriever over this middleware's memories (for LCEL chains and tools).

        It reads the user of each run (``config["configurable"]["user_id"]``) unless
        ``user_id=`` is given, and refuses a run without one, as the middleware does.

        Args:
            **fields: :class:`~langchain_memory_vec.MemoryRetriever` settings
                (``user_id``, ``k``, ``filters``, ``scope``, ``include_shared``).
        """
        return MemoryRetriever(core=self.core, **fields)

    # ------------------------------------------------------------------ model calls
    @staticmethod
    def _current_turn_start(messages: Sequence[BaseMessage]) -> int | None:
        """The first of the user messages the current turn began with (a document, then a question)."""
        last = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)), None)
        while last is not None and last > 0 and isinstance(messages[last - 1], HumanMessage):
            last -= 1
        return last

    @staticmethod
    def _turn_users(messages: Sequence[BaseMessage], start: int) -> list[BaseMessage]:
        end = start
        while end < len(messages) and isinstance(messages[end], HumanMessage):
            end += 1
        return [m for m in messages[start:end] if m.text.strip()]

    def _query(self, request: ModelRequest) -> tuple[int, str | None]:
        start = self._current_turn_start(request.messages)
        if start is None:
            return 0, None
        return start, "\n\n".join(m.text for m in self._turn_users(request.messages, start)) or None

    @staticmethod
    def _with_memory(request: ModelRequest, ctx: MemoryContext, start: int) -> ModelRequest:
        # Both parts are rendered as data: delimited, headed by a note that
        # they are not instructions, so recalled text never reads as the app's own.
        block = "\n\n".join(p for p in (ctx.render_summary(), ctx.render()) if p)
        system = request.system_message
        if block:
            if system is None:
                system = SystemMessage(content=block)
            elif isinstance(system.content, str):
                system = SystemMessage(content=f"{system.content}\n\n{block}")
            else:  # content blocks (e.g. cache control): keep them, add ours
                system = SystemMessage(content=[*system.content, {"type": "text", "text": block}])
        messages: list[AnyMessage] = list(request.messages)
        if ctx.summary or ctx.recent:
            current = messages[start:]
            messages = VectorSummaryMiddleware._earlier_turns(messages[:start], current, ctx) + current
        return request.override(system_message=system, messages=messages)

    @staticmethod
    def _earlier_turns(earlier: list[AnyMessage], current: list[AnyMessage], ctx: MemoryContext) -> list[AnyMessage]:
        """The core's budgeted view of the thread's earlier turns, plus what the thread
        has that the core cannot give: turns after the newest one the core stored
        (a direct tool result, a failed model call) and, when the view starts at the
        session's first stored message (seq 1: nothing folded, nothing cut for the
        budget), turns older than it (a thread that predates the middleware).
        The current turn is the thread's own (a re-run sends it once)."""
        now = {m.id for m in current if m.id is not None}
        view = [m for m in ctx.history_messages() if m.metadata.get("lc_id") not in now]
        held = {m.metadata.get("lc_id") for m in view} - {None}
        at = [i for i, m in enumerate(earlier) if m.id is not None and m.id in held]
        core_view: list[AnyMessage] = [to_langchain(m) for m in view]
        if not at:  # the thread names none of them (ids not kept): the core's view as it is
            return core_view
        older = earlier[: at[0]] if view and view[0].seq == 1 and not ctx.summary else []
        return [*older, *core_view, *earlier[at[-1] + 1 :]]

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        """Add the summary and recalled memories to this model call only."""
        user, session = self._scope(request.runtime)
        start, query = self._query(request)
        ctx = self.core.build_context(query, user_id=user, session_id=session)
        return handler(self._with_memory(request, ctx, start))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async :meth:`wrap_model_call`."""
        user, session = self._scope(request.runtime)
        start, query = self._query(request)
        ctx = await self.core.abuild_context(query, user_id=user, session_id=session)
        return await handler(self._with_memory(request, ctx, start))

    # ------------------------------------------------------------------ writes
    def _completed_turn(self, state: AgentState, scope: Scope) -> list[MessageInput] | None:
        messages: list[BaseMessage] = list(state.get("messages", []))
        start = self._current_turn_start(messages)
        if start is None or not messages:
            return None
        final = messages[-1]
        structured = state.get("structured_response")
        if structured is not None and not (isinstance(final, AIMessage) and final.text.strip()):
            # response_format=...: the structured response is the turn's answer (kept by the id of
            # the message that ended the turn, so a re-run does not store it twice)
            final = AIMessage(content=_as_text(structured), id=final.id)
        if not isinstance(final, AIMessage) or final.tool_calls or not final.text.strip():
            return None  # no final answer (interrupted)
        users = self._turn_users(messages, start)
        if not users:
            return None
        stored = self.core.working_state(user_id=scope[0], session_id=scope[1]).messages
        stored_ids = {m.metadata.get("lc_id") for m in stored} - {None}
        if final.id and final.id in stored_ids:
            return None  # this turn is already stored (a re-run of a finished thread)
        # A re-run with no new message answers the stored question again: only the answer is new.
        users = [m for m in users if not (m.id and m.id in stored_ids)]
        limits = self.core.config.max_content_bytes, self.core.config.max_metadata_bytes
        return [i for i in (to_core(m, *limits) for m in [*users, final]) if i.content.strip()] or None

    def after_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store the user message and the final answer of the completed turn."""
        user, session = scope = self._scope(runtime)
        turn = self._completed_turn(state, scope)
        if turn:
            self.core.add_messages(turn, user_id=user, session_id=session)
        return None

    async def aafter_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        user, session = scope = self._scope(runtime)
        # The working-state read may hit SQLite/Redis: keep it off the event loop.
        turn = await asyncio.to_thread(self._completed_turn, state, scope)
        if turn:
            await self.core.aadd_messages(turn, user_id=user, session_id=session)
        return None


def _as_text(structured: Any) -> str:
    """A structured response as the JSON text memory-vec stores for it."""
    dump = getattr(structured, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    if dataclasses.is_dataclass(structured) and not isinstance(structured, type):
        structured = dataclasses.asdict(structured)
    return json.dumps(structured, ensure_ascii=False, default=str)
