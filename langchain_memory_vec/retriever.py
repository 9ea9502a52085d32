"""``MemoryRetriever``: a LangChain ``BaseRetriever`` over memory-vec's recall."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, ensure_config
from langgraph.runtime import get_runtime
from pydantic import ConfigDict, field_validator

from langchain_memory_vec._user import WHERE_TO_PASS, MissingUserIdError, run_user
from memory_vec import MemoryCore, RecalledMemory
from memory_vec._model import validate as v
from memory_vec._model.errors import InvalidInputError
from memory_vec._model.render import clean_text, escape_tags, hang, safe_label
from memory_vec._rules.context import RELEVANT_CLOSE, RELEVANT_HEADER, RELEVANT_OPEN

__all__ = ["MemoryRetriever", "format_memories", "memory_document"]


def memory_document(hit: RecalledMemory) -> Document:
    """One recalled memory as a ``Document``: its text, and in ``metadata`` its
    score and fields (the message's own metadata too; the memory's fields win
    over keys of the same name)."""
    metadata: dict[str, Any] = {**hit.fields(), "score": hit.score, "score_components": dict(hit.components)}
    if hit.source_ids:
        metadata["source_ids"] = list(hit.source_ids)
    if hit.neighbors:  # turns around the hit: context for it, not hits themselves
        metadata["neighbors"] = [
            {"id": n.id, "role": n.role, "text": n.text, "timestamp": n.timestamp.isoformat()} for n in hit.neighbors
        ]
    return Document(page_content=hit.text, metadata=metadata, id=hit.id)


def format_memories(documents: Sequence[Document]) -> str:
    """Recalled documents as the prompt block the core renders: a header saying
    they are data, then ``<memories>``, one ``- [date · role] text`` entry each
    (further lines indented behind ``|``), then ``</memories>``; "" for none.

    Stored text cannot add an entry or close the block, so a memory never
    reads as the app's instructions. Use it after the retriever in LCEL:
    ``retriever | format_memories``.
    """
    entries = []
    for doc in documents:
        meta = doc.metadata
        day = str(meta.get("timestamp", ""))[:10] or "undated"
        who = safe_label(meta.get("speaker"), fallback=safe_label(meta.get("role"), "unknown"))
        entries.append(
            hang(f"- [{safe_label(day)} · {who}] ", escape_tags(clean_text(doc.page_content)).strip(), "    | ")
        )
    return "\n".join([RELEVANT_HEADER, RELEVANT_OPEN, *entries, RELEVANT_CLOSE]) if entries else ""


def _graph_context() -> Any:
    """The runtime context of the LangGraph run this call is part of (a tool of
    ``create_agent`` invoked with ``context={"user_id": ...}``); None outside one."""
    try:
        return getattr(get_runtime(), "context", None)
    except (RuntimeError, KeyError):  # not inside a graph run
        return None


class MemoryRetriever(BaseRetriever):
    """The memories memory-vec recalls for a query, as LangChain ``Document`` s.

    Each document's ``page_content`` is the memory's text; its ``metadata``
    holds ``score`` (in [0, 1], best first), ``id``, ``role``, ``kind``,
    ``session_id``, ``user_id``, ``timestamp`` (ISO 8601), the score's
    components and the message's own metadata (e.g. ``modality`` of a fact).

    **One user per call, always named.** The user is ``user_id`` when the
    retriever is built with one, else the run's: ``user_id`` of the LangGraph
    runtime context (a tool of ``create_agent`` run with ``context=...``) or
    ``config["configurable"]["user_id"]`` (so one retriever serves every user
    of a chain or an agent); with none,
    :class:`MissingUserIdError` is raised, and a run that names another user
    than the one the retriever is bound to is refused: no user ever reads
    another user's memories, and nobody is pooled under a default user.

    Get one from a memory: ``VectorSummaryMemory.as_retriever()`` (bound to
    that memory's user) or ``VectorSummaryMiddleware.as_retriever()`` (the
    user of each run), or build it on a core::

        retriever = MemoryRetriever(core=core, k=4)
        docs = retriever.invoke("what is my budget?", {"configurable": {"user_id": "alice"}})

    Args:
        core: the :class:`~memory_vec.MemoryCore` to recall from.
        user_id: the user whose memories are read; None reads the run's.
        k: how many memories; default the core's ``recall_k``.
        filters: equality conditions on the messages' metadata.
        scope: ``"user"`` (all the user's sessions, default) or ``"session"``
            (``session_id``, else ``config["configurable"]["session_id"]``).
        session_id: the session for ``scope="session"``.
        include_shared: also recall agent/global shared memories.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    core: MemoryCore
    user_id: str | None = None
    k: int | None = None
    filters: dict[str, Any] | None = None
    scope: Literal["user", "session"] = "user"
    session_id: str | None = None
    include_shared: bool | None = None

    @field_validator("user_id", "session_id")
    @classmethod
    def _check_id(cls, value: str | None, info: Any) -> str | None:
        return None if value is None else v.check_id(value, info.field_name)

    @field_validator("k")
    @classmethod
    def _check_k(cls, value: int | None) -> int | None:
        return None if value is None else v.check_k(value)

    @field_validator("filters", mode="before")
    @classmethod
    def _check_filters(cls, value: Any) -> dict[str, Any] | None:
        return None if value is None else v.check_filters(value)

    # ------------------------------------------------------------------ scope of a run
    def _scope_of(self, configurable: Mapping[str, Any]) -> tuple[str, str | None]:
        """The user (and, for ``scope="session"``, the session) a run reads."""
        from_run = run_user(configurable, _graph_context())
        if self.user_id is not None and from_run is not None and from_run != self.user_id:
            raise InvalidInputError(
                f"this retriever reads user {self.user_id!r}'s memories, but the run names user {from_run!r}: "
                "build the retriever without user_id to serve the user of each run"
            )
        user = self.user_id or from_run
        if user is None:
            raise MissingUserIdError(
                f"MemoryRetriever needs the user whose memories it reads: {WHERE_TO_PASS}, "
                "or build it with user_id=...; nothing was read"
            )
        if self.scope == "user":
            return user, None
        session = self.session_id or configurable.get("session_id") or None
        if session is None:
            raise InvalidInputError(
                "MemoryRetriever(scope='session') needs a session: session_id=... or "
                "config['configurable']['session_id']"
            )
        return user, str(session)

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        config = ensure_config(config)
        user, session = self._scope_of(config.get("configurable", {}))
        return super().invoke(input, config, user_id=user, session_id=session, **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        config = ensure_config(config)
        user, session = self._scope_of(config.get("configurable", {}))
        return await super().ainvoke(input, config, user_id=user, session_id=session, **kwargs)

    # ------------------------------------------------------------------ recall
    # ``invoke`` passes the run's scope; a direct call without it gets the retriever's own.
    def _recall_args(self, user_id: str | None, session_id: str | None) -> dict[str, Any]:
        if user_id is None:
            user_id, session_id = self._scope_of({})
        return {
            "k": self.k,
            "scope": self.scope,
            "session_id": session_id,
            "filters": self.filters,
            "user_id": user_id,
            "include_shared": self.include_shared,
        }

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Document]:
        hits = self.core.recall(query, **self._recall_args(user_id, session_id))
        return [memory_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Document]:
        hits = await self.core.arecall(query, **self._recall_args(user_id, session_id))
        return [memory_document(hit) for hit in hits]
