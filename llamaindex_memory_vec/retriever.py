"""``MemoryRetriever``: a LlamaIndex ``BaseRetriever`` over memory-vec's recall."""

from __future__ import annotations

from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from memory_vec import MemoryCore, RecalledMemory
from memory_vec._model import validate as v
from memory_vec._model.errors import InvalidInputError

__all__ = ["MemoryRetriever", "memory_node"]

# What the LLM sees of a node besides its text: who said it and when.
_SHOWN_TO_LLM = ("role", "timestamp")


def memory_node(hit: RecalledMemory) -> NodeWithScore:
    """One recalled memory as a ``NodeWithScore``: the memory's text, its score,
    and its fields in ``metadata`` (the message's own metadata too; the memory's
    fields win over keys of the same name). Only ``role`` and ``timestamp`` are
    shown to the LLM and the embedder with the text."""
    metadata = hit.fields()
    hidden = [key for key in metadata if key not in _SHOWN_TO_LLM]
    node = TextNode(
        id_=hit.id,
        text=hit.text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
    )
    return NodeWithScore(node=node, score=hit.score)


class MemoryRetriever(BaseRetriever):
    """The memories memory-vec recalls for a query, as LlamaIndex ``NodeWithScore`` s.

    Scoped to one user, named when the retriever is built (no default user):
    it never returns another user's private memories. Use it with a query
    engine (``RetrieverQueryEngine.from_args(retriever, llm=llm)``) or as a
    tool's retriever. Get one from a memory with ``memory.as_retriever()``
    (that memory's user), or build it on a core::

        retriever = MemoryRetriever(core, user_id="alice", k=4)
        nodes = retriever.retrieve("what is my budget?")

    Each node's score is in [0, 1], best first; ``node.metadata`` holds ``id``,
    ``role``, ``kind``, ``session_id``, ``timestamp`` (ISO 8601) and the
    message's own metadata (e.g. ``modality`` of a fact).

    Args:
        core: the :class:`~memory_vec.MemoryCore` to recall from.
        user_id: the user whose memories are read (required).
        k: how many memories; default the core's ``recall_k``.
        filters: equality conditions on the messages' metadata.
        scope: ``"user"`` (all the user's sessions, default) or ``"session"``
            (only ``session_id``, required then).
        session_id: the session for ``scope="session"``.
        include_shared: also recall agent/global shared memories.
        callback_manager: LlamaIndex callbacks.
    """

    def __init__(
        self,
        core: MemoryCore,
        *,
        user_id: str,
        k: int | None = None,
        filters: dict[str, Any] | None = None,
        scope: Literal["user", "session"] = "user",
        session_id: str | None = None,
        include_shared: bool | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if not isinstance(core, MemoryCore):
            raise InvalidInputError(f"core must be a memory_vec.MemoryCore, got {type(core).__name__}")
        if user_id is None:
            raise InvalidInputError(
                "MemoryRetriever needs the user whose memories it reads: user_id=... "
                "(or memory.as_retriever() for the memory's user)"
            )
        if scope not in ("user", "session"):
            raise InvalidInputError(f"scope must be 'user' or 'session', got {scope!r}")
        if scope == "session" and session_id is None:
            raise InvalidInputError("MemoryRetriever(scope='session') needs session_id=...")
        self.core = core
        self.user_id = v.check_id(user_id, "user_id")
        self.session_id = None if session_id is None else v.check_id(session_id, "session_id")
        self.k = None if k is None else v.check_k(k)
        self.filters = None if filters is None else v.check_filters(filters)
        self.scope = scope
        self.include_shared = include_shared
        super().__init__(callback_manager=callback_manager)

    def _recall_args(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "scope": self.scope,
            "session_id": self.session_id,
            "filters": self.filters,
            "user_id": self.user_id,
            "include_shared": self.include_shared,
        }

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [memory_node(hit) for hit in self.core.recall(query_bundle.query_str, **self._recall_args())]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self.core.arecall(query_bundle.query_str, **self._recall_args())
        return [memory_node(hit) for hit in hits]


def retriever_of(core: MemoryCore, **kwargs: Any) -> MemoryRetriever:
    """The retriever ``as_retriever()`` gives on the memory and the block: the core's
    user (all of its sessions) unless ``user_id`` names another; ``scope="session"``
    reads the core's session unless ``session_id`` names another."""
    kwargs.setdefault("user_id", core.config.user_id)
    if kwargs.get("scope") == "session":
        kwargs.setdefault("session_id", core.config.session_id)
    return MemoryRetriever(core, **kwargs)
