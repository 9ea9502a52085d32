"""Per-turn trace: what was recalled with which scores, tokens per slot,
summarizer calls and their time, degraded operation, skipped inputs.

The last trace is ``MemoryCore.last_trace``; each is also logged at DEBUG on
the ``memory_vec.trace`` logger.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["TurnTrace", "SummarizerCall", "logger"]

logger = logging.getLogger("memory_vec.trace")


@dataclass
class SummarizerCall:
    summarizer: str
    messages: int
    seconds: float
    ok: bool
    error: str = ""


@dataclass
class TurnTrace:
    operation: str
    user_id: str
    session_id: str
    started: float = field(default_factory=time.time)
    recalled: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    summarizer_calls: list[SummarizerCall] = field(default_factory=list)
    degraded: bool = False
    events: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def event(self, message: str) -> None:
        self.events.append(message)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def emit(self) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("memory-vec %s", self.as_dict())
