"""Per-turn trace: what was recalled with which scores, tokens per slot,
summarizer calls and their time, degraded operation, skipped inputs.

``build_context`` returns its trace on the result (``MemoryContext.trace``);
``MemoryCore.last_trace`` is the last trace of the calling thread or asyncio
task. Each is also logged at DEBUG on the ``memory_vec._model.trace`` logger.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

__all__ = ["SummarizerCall", "TraceSlot", "TurnTrace", "logger", "run_in_thread"]

T = TypeVar("T")

logger = logging.getLogger("memory_vec._model.trace")


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


# --- the last trace, per thread and per asyncio task ------------------------------
# One context variable for the process holds a short tuple of (owner token,
# trace) pairs, replaced (never mutated) on each set, so a trace set in one
# thread or task is never seen by another: a core shared by threads shows
# each caller its own last trace.
_LAST: contextvars.ContextVar[tuple[tuple[object, TurnTrace], ...]] = contextvars.ContextVar(
    "memory_vec_last_traces", default=()
)
_SLOTS_KEPT = 8


class TraceSlot:
    """Where one core keeps its last trace, per thread / asyncio task."""

    __slots__ = ("_token",)

    def __init__(self) -> None:
        self._token = object()

    def get(self) -> TurnTrace | None:
        for token, trace in _LAST.get():
            if token is self._token:
                return trace
        return None

    def set(self, trace: TurnTrace | None) -> None:
        kept = tuple(pair for pair in _LAST.get() if pair[0] is not self._token)
        if trace is not None:
            kept = ((self._token, trace), *kept[: _SLOTS_KEPT - 1])
        _LAST.set(kept)


async def run_in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``fn`` in a worker thread with a copy of the caller's context, and
    bring the traces it set back into the caller's task afterwards."""
    ctx = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(None, functools.partial(ctx.run, fn, *args, **kwargs))
    finally:
        _LAST.set(ctx.get(_LAST, ()))
