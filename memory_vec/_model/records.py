"""Typed records that flow through memory-vec.

``MemoryRecord`` is what a backend stores; ``RecalledMemory`` is what recall
returns; ``WriteResult`` says what a write did; ``MemoryContext`` is what
``build_context`` hands to a prompt.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone, tzinfo
from typing import Any

from memory_vec._model.errors import InvalidInputError
from memory_vec._model.render import clean_text, render_summary, render_turn
from memory_vec._model.trace import TurnTrace

__all__ = [
    "KINDS",
    "MEMORY_KINDS",
    "ROLES",
    "VISIBILITIES",
    "ChatMessage",
    "ForgetReceipt",
    "MemoryContext",
    "MemoryKind",
    "MemoryRecord",
    "MessageInput",
    "RecalledMemory",
    "WriteEvent",
    "WriteResult",
    "to_datetime",
]

ROLES = ("user", "assistant", "system", "tool")
# item: a framework store's record (the LangGraph store); the core never recalls or maintains it.
KINDS = ("message", "fact", "summary", "item")
MEMORY_KINDS = ("message", "fact", "summary")
# private: only the owner sees it; agent: every user of the same agent_id;
# global: every user. Shared records are only ever written explicitly.
VISIBILITIES = ("private", "agent", "global")


class MemoryKind(str, enum.Enum):
    MESSAGE = "message"
    FACT = "fact"
    SUMMARY = "summary"


def to_datetime(epoch: float) -> datetime:
    """Epoch seconds to a timezone-aware UTC datetime."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def in_zone(epoch: float, zone: tzinfo) -> datetime:
    """Epoch seconds in ``zone`` (whose calendar days dates count in); in UTC at the
    ends of the calendar, where the zone's offset would leave it."""
    try:
        return datetime.fromtimestamp(epoch, zone)
    except (OverflowError, ValueError, OSError):
        return to_datetime(epoch)


@dataclass
class MemoryRecord:
    """One stored memory: a message, an extracted fact or a summary.

    ``text`` is always the original text; summaries are separate records of
    kind ``summary`` and never replace a message. Timestamps are epoch
    seconds (UTC) so that every backend can store and range-filter them.
    """

    id: str
    text: str
    role: str
    user_id: str
    session_id: str
    timestamp: float
    kind: str = "message"
    seq: int = 0
    agent_id: str | None = None
    importance: float = 0.5
    metadata: dict[str, Any] = field(default_factory=dict)
    # Validity: a superseded record keeps its text as history but is not
    # served as current (valid_to is when it stopped being true).
    valid_to: float | None = None
    superseded_by: str | None = None
    visibility: str = "private"
    subject: str | None = None
    source_ids: list[str] = field(default_factory=list)
    pinned: bool = False
    expire_at: float | None = None
    archived: bool = False
    recall_count: int = 0
    last_recalled_at: float | None = None

    @property
    def is_current(self) -> bool:
        return self.valid_to is None and not self.archived

    @property
    def datetime(self) -> datetime:
        return to_datetime(self.timestamp)

    def copy(self, **changes: Any) -> MemoryRecord:
        return replace(self, **changes)


@dataclass(frozen=True)
class ChatMessage:
    """A message of the recent window (working state)."""

    role: str
    content: str
    timestamp: datetime
    seq: int = 0
    id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.content


@dataclass
class RecalledMemory:
    """One recall result. ``score`` is in [0, 1], higher is better.

    ``components`` shows how the score was made (similarity, recency,
    importance, bm25, ...); ``neighbors`` holds turns around a hit as
    context, which are not hits themselves.
    """

    id: str
    text: str
    role: str
    score: float
    timestamp: datetime
    metadata: dict[str, Any]
    session_id: str
    kind: str
    user_id: str = ""
    seq: int = 0
    importance: float = 0.5
    similarity: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    neighbors: list[RecalledMemory] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)  # a fact: the message(s) it was extracted from

    def fields(self) -> dict[str, Any]:
        """The memory's own metadata, then its fields (they win over keys of the same
        name): what a framework's document or node carries as metadata."""
        return {
            **self.metadata,
            "id": self.id,
            "role": self.role,
            "kind": self.kind,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "timestamp": self.timestamp.isoformat(),
            "seq": self.seq,
            "importance": self.importance,
            "similarity": self.similarity,
        }

    @classmethod
    def from_record(cls, record: MemoryRecord, *, score: float, similarity: float = 0.0) -> RecalledMemory:
        return cls(
            id=record.id,
            text=record.text,
            role=record.role,
            score=score,
            timestamp=record.datetime,
            metadata=dict(record.metadata),
            session_id=record.session_id,
            kind=record.kind,
            user_id=record.user_id,
            seq=record.seq,
            importance=record.importance,
            similarity=similarity,
            source_ids=list(record.source_ids),
        )


