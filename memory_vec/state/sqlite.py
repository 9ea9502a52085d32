"""Working state in a SQLite file under ``persist_dir``, one file per collection.

Every mutation is one ``BEGIN IMMEDIATE`` transaction, so several threads
and processes on one machine can share a session: SQLite's write lock
serializes them, sequence numbers come from the row they lock, and a fold
commits only if ``folded_through`` is unchanged. WAL mode keeps readers off
the writers' backs; a committed transaction survives a crash (synchronous=FULL).

The same file holds the collection's keyword versions and dead letters
(see :mod:`memory_vec.state._sqlite_logs`). A file of 0.1 may hold a table
``unflushed`` of that version's leases: unused now, left as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from memory_vec._model.errors import ConfigError, StateStoreError
from memory_vec.state import _sqlite_logs as logs
from memory_vec.state._letters import letters_to_json
from memory_vec.state.base import DeadLetter, NewMessage, StateMessage, WorkingState

__all__ = ["SQLiteStateStore", "sqlite_state_path"]

# Kept as-is in a file name. Lower case only: on a case-insensitive file
# system (macOS, Windows) "Chat" and "chat" would otherwise share a file.
_PLAIN_NAME = re.compile(r"[a-z0-9._-]{1,64}")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]")
_BACKEND_NAME = re.compile(r"[a-z0-9_]{1,32}")


_INSERT_MESSAGE = "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _message_row(user_id: str, session_id: str, seq: int, m: NewMessage | StateMessage) -> tuple[object, ...]:
    metadata = json.dumps(m.metadata, ensure_ascii=False)
    return (user_id, session_id, seq, m.id, m.role, m.content, m.timestamp, m.tokens, metadata)


def sqlite_state_path(persist_dir: str, backend: str, collection: str) -> str:
    """Where the working state of one (backend kind, collection) lives.

    ``<persist_dir>/state/<backend>-<collection>.sqlite3``. A collection name
    that is not plain lower-case ``[a-z0-9._-]`` (at most 64 characters) gets
    a readable part plus ``~`` and a hash of the exact name: ``~`` never occurs
    in a plain name, so two different collections never share a file.

    Example:
        >>> sqlite_state_path("/data", "chroma", "notes")
        '/data/state/chroma-notes.sqlite3'
    """
    if not _BACKEND_NAME.fullmatch(backend):
        raise ConfigError(
            f"backend {backend!r} cannot name a state file; expected one of the backend names "
            "(lower-case letters, digits, '_')"
        )
    if _PLAIN_NAME.fullmatch(collection):
        name = collection
    else:
        digest = hashlib.sha256(collection.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = f"{_UNSAFE_CHARS.sub('_', collection)[:32]}~{digest}"
    return os.path.join(persist_dir, "state", f"{backend}-{name}.sqlite3")


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


def read_state(conn: sqlite3.Connection, user_id: str, session_id: str) -> WorkingState:
    """One session from the tables of :data:`_SCHEMA` (also 0.1's layout, see ``_legacy``)."""
    state = WorkingState(user_id, session_id)
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
    state.messages = [StateMessage(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]
    if row is not None:
        state.summary, state.summary_tokens, state.next_seq, state.folded_through, state.updated_at = row
    elif state.messages:  # messages without a session row (0.1 could leave them)
        state.next_seq = state.messages[-1].seq + 1
    return state


_open_stores: weakref.WeakSet[SQLiteStateStore] = weakref.WeakSet()


def _drop_connections_in_child() -> None:
    # SQLite connections must not cross a fork: a forked child opens its own.
    for store in list(_open_stores):
        store._local = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_connections_in_child)


class SQLiteStateStore:
    """Working state, keyword versions and dead letters of one collection in a SQLite file.

    Threads share one instance (a connection per thread); processes open
    their own instance on the same file.

    Example:
        >>> store = SQLiteStateStore(sqlite_state_path(persist_dir, "chroma", "notes"))  # doctest: +SKIP
        >>> store.append("alice", "chat-1", [NewMessage("m1", "user", "hi", 0.0, 1)])  # doctest: +SKIP
        [1]
    """

    name = "sqlite"

    def __init__(self, path: str, *, timeout: float = 30.0) -> None:
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._timeout = timeout
        self._local = threading.local()
        _open_stores.add(self)
        try:
            self._conn().executescript(_SCHEMA + logs.LOGS_SCHEMA)
        except sqlite3.Error as exc:
            raise StateStoreError(f"Cannot open the working-state database {path!r}: {exc}") from exc

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
            self._use_wal(conn)
            conn.execute("PRAGMA synchronous=FULL")
            # Deleted rows are overwritten with zeros, not left in free pages (a per-connection
            # setting): forget() must leave no trace of a user's text or ids in the file.
            conn.execute("PRAGMA secure_delete=ON")
            self._local.conn = conn
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        # Switching a new file to WAL takes an exclusive lock without SQLite's busy
        # handler: processes opening it at once get "database is locked". Retry
        # within the connection's timeout.
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

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

    @contextmanager
    def _snapshot(self, action: str) -> Iterator[sqlite3.Connection]:
        """A read transaction: several SELECTs see one consistent state."""
        conn = self._conn()
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")  # read-only: ending it cannot lose anything
        except sqlite3.Error as exc:
            raise StateStoreError(f"Cannot {action} from {self.path!r}: {exc}") from exc

    @staticmethod
    def _ensure(conn: sqlite3.Connection, user_id: str, session_id: str) -> None:
        conn.execute("INSERT OR IGNORE INTO sessions (user_id, session_id) VALUES (?, ?)", (user_id, session_id))

    def load(self, user_id: str, session_id: str) -> WorkingState:
        with self._snapshot("read working state") as conn:
            return read_state(conn, user_id, session_id)

    def append(self, user_id: str, session_id: str, messages: Sequence[NewMessage], *, first_seq: int = 1) -> list[int]:
        with self._tx() as conn:
            self._ensure(conn, user_id, session_id)
            (next_seq,) = conn.execute(
                "SELECT MAX(next_seq, ?) FROM sessions WHERE user_id=? AND session_id=?",
                (int(first_seq), user_id, session_id),
            ).fetchone()
            seqs = list(range(next_seq, next_seq + len(messages)))
            conn.executemany(
                _INSERT_MESSAGE, [_message_row(user_id, session_id, seq, m) for seq, m in zip(seqs, messages)]
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
        expected_summary: str | None = None,
    ) -> bool:
        sql = (
            "UPDATE sessions SET summary=?, summary_tokens=?, folded_through=?, updated_at=? "
            "WHERE user_id=? AND session_id=? AND folded_through=? AND next_seq>?"
        )
        params: tuple[object, ...] = (
            summary,
            summary_tokens,
            folded_through,
            time.time(),
            user_id,
            session_id,
            expected_folded_through,
            folded_through,
        )
        if expected_summary is not None:
            sql, params = sql + " AND summary=?", (*params, expected_summary)
        with self._tx() as conn:  # no row made for a session that has none (a forgotten one stays gone)
            cur = conn.execute(sql, params)
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
            conn.execute("DELETE FROM messages WHERE user_id=? AND session_id=?", (state.user_id, state.session_id))
            conn.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    state.user_id,
                    state.session_id,
                    state.summary,
                    state.summary_tokens,
                    state.next_seq,
                    state.folded_through,
                    time.time(),
                ),
            )
            conn.executemany(
                _INSERT_MESSAGE, [_message_row(state.user_id, state.session_id, m.seq, m) for m in state.messages]
            )

    def clear(self, user_id: str, session_id: str) -> int:
        with self._tx() as conn:
            conn.execute("DELETE FROM messages WHERE user_id=? AND session_id=?", (user_id, session_id))
            cur = conn.execute("DELETE FROM sessions WHERE user_id=? AND session_id=?", (user_id, session_id))
            return cur.rowcount

    def drop_messages(self, user_id: str, session_id: str, ids: Sequence[str]) -> int:
        with self._tx() as conn:
            return sum(
                conn.execute(
                    "DELETE FROM messages WHERE user_id=? AND session_id=? AND id=?", (user_id, session_id, i)
                ).rowcount
                for i in dict.fromkeys(ids)
            )

    def forget_user(self, user_id: str) -> None:
        with self._tx() as conn:
            for table in ("messages", "sessions", "keyword_versions", "dead_letters"):
                conn.execute(f"DELETE FROM {table} WHERE user_id=?", (user_id,))

    def edit_message(self, user_id: str, session_id: str, old: StateMessage, new: StateMessage) -> bool:
        if new.seq != old.seq:
            return False
        with self._tx() as conn:
            changed = conn.execute(
                "UPDATE messages SET id=?, role=?, content=?, timestamp=?, tokens=?, metadata=? "
                "WHERE user_id=? AND session_id=? AND seq=? AND id=? AND content=? AND tokens=?",
                (
                    new.id,
                    new.role,
                    new.content,
                    new.timestamp,
                    new.tokens,
                    json.dumps(new.metadata, ensure_ascii=False),
                    user_id,
                    session_id,
                    old.seq,
                    old.id,
                    old.content,
                    old.tokens,
                ),
            ).rowcount
        return bool(changed)

    def sessions(self, user_id: str) -> list[str]:
        rows = (
            self._conn()
            .execute("SELECT session_id FROM sessions WHERE user_id=? ORDER BY session_id", (user_id,))
            .fetchall()
        )
        return [r[0] for r in rows]

    # --- keyword versions ----------------------------------------------------------
    def keyword_version(self, user_id: str) -> str | None:
        with self._snapshot("read a keyword version") as conn:
            row = conn.execute("SELECT version FROM keyword_versions WHERE user_id=?", (user_id,)).fetchone()
        return None if row is None else str(row[0])

    def new_keyword_version(self, user_id: str, version: str) -> str | None:
        with self._tx() as conn:
            return logs.new_keyword_version(conn, user_id, version)

    def add_dead_letters(self, letters: Sequence[DeadLetter]) -> None:
        payloads = letters_to_json(letters)
        with self._tx() as conn:
            logs.add_dead_letters(conn, letters, payloads)

    def dead_letters(self, user_id: str | None = None) -> list[DeadLetter]:
        with self._snapshot("read dead letters") as conn:
            return logs.dead_letters(conn, user_id)

    def remove_dead_letters(self, record_ids: Sequence[str]) -> int:
        with self._tx() as conn:
            return logs.remove_dead_letters(conn, record_ids)

    def purge(self) -> None:
        """Make deleted data unrecoverable from the files: copy the write-ahead
        log into the database (whose freed pages secure_delete zeroed) and
        truncate the log, where the old page versions were."""
        try:
            self._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StateStoreError(f"Cannot purge the working-state database {self.path!r}: {exc}") from exc

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
