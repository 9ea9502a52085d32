"""SQLiteStateStore through the state conformance suite (threads and processes), and its file layout."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_vec import MemoryConfig
from memory_vec._model.errors import ConfigError
from memory_vec.state import (
    InMemoryStateStore,
    NewMessage,
    SQLiteStateStore,
    StateStore,
    create_state_store,
    sqlite_state_path,
)
from memory_vec.testing.state_conformance import StateStoreConformance, new_message


class TestSQLiteStateStore(StateStoreConformance):
    supports_reopen = True
    supports_multiprocess = True

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStateStore]:
        s = SQLiteStateStore(str(tmp_path / "state.sqlite3"))
        yield s
        s.close()

    def reopen(self, store: SQLiteStateStore) -> SQLiteStateStore:  # type: ignore[override]
        return SQLiteStateStore(store.path)

    def subprocess_code(self, store: SQLiteStateStore) -> str:  # type: ignore[override]
        return f"from memory_vec.state import SQLiteStateStore\nstore = SQLiteStateStore({store.path!r})\n"


# --- one file per (backend kind, collection) -------------------------------------------------
HOSTILE_COLLECTIONS = (
    "a/b",
    "../up",
    "..",
    ".",
    "a\\b",
    "c:d",
    "用户",
    "a~b",
    " spaced ",
    "con",
    "nul.txt",
    "x" * 256,
    "x" * 255 + "y",
    "a?b#c%d",
    "memory-a",
)


def test_sqlite_state_path_keeps_plain_names(tmp_path: Path) -> None:
    assert sqlite_state_path(str(tmp_path), "chroma", "notes_v2.1-x") == str(
        tmp_path / "state" / "chroma-notes_v2.1-x.sqlite3"
    )
    assert sqlite_state_path("/data", "milvus", "memory_vec") == "/data/state/milvus-memory_vec.sqlite3"


def test_sqlite_state_path_never_shares_a_file(tmp_path: Path) -> None:
    names = [*HOSTILE_COLLECTIONS, "Chat", "chat", "CHAT", "a_b", "a-b"]
    paths = [sqlite_state_path(str(tmp_path), "chroma", name) for name in names]
    # Distinct even on a case-insensitive file system, all directly under <persist_dir>/state.
    assert len({p.lower() for p in paths}) == len(names)
    for path in paths:
        assert os.path.dirname(path) == str(tmp_path / "state")
        base = os.path.basename(path)
        assert re.fullmatch(r"chroma-[A-Za-z0-9._~-]+\.sqlite3", base) and len(base) < 120, base
    # The backend kind is part of the name.
    assert sqlite_state_path("/d", "chroma", "x") != sqlite_state_path("/d", "milvus", "x")
    # Each path works: one store per name, each with its own data.
    for name, path in zip(names, paths):
        store = SQLiteStateStore(path)
        store.append("u1", "s1", [new_message(1, name)])
        store.close()
    assert len(os.listdir(tmp_path / "state")) >= len(names)
    for name, path in zip(names, paths):
        store = SQLiteStateStore(path)
        assert [m.content for m in store.load("u1", "s1").messages] == [name]
        store.close()


def test_sqlite_state_path_rejects_a_backend_that_cannot_name_a_file() -> None:
    with pytest.raises(ConfigError, match="backend"):
        sqlite_state_path("/d", "../x", "c")


def test_create_state_store_keys_sqlite_by_collection(tmp_path: Path) -> None:
    def make(collection: str, backend: str = "chroma") -> StateStore:
        return create_state_store(MemoryConfig(backend=backend, persist_dir=str(tmp_path), collection=collection))

    a, b, a_milvus = make("a"), make("b"), make("a", "milvus")
    try:
        assert isinstance(a, SQLiteStateStore) and isinstance(b, SQLiteStateStore)
        assert isinstance(a_milvus, SQLiteStateStore)
        assert a.path == sqlite_state_path(str(tmp_path), "chroma", "a") != b.path != a_milvus.path
        a.append("u1", "s1", [new_message(1)])
        a.new_keyword_version("u1", "v1")
        assert b.load("u1", "s1").messages == [] and a_milvus.sessions("u1") == []
        assert b.keyword_version("u1") is None
        assert not os.path.exists(tmp_path / "state.sqlite3")  # the 0.1 single file is not created
    finally:
        for s in (a, b, a_milvus):
            s.close()
    assert isinstance(create_state_store(MemoryConfig(backend="memory")), InMemoryStateStore)


def test_forget_user_leaves_no_row_naming_the_user(tmp_path: Path) -> None:
    import sqlite3

    store = SQLiteStateStore(str(tmp_path / "state.sqlite3"))
    store.append("alice", "s1", [NewMessage("m1", "user", "hello", 1.0, 1, {})])
    store.new_keyword_version("alice", "v1")
    store.forget_user("alice")
    store.close()
    conn = sqlite3.connect(str(tmp_path / "state.sqlite3"))
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for table in tables:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        if "user_id" in columns:
            assert conn.execute(f"SELECT COUNT(*) FROM {table} WHERE user_id='alice'").fetchone() == (0,), table
    conn.close()
