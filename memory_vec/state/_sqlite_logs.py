"""The keyword versions and the dead letters of :class:`~memory_vec.state.sqlite.SQLiteStateStore`.

Plain functions over a connection the store has already put in the right
transaction (``BEGIN IMMEDIATE`` for writes, ``BEGIN`` for a consistent read).
The keyword log of 0.1 (``keyword_users``, ``keyword_log``) is dropped on open.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memory_vec.state._letters import letter_from_json
from memory_vec.state.base import DeadLetter

__all__ = [
    "LOGS_SCHEMA",
    "add_dead_letters",
    "dead_letters",
    "new_keyword_version",
    "remove_dead_letters",
]

LOGS_SCHEMA = """
DROP TABLE IF EXISTS keyword_log;
DROP TABLE IF EXISTS keyword_users;
CREATE TABLE IF NOT EXISTS keyword_versions (user_id TEXT PRIMARY KEY, version TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dead_letters (
    record_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, failed_at REAL NOT NULL, payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS dead_letters_by_user ON dead_letters (user_id, failed_at);
"""


def new_keyword_version(conn: sqlite3.Connection, user_id: str, version: str) -> str | None:
    row = conn.execute("SELECT version FROM keyword_versions WHERE user_id=?", (user_id,)).fetchone()
    conn.execute("INSERT OR REPLACE INTO keyword_versions (user_id, version) VALUES (?, ?)", (user_id, version))
    return None if row is None else str(row[0])


def add_dead_letters(conn: sqlite3.Connection, letters: Sequence[DeadLetter], payloads: Sequence[str]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO dead_letters (record_id, user_id, failed_at, payload) VALUES (?, ?, ?, ?)",
        [(d.record_id, d.user_id, d.failed_at, p) for d, p in zip(letters, payloads)],
    )


def dead_letters(conn: sqlite3.Connection, user_id: str | None) -> list[DeadLetter]:
    if user_id is None:
        rows = conn.execute("SELECT payload FROM dead_letters ORDER BY failed_at, record_id").fetchall()
    else:
        rows = conn.execute(
            "SELECT payload FROM dead_letters WHERE user_id=? ORDER BY failed_at, record_id", (user_id,)
        ).fetchall()
    return [letter_from_json(r[0]) for r in rows]


def remove_dead_letters(conn: sqlite3.Connection, record_ids: Sequence[str]) -> int:
    removed = 0
    for record_id in set(record_ids):
        removed += conn.execute("DELETE FROM dead_letters WHERE record_id=?", (record_id,)).rowcount
    return removed
