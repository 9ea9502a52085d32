"""Moving sessions out of the one-file state layout of memory-vec 0.1.

0.1 kept the working state of every collection in ``<persist_dir>/state.sqlite3``
(tables ``sessions`` and ``messages``). Now each collection has its own store,
so each collection, when opened, claims its sessions from the old file: those
whose messages its backend holds. The order is crash-safe: a session is
copied into the new store first (skipped if already there, so a rerun after a
crash copies nothing twice) and deleted from the old file after, in one
``BEGIN IMMEDIATE`` transaction that also keeps two processes from claiming
the same session.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from memory_vec._model.errors import StateStoreError
from memory_vec.state.base import StateStore
from memory_vec.state.sqlite import read_state

__all__ = [
    "LEGACY_STATE_FILE",
    "claim_legacy_sessions",
    "clear_pending_of_earlier_engine",
    "legacy_state_path",
    "pending_of_earlier_engine",
]

log = logging.getLogger("memory_vec.state")

#: The file name memory-vec 0.1 used under ``persist_dir``.
LEGACY_STATE_FILE = "state.sqlite3"


def legacy_state_path(persist_dir: str) -> str:
    return os.path.join(persist_dir, LEGACY_STATE_FILE)


def claim_legacy_sessions(legacy_path: str, target: StateStore, owns: Callable[[Sequence[str]], set[str]]) -> int:
    """Move the sessions of one collection from a 0.1 state file into ``target``.

    Args:
        legacy_path: The old ``state.sqlite3``; nothing happens if it does not exist.
        target: This collection's state store.
        owns: Given message ids, the ones this collection's backend holds.

    A session with at least one owned message is this collection's. A session
    without messages (all folded into its summary) cannot be attributed: the
    first collection that calls this takes it, with a warning. Sessions owned
    by nobody here are left for another collection.

    Returns:
        How many sessions were claimed.

    Raises:
        StateStoreError: The old file cannot be read or written.
    """
    if not os.path.exists(legacy_path):
        return 0
    try:
        # mode=rw: a file removed since the check is not created again, empty.
        conn = sqlite3.connect(
            Path(legacy_path).absolute().as_uri() + "?mode=rw", uri=True, timeout=600, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise StateStoreError(f"Cannot open the 0.1 working-state file {legacy_path!r}: {exc}") from exc
    try:
        return _claim(conn, target, owns)
    except sqlite3.Error as exc:
        raise StateStoreError(
            f"Cannot move sessions out of the 0.1 working-state file {legacy_path!r}: {exc}. "
            "The file was left as it was; once it is readable (or moved away), open the collection again."
        ) from exc
    finally:
        conn.close()


def pending_of_earlier_engine(state_path: str) -> list[tuple[str, str]]:
    """Sessions whose acknowledged turns 0.2's first engine (before #45) may not have written.

    Its background writer named them before queueing their rows: a store one process
    owns in ``<state file>.unflushed`` (JSON lines ``[user_id, session_id]``), a server
    in the state's table ``unflushed`` as leases (``"<token> <session_id>"``). The
    synchronous engine has neither: the caller heals these sessions from the working
    state's log, then calls :func:`clear_pending_of_earlier_engine`.
    """
    found: set[tuple[str, str]] = set()
    marks = state_path + ".unflushed"
    if os.path.exists(marks):
        with open(marks, encoding="utf-8") as f:
            for line in f:
                try:
                    user_id, session_id = json.loads(line)
                except (ValueError, TypeError):
                    continue  # a line torn by the crash names nothing
                if isinstance(user_id, str) and isinstance(session_id, str):
                    found.add((user_id, session_id))
    if os.path.exists(state_path):
        conn = sqlite3.connect(Path(state_path).absolute().as_uri() + "?mode=ro", uri=True, timeout=60)
        try:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='unflushed'").fetchone():
                for user_id, lease in conn.execute("SELECT user_id, member FROM unflushed"):
                    found.add((user_id, str(lease).partition(" ")[2]))
        except sqlite3.Error as exc:
            raise StateStoreError(f"Cannot read the leases of {state_path!r}: {exc}") from exc
        finally:
            conn.close()
    return sorted(found)


def clear_pending_of_earlier_engine(state_path: str) -> None:
    """Drop the marks :func:`pending_of_earlier_engine` read, once their sessions are healed."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(state_path + ".unflushed")
    if os.path.exists(state_path):
        conn = sqlite3.connect(state_path, timeout=60, isolation_level=None)
        try:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='unflushed'").fetchone():
                conn.execute("DELETE FROM unflushed")
        finally:
            conn.close()


def _claim(conn: sqlite3.Connection, target: StateStore, owns: Callable[[Sequence[str]], set[str]]) -> int:
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"sessions", "messages"} <= tables:
            conn.execute("ROLLBACK")
            return 0
        claimed = 0
        # A session row without messages, or (never written by 0.1) messages without a row.
        keys = conn.execute(
            "SELECT user_id, session_id FROM sessions UNION SELECT user_id, session_id FROM messages ORDER BY 1, 2"
        ).fetchall()
        for user_id, session_id in keys:
            state = read_state(conn, user_id, session_id)
            ids = [m.id for m in state.messages]
            if ids:
                if not set(owns(ids)) & set(ids):
                    continue
            else:
                log.warning(
                    "Working state of user %r, session %r in the 0.1 file has no recent messages; "
                    "it cannot be matched to a collection and goes to the first collection opened.",
                    user_id,
                    session_id,
                )
            if session_id not in target.sessions(user_id):  # else copied before a crash
                target.replace(state)
            conn.execute("DELETE FROM messages WHERE user_id=? AND session_id=?", (user_id, session_id))
            conn.execute("DELETE FROM sessions WHERE user_id=? AND session_id=?", (user_id, session_id))
            claimed += 1
    except BaseException:
        if conn.in_transaction:  # an I/O error may have rolled it back already
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return claimed
