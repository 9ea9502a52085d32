"""Working state in process memory (used with the in-process backend)."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Sequence

from memory_vec.state.base import DeadLetter, NewMessage, StateMessage, WorkingState

__all__ = ["InMemoryStateStore"]


class InMemoryStateStore:
    """Working state, keyword versions and dead letters of one collection, in this process.

    Example:
        >>> store = InMemoryStateStore()
        >>> store.append("alice", "chat-1", [NewMessage("m1", "user", "hi", 0.0, 1)])
        [1]
    """

    name = "memory"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], WorkingState] = {}
        self._versions: dict[str, str] = {}
        self._letters: dict[str, DeadLetter] = {}

    def _get(self, user_id: str, session_id: str) -> WorkingState:
        return self._states.setdefault((user_id, session_id), WorkingState(user_id, session_id))

    def load(self, user_id: str, session_id: str) -> WorkingState:
        with self._lock:
            # Reading must not create the session (sessions() would list it).
            state = self._states.get((user_id, session_id))
            return copy.deepcopy(state) if state is not None else WorkingState(user_id, session_id)

    def append(self, user_id: str, session_id: str, messages: Sequence[NewMessage], *, first_seq: int = 1) -> list[int]:
        with self._lock:
            state = self._get(user_id, session_id)
            state.next_seq = max(state.next_seq, first_seq)
            seqs = []
            for m in messages:
                seq = state.next_seq
                state.next_seq += 1
                state.messages.append(
                    StateMessage(seq, m.id, m.role, m.content, m.timestamp, m.tokens, copy.deepcopy(m.metadata))
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
        expected_summary: str | None = None,
    ) -> bool:
        with self._lock:
            seen = self._states.get((user_id, session_id)) or WorkingState(user_id, session_id)
            if seen.folded_through != expected_folded_through or folded_through >= seen.next_seq:
                return False  # (a forgotten session is not made again by a late fold)
            if expected_summary is not None and seen.summary != expected_summary:
                return False
            state = self._get(user_id, session_id)
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

    def drop_messages(self, user_id: str, session_id: str, ids: Sequence[str]) -> int:
        with self._lock:
            state = self._states.get((user_id, session_id))
            if state is None:
                return 0
            dropped_ids = set(ids)
            kept = [m for m in state.messages if m.id not in dropped_ids]
            dropped, state.messages = len(state.messages) - len(kept), kept
            return dropped

    def edit_message(self, user_id: str, session_id: str, old: StateMessage, new: StateMessage) -> bool:
        with self._lock:
            state = self._states.get((user_id, session_id))
            if state is None or old not in state.messages or new.seq != old.seq:
                return False
            state.messages = [new if m == old else m for m in state.messages]
            return True

    def forget_user(self, user_id: str) -> None:
        with self._lock:
            for key in [k for k in self._states if k[0] == user_id]:
                del self._states[key]
            self._versions.pop(user_id, None)

    def sessions(self, user_id: str) -> list[str]:
        with self._lock:
            return sorted(s for (u, s) in self._states if u == user_id)

    # --- keyword versions ----------------------------------------------------------
    def keyword_version(self, user_id: str) -> str | None:
        with self._lock:
            return self._versions.get(user_id)

    def new_keyword_version(self, user_id: str, version: str) -> str | None:
        with self._lock:
            replaced, self._versions[user_id] = self._versions.get(user_id), version
            return replaced

    # --- dead letters ----------------------------------------------------------------
    def add_dead_letters(self, letters: Sequence[DeadLetter]) -> None:
        with self._lock:
            for letter in letters:
                self._letters[letter.record_id] = copy.deepcopy(letter)

    def dead_letters(self, user_id: str | None = None) -> list[DeadLetter]:
        with self._lock:
            found = [copy.deepcopy(d) for d in self._letters.values() if user_id is None or d.user_id == user_id]
        return sorted(found, key=lambda d: (d.failed_at, d.record_id))

    def remove_dead_letters(self, record_ids: Sequence[str]) -> int:
        with self._lock:
            return sum(self._letters.pop(r, None) is not None for r in set(record_ids))

    def purge(self) -> None:
        """Nothing to do: deleted state lives nowhere else."""

    def close(self) -> None:
        pass
