"""Working state in process memory (used with the in-process backend)."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Sequence

from .base import NewMessage, StateMessage, WorkingState

__all__ = ["InMemoryStateStore"]


class InMemoryStateStore:
    name = "memory"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], WorkingState] = {}

    def _get(self, user_id: str, session_id: str) -> WorkingState:
        key = (user_id, session_id)
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = WorkingState(user_id, session_id)
        return state

    def load(self, user_id: str, session_id: str) -> WorkingState:
        with self._lock:
            # Reading must not create the session (sessions() would list it).
            state = self._states.get((user_id, session_id))
            return copy.deepcopy(state) if state is not None else WorkingState(user_id, session_id)

    def append(self, user_id: str, session_id: str, messages: Sequence[NewMessage]) -> list[int]:
        with self._lock:
            state = self._get(user_id, session_id)
            seqs = []
            for m in messages:
                seq = state.next_seq
                state.next_seq += 1
                state.messages.append(
                    StateMessage(seq, m.id, m.role, m.content, m.timestamp, m.tokens, dict(m.metadata))
                )
                seqs.append(seq)
            state.updated_at = time.time()
            return seqs

    def commit_fold(
        self,
        user_id: str,
        session_id: str,
        *,
        expected_folded_through: int,
        folded_through: int,
        summary: str,
        summary_tokens: int,
    ) -> bool:
        with self._lock:
            state = self._get(user_id, session_id)
            if state.folded_through != expected_folded_through:
                return False
            state.messages = [m for m in state.messages if m.seq > folded_through]
            state.folded_through = folded_through
            state.summary, state.summary_tokens = summary, summary_tokens
            state.updated_at = time.time()
            return True

    def set_summary(self, user_id: str, session_id: str, summary: str, summary_tokens: int) -> None:
        with self._lock:
            state = self._get(user_id, session_id)
            state.summary, state.summary_tokens = summary, summary_tokens

    def replace(self, state: WorkingState) -> None:
        with self._lock:
            self._states[(state.user_id, state.session_id)] = copy.deepcopy(state)

    def clear(self, user_id: str, session_id: str) -> int:
        with self._lock:
            return 1 if self._states.pop((user_id, session_id), None) is not None else 0

    def sessions(self, user_id: str) -> list[str]:
        with self._lock:
            return sorted(s for (u, s) in self._states if u == user_id)

    def close(self) -> None:
        pass
