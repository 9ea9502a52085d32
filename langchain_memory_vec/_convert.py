"""Translation between LangChain messages and the core's records."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage
from langchain_core.messages import ChatMessage as LCChatMessage

from memory_vec import ChatMessage, MemoryContext, MessageInput
from memory_vec._model.errors import InvalidInputError, InvalidRoleError
from memory_vec._rules.storable import metadata_fits, storable_text
from memory_vec.state import StateMessage

log = logging.getLogger("langchain_memory_vec")

__all__ = ["context_messages", "history_text", "text_of", "to_core", "to_langchain"]

_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_CHAT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
}


def text_of(value: Any) -> str:
    """The text of a chain input/output: a string, or a message's text."""
    if isinstance(value, BaseMessage):
        return value.text
    if isinstance(value, str):
        return value
    raise InvalidInputError(
        f"memory-vec stores text; got {type(value).__name__}. Pass a string or a message "
        "(set input_key/output_key to the key that holds it)."
    )


def to_core(message: BaseMessage, max_bytes: int, max_metadata_bytes: int) -> MessageInput:
    """A LangChain message as a core :class:`MessageInput`.

    An AI message's tool calls go into its metadata (and are its text when it
    has none, as OpenAI-style calls do), so the history gives them back next
    to their results; text the core would refuse (a tool's control
    characters, a page over ``max_bytes``) is made storable first, and tool
    arguments that would make the metadata too large or deep are left out.
    """
    if not isinstance(message, BaseMessage):
        raise InvalidInputError(f"expected a LangChain message, got {type(message).__name__}")
    if isinstance(message, LCChatMessage):
        role = _CHAT_ROLES.get(message.role)
        if role is None:
            raise InvalidRoleError(
                f"ChatMessage role {message.role!r} has no memory-vec role; use one of {sorted(_CHAT_ROLES)}"
            )
    else:
        role = _ROLE_OF_TYPE.get(message.type)
        if role is None:
            raise InvalidRoleError(f"cannot store a {type(message).__name__} (type {message.type!r})")
    metadata: dict[str, Any] = {}
    text = str(message.text)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{"name": c["name"], "args": c["args"], "id": c.get("id")} for c in message.tool_calls]
        metadata["tool_calls"] = json.loads(json.dumps(calls, ensure_ascii=False, default=str))
        if not text.strip():
            metadata["tool_calls_only"] = True
            text = "\n".join(
                f"[tool call {c['name']}({json.dumps(c['args'], ensure_ascii=False, default=str)})]" for c in calls
            )
    if isinstance(message, ToolMessage):
        metadata["tool_call_id"] = message.tool_call_id
    if message.id:
        metadata["lc_id"] = message.id
    if "tool_calls" in metadata and not metadata_fits(metadata, max_metadata_bytes):
        # the core refuses metadata over its size or depth: huge or deep arguments are not kept
        metadata["tool_calls"] = [{"name": c["name"], "args": {}, "id": c["id"]} for c in metadata["tool_calls"]]
        metadata["tool_call_args_dropped"] = True
        if not metadata_fits(metadata, max_metadata_bytes):
            del metadata["tool_calls"]
    text, changes = storable_text(text, max_bytes)
    if changes:
        log.info("memory-vec: a %s message: %s", role, "; ".join(changes))
    return MessageInput(role, text, metadata=metadata or None)


def _tool_calls(metadata: dict[str, Any]) -> list[ToolCall]:
    calls = metadata.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [
        ToolCall(name=c["name"], args=c["args"], id=c.get("id"))
        for c in calls
        if isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("args"), dict)
    ]


def to_langchain(message: ChatMessage | StateMessage) -> AIMessage | HumanMessage | SystemMessage | ToolMessage:
    """A core message (recent turn or working-state entry) as a LangChain message."""
    if message.role == "user":
        return HumanMessage(content=message.content)
    if message.role == "assistant":
        calls = _tool_calls(message.metadata)
        content = "" if calls and message.metadata.get("tool_calls_only") else message.content
        return AIMessage(content=content, tool_calls=calls)
    if message.role == "tool":
        return ToolMessage(content=message.content, tool_call_id=str(message.metadata.get("tool_call_id", "")))
    return SystemMessage(content=message.content)


def context_messages(ctx: MemoryContext, *, fold_relevant: bool) -> list[BaseMessage]:
    """The summary (a system message) and the recent turns as messages.

    Each turn stays its own message, so no stored line reads as a turn of
    another role. With ``fold_relevant`` the relevant-memories block (data,
    delimited) joins the system message.
    """
    system_parts = [ctx.render() if fold_relevant else "", ctx.render_summary()]
    system = "\n\n".join(p for p in system_parts if p)
    messages: list[BaseMessage] = [SystemMessage(content=system)] if system else []
    messages.extend(to_langchain(m) for m in ctx.history_messages())
    return messages


def history_text(ctx: MemoryContext, *, fold_relevant: bool) -> str:
    """Summary and recent turns as text (the core's rendering)."""
    parts: Iterable[str] = (ctx.render() if fold_relevant else "", ctx.render_history())
    return "\n\n".join(p for p in parts if p)