class WriteEvent(str, enum.Enum):
    ADDED = "added"
    UPDATED = "updated"
    SKIPPED_DUPLICATE = "skipped_duplicate"
    SKIPPED_LOW_VALUE = "skipped_low_value"


@dataclass
class WriteResult:
    """What one write did.

    ``id`` is the stored message's id (a message is always stored);
    ``fact_ids`` the facts written alongside it; ``superseded_ids`` the
    records it replaced in recall.
    """

    event: WriteEvent
    id: str
    seq: int = 0
    fact_ids: list[str] = field(default_factory=list)
    superseded_ids: list[str] = field(default_factory=list)
    duplicate_of: str | None = None
    summarized: bool = False
    pending: bool = False  # True while a background writer holds it
    reason: str = ""


@dataclass(frozen=True)
class DeleteResult:
    """What ``delete`` did. True when something was deleted.

    ``deleted_ids``: the memory and the facts derived from it; ``restored_ids``:
    what it had superseded, current again; ``relinked_ids``: when a superseded
    memory was deleted (the middle of a chain), its predecessors, now superseded
    by its successor.
    """

    deleted_ids: list[str]
    restored_ids: list[str] = field(default_factory=list)
    relinked_ids: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.deleted_ids)


@dataclass(frozen=True)
class RecheckedSupersede:
    """A stored supersede the statement model would not make today (see ``recheck_superseded``)."""

    record_id: str
    superseded_by: str
    reason: str
    text: str
    by_text: str


@dataclass
class MemoryContext:
    """The memory block for one model call, each slot within its budget."""

    summary: str
    recent: list[ChatMessage]
    relevant: list[RecalledMemory]
    tokens: dict[str, int]
    relevant_text: str = ""
    degraded: bool = False
    #: How this context was made (recalled ids and scores, timings, tokens).
    trace: TurnTrace | None = None

    def render(self) -> str:
        """The relevant-memories block as prompt text ("" when empty).

        A header saying the entries are data, then ``<memories>``, one entry
        per memory (``- [2024-05-08 · speaker] text``, further lines indented
        under it), then ``</memories>``; stored text cannot add an entry or
        close the block.
        """
        return self.relevant_text

    def render_summary(self) -> str:
        """The summary as a block of data: a header, then the summary indented
        between ``<summary>`` and ``</summary>`` ("" when there is none)."""
        return render_summary(self.summary)

    def render_history(self) -> str:
        """Summary and recent turns as plain text, oldest first.

        Each turn is ``role: text`` with its further lines indented, so no
        stored line reads as a turn of another role. Where the framework
        takes messages, use :meth:`history_messages` instead.
        """
        parts = [render_summary(self.summary)] if self.summary.strip() else []
        parts.extend(render_turn(m.role, m.content) for m in self.recent)
        return "\n".join(parts)

    def history_messages(self) -> list[ChatMessage]:
        """The recent turns as messages (role and content), oldest first.

        Content keeps its lines (code blocks matter) without control
        characters; the summary is :meth:`render_summary`.
        """
        return [replace(m, content=clean_text(m.content)) for m in self.recent]


@dataclass
class ForgetReceipt:
    """What ``forget`` removed, and a follow-up scan's count (0 when clean)."""

    user_id: str
    session_id: str | None
    records_deleted: int
    sessions_cleared: int
    remaining_after_scan: int
    #: The store's files hold no copy of the forgotten records (False on a
    #: server, or a backend without purge: see ``disk_notes``).
    disk_purged: bool = True
    #: What the purge did, and what remains with how to remove it.
    disk_notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class MessageInput:
    """One message for :meth:`MemoryCore.add_messages`."""

    role: str
    content: str
    timestamp: Any = None
    metadata: Mapping[str, Any] | None = None


MessageLike = MessageInput | Mapping[str, Any] | tuple[str, str]


def coerce_messages(messages: Iterable[MessageLike]) -> list[MessageInput]:
    """``add_messages``' argument as messages (a list, not one message or a string)."""
    if isinstance(messages, (str, bytes, Mapping, MessageInput)) or not isinstance(messages, Iterable):
        raise InvalidInputError(f"messages must be a list of messages, got {type(messages).__name__}")
    return [coerce_message(m) for m in messages]


def coerce_message(m: MessageLike) -> MessageInput:
    if isinstance(m, MessageInput):
        return m
    if isinstance(m, tuple) and len(m) == 2:
        return MessageInput(m[0], m[1])
    if isinstance(m, Mapping):
        unknown = set(m) - {"role", "content", "timestamp", "metadata"}
        if unknown or "role" not in m or "content" not in m:
            raise InvalidInputError(
                f"a message needs 'role' and 'content' (optional 'timestamp', 'metadata'); got keys {sorted(m)}"
            )
        return MessageInput(m["role"], m["content"], m.get("timestamp"), m.get("metadata"))
    raise InvalidInputError(f"a message must be a MessageInput, dict or (role, content); got {type(m).__name__}")
