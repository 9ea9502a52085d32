"""The keyword log and the dead letters of :class:`~memory_vec.state.sqlite.SQLiteStateStore`.

Plain functions over a connection the store has already put in the right
transaction (``BEGIN IMMEDIATE`` for writes, ``BEGIN`` for a consistent read).

Per user, ``keyword_users`` holds the generation, the write counter and the
``floor``: the log holds every position in ``floor+1 .. counter``, so a reader
at a position below the floor has lost entries and rebuilds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memory_vec.state._letters import letter_from_json
from memory_vec.state.base import KEYWORD_LOG_LIMIT, DeadLetter, KeywordChanges

__all__ = [
    "LOGS_SCHEMA",
    "add_dead_letters",
    "dead_letters",
    "keyword_changes",
    "log_writes",
    "remove_dead_letters",
    "reset_keywords",
]

LOGS_SCHEMA = """
CREATE TABLE IF NOT EXISTS keyword_users (
    user_id TEXT PRIMARY KEY, generation INTEGER NOT NULL DEFAULT 0,
    counter INTEGER NOT NULL DEFAULT 0, floor INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS keyword_log (
    user_id TEXT NOT NULL, pos INTEGER NOT NULL, record_id TEXT NOT NULL,
    PRIMARY KEY (user_id, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dead_letters (
    record_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, failed_at REAL NOT NULL, payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS dead_letters_by_user ON dead_letters (user_id, failed_at);
"""


def log_writes(conn: sqlite3.Connection, user_id: str, ids: Sequence[str]) -> int:
    conn.execute("INSERT OR IGNORE INTO keyword_users (user_id) VALUES (?)", (user_id,))
    (counter, floor) = conn.execute("SELECT counter, floor FROM keyword_users WHERE user_id=?", (user_id,)).fetchone()
    if not ids:
        return int(counter)
    new_counter = counter + len(ids)
    new_floor = max(floor, new_counter - KEYWORD_LOG_LIMIT)
    kept = list(ids)[max(0, new_floor - counter) :]  # never insert what the trim would drop at once
    first = new_counter - len(kept) + 1
    conn.executemany(
        "INSERT INTO keyword_log (user_id, pos, record_id) VALUES (?, ?, ?)",
        [(user_id, first + i, record_id) for i, record_id in enumerate(kept)],
    )
    if new_floor > floor:
        conn.execute("DELETE FROM keyword_log WHERE user_id=? AND pos<=?", (user_id, new_floor))
    conn.execute("UPDATE keyword_users SET counter=?, floor=? WHERE user_id=?", (new_counter, new_floor, user_id))
    return int(new_counter)


def keyword_changes(conn: sqlite3.Connection, user_id: str, *, after: int, generation: int) -> KeywordChanges:
    row = conn.execute("SELECT generation, counter, floor FROM keyword_users WHERE user_id=?", (user_id,)).fetchone()
    current, counter, floor = (int(v) for v in row) if row is not None else (0, 0, 0)
    if generation != current or not floor <= after <= counter:
        return KeywordChanges(current, counter, None)
    if after == counter:  # the usual case: nothing new, no second query
        return KeywordChanges(current, counter, ())
    rows = conn.execute(
        "SELECT record_id FROM keyword_log WHERE user_id=? AND pos>? ORDER BY pos", (user_id, after)
    ).fetchall()
    return KeywordChanges(current, counter, tuple(r[0] for r in rows))


def reset_keywords(conn: sqlite3.Connection, user_id: str) -> int:
    conn.execute("INSERT OR IGNORE INTO keyword_users (user_id) VALUES (?)", (user_id,))
    # Every reader rebuilds after a reset: the entries so far are no use to anyone.
    conn.execute("DELETE FROM keyword_log WHERE user_id=?", (user_id,))
    conn.execute("UPDATE keyword_users SET generation=generation+1, floor=counter WHERE user_id=?", (user_id,))
    (generation,) = conn.execute("SELECT generation FROM keyword_users WHERE user_id=?", (user_id,)).fetchone()
    return int(generation)


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
