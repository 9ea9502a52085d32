"""Working state: the running summary and the recent (not yet folded)
messages of one session, with its sequence counter.

Stores make three operations atomic, which is what lets several threads or
processes share a session without losing or double-folding messages:

* ``append``: assign strictly increasing sequence numbers and add messages;
* ``commit_fold``: replace the summary and drop folded messages only if
  nobody folded since the fold was planned (compare-and-set on
  ``folded_through``);
* ``replace`` / ``clear``: whole-session writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["StateMessage", "WorkingState", "StateStore", "NewMessage"]


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


@runtime_checkable
class StateStore(Protocol):
    name: str

    def load(self, user_id: str, session_id: str) -> WorkingState: ...

    def append(self, user_id: str, session_id: str, messages: Sequence[NewMessage]) -> list[int]: ...

    def commit_fold(
        self,
        user_id: str,
        session_id: str,
        *,
        expected_folded_through: int,
        folded_through: int,
        summary: str,
        summary_tokens: int,
    ) -> bool: ...

    def set_summary(self, user_id: str, session_id: str, summary: str, summary_tokens: int) -> None: ...

    def replace(self, state: WorkingState) -> None: ...

    def clear(self, user_id: str, session_id: str) -> int: ...

    def sessions(self, user_id: str) -> list[str]: ...

    def close(self) -> None: ...
