"""Framework text made storable, for the adapters.

``add_messages`` refuses, by design, text with control characters or lone
surrogates and text over ``MemoryConfig.max_content_bytes``, and refuses a
whole batch for one such message. What a framework hands its memory is often
not the user's typing: a tool's coloured output, a fetched web page, a pasted
document. Refusing it would lose the turn around it (or fail the agent), so
the adapters pass such text through :func:`storable_text` first and say what
they changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_vec._model import validate as v
from memory_vec._model.config import MemoryConfig
from memory_vec._model.errors import InvalidMetadataError
from memory_vec._model.records import MessageInput

__all__ = ["ANNOTATIONS", "callers_metadata", "check_inputs", "metadata_fits", "storable_text"]

# Metadata keys the write path adds itself (engine.message_record), not the caller's.
ANNOTATIONS = ("event_date",)
# What check_content refuses, by the same patterns.
_CONTROL, _SURROGATE = v._CONTROL, v._SURROGATE


def storable_text(text: str, max_bytes: int) -> tuple[str, list[str]]:
    """``text`` without control characters (ANSI colours and the like), lone
    surrogates as U+FFFD, and cut to ``max_bytes`` of UTF-8 with a closing
    note; plus what was changed ([] when nothing)."""
    notes = []
    cleaned = _CONTROL.sub("", text)
    if cleaned != text:
        notes.append("control characters removed")
    fixed = _SURROGATE.sub("\ufffd", cleaned)
    if fixed != cleaned:
        notes.append("lone surrogates replaced")
    data = fixed.encode("utf-8")
    if len(data) > max_bytes:
        tail = f"\n[… cut here: {len(data)} bytes, the first part kept]"
        keep = max(0, max_bytes - len(tail.encode("utf-8")))
        fixed = data[:keep].decode("utf-8", "ignore") + tail
        notes.append(f"cut from {len(data)} to {len(fixed.encode('utf-8'))} bytes")
    return fixed, notes


def callers_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A stored message's metadata as a framework message's extra fields: what
    the caller gave, without memory-vec's own annotations. (Some integrations
    send a message's extra fields to the model API, which refuses unknown ones.)"""
    return {k: value for k, value in metadata.items() if k not in ANNOTATIONS}


def metadata_fits(metadata: dict[str, Any], max_bytes: int) -> bool:
    """Whether ``add_messages`` takes this metadata (size as JSON, depth, value types)."""
    try:
        v.check_metadata(metadata, max_bytes=max_bytes)
    except InvalidMetadataError:
        return False
    return True


def check_inputs(inputs: Sequence[MessageInput], config: MemoryConfig) -> None:
    """Raise the error ``add_messages`` would raise for these messages, writing
    nothing (for a caller that must know before it clears what they replace)."""
    for message in inputs:
        v.check_role(message.role)
        v.check_content(message.content, max_bytes=config.max_content_bytes)
        v.check_timestamp(message.timestamp)
        v.check_metadata(message.metadata, max_bytes=config.max_metadata_bytes)
