"""The SQLite backend against the conformance suite, plus its file layout."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_vec import MemoryConfig
from memory_vec._model.errors import ConfigError, EmbeddingModelMismatchError
from memory_vec.backends import Backend, RecordFilter, create_backend
from memory_vec.backends.sqlite import SQLiteBackend
from memory_vec.testing.conformance import BackendConformance, make_record, unit_vector


class TestSQLiteBackend(BackendConformance):
    """A file on disk: survives close() and new processes; processes may write at once."""

    supports_reopen = True
    supports_multiprocess = True

    @pytest.fixture
    def backend(self, tmp_path: Path) -> Iterator[SQLiteBackend]:
        store = SQLiteBackend(path=tmp_path / "vectors.sqlite3", collection="conformance")
        yield store
        store.close()

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, SQLiteBackend)
        return SQLiteBackend(path=backend.path, collection=backend.collection_name)

    def subprocess_code(self, backend: Backend) -> str:
        assert isinstance(backend, SQLiteBackend)
        return textwrap.dedent(f"""
            from memory_vec.backends.sqlite import SQLiteBackend
            backend = SQLiteBackend(path={backend.path!r}, collection={backend.collection_name!r})
        """)


def test_two_collections_in_one_file_never_see_each_other(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite3"
    a, b = SQLiteBackend(path=path, collection="a"), SQLiteBackend(path=path, collection="b")
    try:
        a.open(dimension=8, model_id="m8")
        b.open(dimension=4, model_id="m4")  # each collection has its own model
        same = make_record("same-id")
        a.upsert([same, make_record("only-a")], np.stack([unit_vector(1, 8), unit_vector(2, 8)]))
        b.upsert([same.copy(text="b's copy")], np.stack([unit_vector(1, 4)]))
        everything = RecordFilter(include_superseded=True, include_archived=True)
        assert (a.count(), b.count()) == (2, 1)
        assert [r.text for r in b.get(["same-id", "only-a"])] == ["b's copy"]
        assert [h.record.id for h in b.query(unit_vector(1, 4), k=5, where=RecordFilter(user_id="u1"))] == ["same-id"]
        assert b.delete(where=everything) == 1
        assert (a.count(), b.count()) == (2, 0)
        b.drop()
        assert {r.id for r in a.scan(everything)} == {"same-id", "only-a"}
        with pytest.raises(EmbeddingModelMismatchError, match="'m8'"):
            SQLiteBackend(path=path, collection="a").open(dimension=4, model_id="m4")
    finally:
        a.close()
        b.close()


def test_config_builds_the_file_under_persist_dir(tmp_path: Path) -> None:
    backend = create_backend(MemoryConfig(backend="sqlite", persist_dir=str(tmp_path), collection="cfg"))
    try:
        backend.open(dimension=4, model_id="m4")
        backend.upsert([make_record("r1")], np.eye(4, dtype=np.float32)[:1])
        assert (tmp_path / "vectors.sqlite3").is_file() and backend.count() == 1
    finally:
        backend.close()
    with pytest.raises(ConfigError, match="takes none"):
        create_backend(MemoryConfig(backend="sqlite", persist_dir=str(tmp_path), backend_options={"x": 1}))
