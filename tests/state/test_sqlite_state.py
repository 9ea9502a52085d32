"""SQLiteStateStore through the state conformance suite (threads and processes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_vec.state import SQLiteStateStore
from memory_vec.testing.state_conformance import StateStoreConformance


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
