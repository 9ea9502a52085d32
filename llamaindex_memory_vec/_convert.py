"""Translation between LlamaIndex chat types and memory-vec's core types.

Nothing here decides what to remember: it maps roles, pulls the text out of
content blocks, and says which blocks had no text to store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    CitableBlock,
    CitationBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)

from memory_vec import ChatMessage as CoreMessage
from memory_vec import MemoryContext, MemoryCore, MemoryRecord, MessageInput
from memory_vec._model.errors import InvalidInputError
from memory_vec._model.render import BLOCK_TAGS, escape_tags
from memory_vec._rules.storable import callers_metadata, metadata_fits, storable_text

__all__ = [
    "Translated",
    "context_text",
    "from_core",
    "from_record",
    "last_user_text",
    "message_text",
    "note_skipped",
    "to_core",
]

log = logging.getLogger("llamaindex_memory_vec")

# LlamaIndex roles that the core does not have map to the nearest core role.
_ROLES: dict[str, str] = {
    MessageRole.SYSTEM.value: "system",
    MessageRole.DEVELOPER.value: "system",
    MessageRole.USER.value: "user",
    MessageRole.ASSISTANT.value: "assistant",
    MessageRole.CHATBOT.value: "assistant",
    MessageRole.MODEL.value: "assistant",
    MessageRole.TOOL.value: "tool",
    MessageRole.FUNCTION.value: "tool",
}


@dataclass
class Translated:
    """Messages ready for ``MemoryCore.add_messages`` and what was left out."""

    inputs: list[MessageInput] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def message_text(message: ChatMessage) -> tuple[str, list[str]]:
    """The text of a message's blocks, and the types of blocks without text.

    Text blocks, and the text inside citable/citation blocks, are kept in
    order; tool calls become a short text line; images, audio, video,
    documents, thinking and cache points carry no storable text and are
    reported instead.
    """
    parts: list[str] = []
    dropped: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, CitableBlock):
            for inner in block.content:
                if isinstance(inner, TextBlock):
                    parts.append(inner.text)
                else:
                    dropped.append(str(getattr(inner, "block_type", type(inner).__name__)))
        elif isinstance(block, CitationBlock) and isinstance(block.cited_content, TextBlock):
            parts.append(block.cited_content.text)
        elif isinstance(block, ToolCallBlock):
            # Kept as text so the call stays next to its result in the history.
            args = json.dumps(block.tool_kwargs, ensure_ascii=False, default=str)
            parts.append(f"[tool call {block.tool_name}({args})]")
        else:
            dropped.append(str(getattr(block, "block_type", type(block).__name__)))
    return "\n".join(p for p in parts if p), dropped


def _json_safe(kwargs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in kwargs.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            dropped.append(str(key))
            continue
        if isinstance(key, str):
            kept[key] = value
        else:
            dropped.append(repr(key))
    return kept, dropped


def _within(metadata: dict[str, Any], max_bytes: int) -> tuple[dict[str, Any], list[str]]:
    """The kwargs, in order, that the core's metadata check takes together; and the keys left out."""
    if metadata_fits(metadata, max_bytes):
        return metadata, []
    kept: dict[str, Any] = {}
    dropped = []
    for key, value in metadata.items():
        if metadata_fits({**kept, key: value}, max_bytes):
            kept[key] = value
        else:
            dropped.append(key)
    return kept, dropped


def to_core(messages: Iterable[ChatMessage], max_bytes: int, max_metadata_bytes: int) -> Translated:
    """LlamaIndex messages to core inputs.

    A message keeps its text (``additional_kwargs`` that are JSON values
    become its metadata); a message without any text is left out; text the
    core would refuse (a tool's control characters, a page over ``max_bytes``)
    is made storable (:func:`memory_vec._rules.storable.storable_text`). Each
    left-out block, kwarg or message, and each change, is named in ``skipped``.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        raise InvalidInputError(f"expected a list of ChatMessage, got {type(messages).__name__}")
    out = Translated()
    for index, message in enumerate(messages):
        if not isinstance(message, ChatMessage):
            raise InvalidInputError(f"message {index} is a {type(message).__name__}, not a ChatMessage")
        role_name = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
        text, dropped_blocks = message_text(message)
        metadata, dropped_kwargs = _json_safe(dict(message.additional_kwargs))
        metadata, too_big = _within(metadata, max_metadata_bytes)
        if too_big:
            out.skipped.append(
                f"message {index}: additional_kwargs {too_big} too large or deep for max_metadata_bytes, not stored"
            )
        where = f"message {index} ({role_name})"
        if dropped_kwargs:
            out.skipped.append(f"{where}: additional_kwargs {dropped_kwargs} are not JSON values, not stored")
        text, changes = storable_text(text, max_bytes)
        if not text.strip():
            kinds = ", ".join(dropped_blocks) or "no content"
            out.skipped.append(f"{where}: skipped, no text to store ({kinds})")
            continue
        if dropped_blocks:
            out.skipped.append(f"{where}: stored its text; blocks without text skipped: {', '.join(dropped_blocks)}")
        if changes:
            out.skipped.append(f"{where}: {'; '.join(changes)}")
        out.inputs.append(MessageInput(_ROLES.get(role_name, "user"), text, None, metadata or None))
    return out


def note_skipped(core: MemoryCore, skipped: Sequence[str], *, wrote: bool) -> None:
    """Say what translation left out: in the log, and on the write's trace.

    When ``wrote`` (the core just stored the rest, in this thread or task),
    each entry is added to that write's trace, ``core.last_trace.events``.
    When nothing was written there is no trace; the log (INFO, logger
    ``llamaindex_memory_vec``) still tells.
    """
    if not skipped:
        return
    log.info("memory-vec: %s", "; ".join(skipped))
    trace = core.last_trace if wrote else None
    if trace is not None and trace.operation == "add_messages":
        for entry in skipped:
            trace.event(entry)


def from_core(message: CoreMessage) -> ChatMessage:
    """A message of the core's recent window as a LlamaIndex message."""
    return ChatMessage(role=message.role, content=message.content, additional_kwargs=callers_metadata(message.metadata))


def from_record(record: MemoryRecord) -> ChatMessage:
    """A stored message record as a LlamaIndex message."""
    return ChatMessage(role=record.role, content=record.text, additional_kwargs=callers_metadata(record.metadata))


def last_user_text(messages: Sequence[ChatMessage] | None) -> str | None:
    """Text of the newest user message that has any, else None."""
    for message in reversed(messages or []):
        if message.role == MessageRole.USER:
            text, _ = message_text(message)
            if text.strip():
                return text
    return None


def context_text(ctx: MemoryContext, *, with_recent: bool = False, tags: Sequence[str] = ()) -> str:
    """The summary (and, when asked, the core's recent turns) plus the
    relevant-memories block, as one prompt text ("" when all are empty).

    All of it is the core's rendering of stored text as data; ``tags`` names
    further delimiters around the text (a ``Memory`` block's own tag), which
    stored text must not close either.
    """
    head = ctx.render_history() if with_recent else ctx.render_summary()
    text = "\n\n".join(p for p in (head, ctx.render()) if p)
    # The core's own tags are escaped inside its blocks already (and delimit them here).
    extra = tuple(t for t in tags if t.lower() not in BLOCK_TAGS)
    return escape_tags(text, extra) if extra else text
