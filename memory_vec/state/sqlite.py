"""Working state in a SQLite file under ``persist_dir``.

Every mutation is one ``BEGIN IMMEDIATE`` transaction, so several threads
and processes on one machine can share a session: SQLite's write lock
serializes them, sequence numbers come from the row they lock, and a fold
commits only if ``folded_through`` is unchanged. WAL mode keeps readers off
the writers' backs; a committed transaction survives a crash (synchronous=FULL).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..errors import StateStoreError
from .base import NewMessage, StateMessage, WorkingState

__all__ = ["SQLiteStateStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '', summary_tokens INTEGER NOT NULL DEFAULT 0,
    next_seq INTEGER NOT NULL DEFAULT 1, folded_through INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, session_id));
CREATE TABLE IF NOT EXISTS messages (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
    timestamp REAL NOT NULL, tokens INTEGER NOT NULL, metadata TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, seq));
"""


class SQLiteStateStore:
    name = "sqlite"

    def __init__(self, path: str, *, timeout: float = 30.0) -> None:
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._timeout = timeout
        self._local = threading.local()
        try:
            self._conn().executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StateStoreError(f"Cannot open the working-state database {path!r}: {exc}") from exc

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            self._local.conn = conn
        return conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StateStoreError(f"Working-state database {self.path!r} is unavailable: {exc}") from exc
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    @staticmethod
    def _ensure(conn: sqlite3.Connection, user_id: str, session_id: str) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO sessions (user_id, session_id) VALUES (?, ?)", (user_id, session_id)
        )

    def load(self, user_id: str, session_id: str) -> WorkingState:
        conn = self._conn()
        try:
            conn.execute("BEGIN")  # one consistent snapshot of both tables
            row = conn.execute(
                "SELECT summary, summary_tokens, next_seq, folded_through, updated_at FROM sessions "
                "WHERE user_id=? AND session_id=?",
                (user_id, session_id),
            ).fetchone()
            rows = conn.execute(
                "SELECT seq, id, role, content, timestamp, tokens, metadata FROM messages "
                "WHERE user_id=? AND session_id=? ORDER BY seq",
                (user_id, session_id),
            ).fetchall()
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StateStoreError(f"Cannot read working state from {self.path!r}: {exc}") from exc
        state = WorkingState(user_id, session_id)
        if row is not None:
            state.summary, state.summary_tokens, state.next_seq, state.folded_through, state.updated_at = row
        state.messages = [
            StateMessage(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows
        ]
        return state

    def append(self, user_id: str, session_id: str, messages: Sequence[NewMessage]) -> list[int]:
        with self._tx() as conn:
            self._ensure(conn, user_id, session_id)
            (next_seq,) = conn.execute(
                "SELECT next_seq FROM sessions WHERE user_id=? AND session_id=?", (user_id, session_id)
            ).fetchone()
            seqs = list(range(next_seq, next_seq + len(messages)))
            conn.executemany(
                "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (user_id, session_id, seq, m.id, m.role, m.content, m.timestamp, m.tokens,
                     json.dumps(m.metadata, ensure_ascii=False))
                    for seq, m in zip(seqs, messages)
                ],
            )
            conn.execute(
                "UPDATE sessions SET next_seq=?, updated_at=? WHERE user_id=? AND session_id=?",
                (next_seq + len(messages), time.time(), user_id, session_id),
            )
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
        with self._tx() as conn:
            self._ensure(conn, user_id, session_id)
            cur = conn.execute(
                "UPDATE sessions SET summary=?, summary_tokens=?, folded_through=?, updated_at=? "
                "WHERE user_id=? AND session_id=? AND folded_through=?",
                (summary, summary_tokens, folded_through, time.time(), user_id, session_id,
                 expected_folded_through),
            )
            if cur.rowcount != 1:
                return False
            conn.execute(
                "DELETE FROM messages WHERE user_id=? AND session_id=? AND seq<=?",
                (user_id, session_id, folded_through),
            )
            return True

    def set_summary(self, user_id: str, session_id: str, summary: str, summary_tokens: int) -> None:
        with self._tx() as conn:
            self._ensure(conn, user_id, session_id)
            conn.execute(
                "UPDATE sessions SET summary=?, summary_tokens=? WHERE user_id=? AND session_id=?",
                (summary, summary_tokens, user_id, session_id),
            )

    def replace(self, state: WorkingState) -> None:
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM messages WHERE user_id=? AND session_id=?", (state.user_id, state.session_id)
            )
            conn.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (state.user_id, state.session_id, state.summary, state.summary_tokens, state.next_seq,
                 state.folded_through, time.time()),
            )
            conn.executemany(
                "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (state.user_id, state.session_id, m.seq, m.id, m.role, m.content, m.timestamp, m.tokens,
                     json.dumps(m.metadata, ensure_ascii=False))
                    for m in state.messages
                ],
            )

    def clear(self, user_id: str, session_id: str) -> int:
        with self._tx() as conn:
            conn.execute("DELETE FROM messages WHERE user_id=? AND session_id=?", (user_id, session_id))
            cur = conn.execute("DELETE FROM sessions WHERE user_id=? AND session_id=?", (user_id, session_id))
            return cur.rowcount

    def sessions(self, user_id: str) -> list[str]:
        rows = self._conn().execute(
            "SELECT session_id FROM sessions WHERE user_id=? ORDER BY session_id", (user_id,)
        ).fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
