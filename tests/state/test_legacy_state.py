"""Moving sessions out of the 0.1 single state file (``<persist_dir>/state.sqlite3``)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from memory_vec._model.errors import StateStoreError
from memory_vec.state import (
    SQLiteStateStore,
    StateMessage,
    WorkingState,
    claim_legacy_sessions,
    legacy_state_path,
    sqlite_state_path,
)
from memory_vec.testing.state_conformance import in_threads, new_message

# Copied from memory_vec/state/sqlite.py of 0.1 (the layout on users' disks).
OLD_SCHEMA = """
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


def _msg(seq: int, msg_id: str, **fields: object) -> StateMessage:
    return StateMessage(
        seq,
        msg_id,
        str(fields.get("role", "user")),
        str(fields.get("content", f"text {msg_id}")),
        1_700_000_000.123456 + seq,
        seq,
        {"k": [1, True, None], "n": "日本語"},
    )


# Two collections, A (ids a*) and B (ids b*), plus one session folded completely.
SESSIONS = [
    WorkingState("u1", "s1", "summary of s1", 3, [_msg(3, "a1"), _msg(4, "a2", role="assistant")], 5, 2, 10.0),
    WorkingState("u:2", "s:2", "", 0, [_msg(1, "a3", content='q"uote 🙂')], 2, 0, 11.0),
    WorkingState("u1", "s2", "B's summary", 1, [_msg(1, "b1"), _msg(2, "b2")], 3, 0, 12.0),
    # One id A holds, one nobody holds (its vector write failed): A's.
    WorkingState("u1", "mixed", "", 0, [_msg(1, "x1"), _msg(2, "a4")], 3, 0, 13.0),
    WorkingState("u3", "folded", "all of it", 4, [], 9, 8, 14.0),
]
A_SESSIONS = {("u1", "s1"), ("u:2", "s:2"), ("u1", "mixed"), ("u3", "folded")}


