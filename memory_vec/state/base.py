"""Working state: the running summary and the recent (not yet folded)
messages of one session, with its sequence counter.

Three operations are atomic, so threads and processes can share a session
without losing or double-folding messages: ``append`` (strictly increasing
seqs), ``commit_fold`` (compare-and-set on ``folded_through``) and
``replace`` / ``clear``.

A store belongs to one collection and also keeps, per collection, the users'
**keyword versions** (a random token replaced after every change of the
user's rows: :mod:`memory_vec._storage.keywords`) and the **dead-letter
list** (records the backend refused one by one, kept for retry or drop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memory_vec._model.session import NewMessage, StateMessage, WorkingState

__all__ = ["DeadLetter", "NewMessage", "StateMessage", "StateStore", "WorkingState"]


@dataclass(frozen=True)
class DeadLetter:
    """A record the backend refused while the rest of its batch was stored.

    ``record`` is the record as a plain dict (``dataclasses.asdict`` of a
    :class:`~memory_vec._model.records.MemoryRecord`) and ``vector`` its stored
    vector, so a retry needs no model.
    """

    record_id: str
    user_id: str
    session_id: str
    error: str
    failed_at: float
    record: dict[str, Any]
    vector: list[float] | None = None


@runtime_checkable
class StateStore(Protocol):
    name: str

    def load(self, user_id: str, session_id: str) -> WorkingState: ...

    def append(self, user_id: str, session_id: str, messages: Sequence[NewMessage], *, first_seq: int = 1) -> list[int]:
        """Append atomically; the seqs given continue ``next_seq``, and are never
        below ``first_seq`` (a state lost while its messages stayed stored
        must not hand out their seqs again)."""
        ...

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
        """Compare-and-set: commit only if ``folded_through`` (and, when
        given, the summary) is unchanged since the caller read it, and the
        session still numbers past the new ``folded_through`` (a fold planned
        before the session was cleared or forgotten must not write its summary
        into the empty session)."""
        ...

    def set_summary(self, user_id: str, session_id: str, summary: str, summary_tokens: int) -> None: ...

    def replace(self, state: WorkingState) -> None: ...

    def clear(self, user_id: str, session_id: str) -> int: ...

    def drop_messages(self, user_id: str, session_id: str, ids: Sequence[str]) -> int:
        """Remove these messages from the session's recent window (they were
        deleted from the store: heal must not put them back); how many."""
        ...

    def edit_message(self, user_id: str, session_id: str, old: StateMessage, new: StateMessage) -> bool:
        """Replace ``old`` (exactly as loaded) by ``new`` at the same seq, atomically; False
        when ``old`` is no longer there (folded, dropped, or edited meanwhile). ``update()``
        of a message: the recent window says what the user's edit says."""
        ...

    def forget_user(self, user_id: str) -> None:
        """Remove whatever the store still keeps under the user's id (its sessions, its keyword
        version, its keys): ``forget`` leaves no user id behind. Readers of the keyword version
        rebuild (the next one read is new)."""
        ...

    def sessions(self, user_id: str) -> list[str]: ...

    # --- keyword versions (per user) -----------------------------------------
    def keyword_version(self, user_id: str) -> str | None:
        """The user's keyword version (None: none; a read never makes one, so a
        forgotten user's id does not come back by a read)."""
        ...

    def new_keyword_version(self, user_id: str, version: str) -> str | None:
        """Replace the user's keyword version by ``version`` atomically; the one it
        replaced (None: none)."""
        ...

    # --- dead letters (per collection) --------------------------------------
    def add_dead_letters(self, letters: Sequence[DeadLetter]) -> None: ...

    def dead_letters(self, user_id: str | None = None) -> list[DeadLetter]: ...

    def remove_dead_letters(self, record_ids: Sequence[str]) -> int: ...

    def purge(self) -> None:
        """Make deleted data unrecoverable from the store's own files, where it
        can (``forget`` calls it)."""
        ...

    def close(self) -> None: ...
