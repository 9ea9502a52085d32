"""A session's working state as data: its summary, its recent messages, its counters.

Below the state stores (:mod:`memory_vec.state`) that persist it and the rules
(summary folds, context assembly) that read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["NewMessage", "StateMessage", "WorkingState"]


@dataclass(frozen=True)
class NewMessage:
    """A message to append; the store assigns its sequence number."""

    id: str
    role: str
    content: str
    timestamp: float
    tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StateMessage:
    seq: int
    id: str
    role: str
    content: str
    timestamp: float
    tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class WorkingState:
    user_id: str
    session_id: str
    summary: str = ""
    summary_tokens: int = 0
    messages: list[StateMessage] = field(default_factory=list)
    next_seq: int = 1
    folded_through: int = 0  # highest sequence number folded into the summary
    updated_at: float = 0.0

    @property
    def recent_tokens(self) -> int:
        return sum(m.tokens for m in self.messages)