def write_legacy(path: Path, sessions: Sequence[WorkingState]) -> None:
    """Write ``sessions`` the way 0.1's SQLiteStateStore stored them."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(OLD_SCHEMA)
    for s in sessions:
        conn.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
            (s.user_id, s.session_id, s.summary, s.summary_tokens, s.next_seq, s.folded_through, s.updated_at),
        )
        conn.executemany(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    s.user_id,
                    s.session_id,
                    m.seq,
                    m.id,
                    m.role,
                    m.content,
                    m.timestamp,
                    m.tokens,
                    json.dumps(m.metadata, ensure_ascii=False),
                )
                for m in s.messages
            ],
        )
    conn.close()


def legacy_keys(path: Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT user_id, session_id FROM sessions UNION SELECT user_id, session_id FROM messages"
        ).fetchall()
    finally:
        conn.close()
    return {(u, s) for u, s in rows}


def owned_by(prefix: str) -> Callable[[Sequence[str]], set[str]]:
    return lambda ids: {i for i in ids if i.startswith(prefix)}


def assert_same(store: SQLiteStateStore, expected: WorkingState) -> None:
    got = store.load(expected.user_id, expected.session_id)
    assert (got.summary, got.summary_tokens, got.next_seq, got.folded_through, got.messages) == (
        expected.summary,
        expected.summary_tokens,
        expected.next_seq,
        expected.folded_through,
        expected.messages,
    )


@pytest.fixture
def persist_dir(tmp_path: Path) -> Path:
    d = tmp_path / "dir with space?#%"  # the file is opened by URI: these must be quoted
    d.mkdir()
    return d


@pytest.fixture
def stores(persist_dir: Path) -> Iterator[dict[str, SQLiteStateStore]]:
    made = {c: SQLiteStateStore(sqlite_state_path(str(persist_dir), "chroma", c)) for c in ("A", "B")}
    yield made
    for s in made.values():
        s.close()


def test_two_collections_split_the_legacy_file(
    persist_dir: Path, stores: dict[str, SQLiteStateStore], caplog: pytest.LogCaptureFixture
) -> None:
    legacy = Path(legacy_state_path(str(persist_dir)))
    write_legacy(legacy, SESSIONS)
    with caplog.at_level(logging.WARNING, logger="memory_vec"):
        assert claim_legacy_sessions(str(legacy), stores["A"], owned_by("a")) == 4
    assert "'u3'" in caplog.text and "'folded'" in caplog.text  # the unattributable session is named
    for s in SESSIONS:
        if (s.user_id, s.session_id) in A_SESSIONS:
            assert_same(stores["A"], s)
    assert stores["A"].sessions("u1") == ["mixed", "s1"]
    assert legacy_keys(legacy) == {("u1", "s2")}  # B's session waits for B
    assert claim_legacy_sessions(str(legacy), stores["A"], owned_by("a")) == 0

    assert claim_legacy_sessions(str(legacy), stores["B"], owned_by("b")) == 1
    assert_same(stores["B"], SESSIONS[2])
    assert stores["B"].sessions("u3") == []  # the folded session went to A only
    assert legacy_keys(legacy) == set()
    # Claimed sessions keep working: sequence numbers continue.
    assert stores["A"].append("u1", "s1", [new_message(9)]) == [5]


def test_sessions_owned_by_nobody_stay(persist_dir: Path, stores: dict[str, SQLiteStateStore]) -> None:
    legacy = Path(legacy_state_path(str(persist_dir)))
    write_legacy(legacy, SESSIONS[:3])
    assert claim_legacy_sessions(str(legacy), stores["A"], lambda ids: set()) == 0
    assert legacy_keys(legacy) == {(s.user_id, s.session_id) for s in SESSIONS[:3]}
    assert stores["A"].sessions("u1") == []


def test_rerun_after_a_crash_keeps_the_copy(persist_dir: Path, stores: dict[str, SQLiteStateStore]) -> None:
    # A crash after copying, before the delete committed: the copy exists and
    # may have moved on since; a rerun must not overwrite it.
    legacy = Path(legacy_state_path(str(persist_dir)))
    write_legacy(legacy, SESSIONS[:1])
    stores["A"].replace(SESSIONS[0])
    stores["A"].append("u1", "s1", [new_message(5)])
    assert claim_legacy_sessions(str(legacy), stores["A"], owned_by("a")) == 1
    assert [m.id for m in stores["A"].load("u1", "s1").messages] == ["a1", "a2", "m5"]
    assert legacy_keys(legacy) == set()


def test_a_failure_leaves_the_legacy_file_as_it_was(persist_dir: Path, stores: dict[str, SQLiteStateStore]) -> None:
    legacy = Path(legacy_state_path(str(persist_dir)))
    write_legacy(legacy, SESSIONS)
    calls = 0

    def flaky(ids: Sequence[str]) -> set[str]:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise ConnectionError("backend down")
        return owned_by("a")(ids)

    with pytest.raises(ConnectionError):
        claim_legacy_sessions(str(legacy), stores["A"], flaky)
    assert legacy_keys(legacy) == {(s.user_id, s.session_id) for s in SESSIONS}
    assert claim_legacy_sessions(str(legacy), stores["A"], owned_by("a")) == 4  # the rerun finishes
    for s in SESSIONS:
        if (s.user_id, s.session_id) in A_SESSIONS:
            assert_same(stores["A"], s)


def test_missing_or_foreign_legacy_file(persist_dir: Path, stores: dict[str, SQLiteStateStore]) -> None:
    legacy = Path(legacy_state_path(str(persist_dir)))
    assert claim_legacy_sessions(str(legacy), stores["A"], owned_by("a")) == 0
    assert not legacy.exists()  # not created
    sqlite3.connect(legacy).close()  # an empty database: nothing to claim
    assert claim_legacy_sessions(str(legacy), stores["A"], owned_by("a")) == 0
    legacy.write_bytes(b"not a database" * 100)
    with pytest.raises(StateStoreError, match=r"0\.1 working-state file"):
        claim_legacy_sessions(str(legacy), stores["A"], owned_by("a"))


def test_concurrent_claims(persist_dir: Path, stores: dict[str, SQLiteStateStore]) -> None:
    """Two collections, each opened twice at once: every session is claimed exactly once."""
    legacy = Path(legacy_state_path(str(persist_dir)))
    write_legacy(legacy, SESSIONS)
    jobs = [("A", "a"), ("B", "b"), ("A", "a"), ("B", "b")]
    claimed = in_threads(4, lambda t: claim_legacy_sessions(str(legacy), stores[jobs[t][0]], owned_by(jobs[t][1])))
    assert sum(claimed) == len(SESSIONS)
    assert legacy_keys(legacy) == set()
    assert [c for c in ("A", "B") if stores[c].sessions("u3") == ["folded"]] in (["A"], ["B"])  # exactly one
    assert stores["A"].sessions("u1") == ["mixed", "s1"] and stores["B"].sessions("u1") == ["s2"]
    for s in SESSIONS[:4]:
        assert_same(stores["A" if (s.user_id, s.session_id) in A_SESSIONS else "B"], s)
