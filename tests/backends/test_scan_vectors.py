"""``scan_vectors``: the records of ``scan`` with their stored vectors (SQLite, Milvus Lite).

The vectors are random (not unit, to catch a backend that returns something
else than it stores, or misaligns rows); a backend may store them normalised,
so they are compared by cosine.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_vec._model.records import MemoryRecord
from memory_vec.backends.base import RecordFilter
from memory_vec.backends.milvus import MilvusBackend
from memory_vec.backends.sqlite import SQLiteBackend
from memory_vec.testing.conformance import DIMENSION, MODEL_ID, make_record

pytestmark = pytest.mark.integration

T0 = 1_700_000_000.0


def _corpus() -> list[MemoryRecord]:
    return [
        make_record("a1", user_id="alice", seq=1, timestamp=T0, metadata={"topic": "budget", "n": 3}),
        make_record("a2", user_id="alice", seq=2, timestamp=T0 + 1, kind="fact", metadata={"topic": "travel"}),
        make_record(
            "a3",
            user_id="alice",
            seq=3,
            timestamp=T0 + 2,
            kind="fact",
            valid_to=T0 + 5,
            superseded_by="a2",
            metadata={"topic": "budget"},
        ),
        make_record("a4", user_id="alice", seq=4, timestamp=T0 + 3, archived=True),
        make_record("a5", user_id="alice", session_id="s2", seq=5, timestamp=T0 + 4, role="assistant"),
        make_record("b1", user_id="bob", seq=1, timestamp=T0, metadata={"topic": "budget"}),
        make_record("b2", user_id="bob", seq=2, timestamp=T0 + 1, kind="fact"),
        make_record("g1", user_id="bob", seq=3, timestamp=T0 + 2, visibility="global", kind="fact"),
    ]


FILTERS = {
    "alice": RecordFilter(user_id="alice"),
    "bob": RecordFilter(user_id="bob"),
    "alice+shared": RecordFilter(user_id="alice", include_shared=True),
    "alice facts": RecordFilter(user_id="alice", kinds=("fact",)),
    "alice superseded": RecordFilter(user_id="alice", include_superseded=True),
    "alice everything": RecordFilter(user_id="alice", include_superseded=True, include_archived=True),
    "alice session s2": RecordFilter(user_id="alice", session_id="s2"),
    "alice ids": RecordFilter(user_id="alice", ids=("a1", "a3", "b1", "missing"), include_superseded=True),
    "alice budget": RecordFilter(user_id="alice", metadata={"topic": "budget"}, include_superseded=True),
    "metadata number": RecordFilter(user_id="alice", metadata={"n": 3}),
    "every user": RecordFilter(include_superseded=True, include_archived=True),
    "nobody": RecordFilter(user_id="carol"),
    "no ids": RecordFilter(user_id="alice", ids=()),
}


def _cosines(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1)
    return np.asarray((got * want).sum(axis=1) / norms)


@pytest.fixture(params=["sqlite", "milvus-lite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        store: Any = SQLiteBackend(path=tmp_path / "vectors.sqlite3", collection="scan_vectors")
    else:
        store = MilvusBackend(str(tmp_path / "milvus.db"), collection="scan_vectors")
    store.open(dimension=DIMENSION, model_id=MODEL_ID)
    yield store
    store.close()
    shutil.rmtree(tmp_path / "milvus.db", ignore_errors=True)


@pytest.fixture
def written(backend: Any) -> dict[str, np.ndarray]:
    records = _corpus()
    vectors = np.random.default_rng(7).normal(size=(len(records), DIMENSION)).astype(np.float32) * 3
    backend.upsert(records, vectors)
    return {r.id: v for r, v in zip(records, vectors)}


def _check(backend: Any, where: RecordFilter, written: dict[str, np.ndarray]) -> list[MemoryRecord]:
    records, vectors = backend.scan_vectors(where)
    assert isinstance(vectors, np.ndarray) and vectors.dtype == np.float32
    assert vectors.shape == (len(records), DIMENSION)
    assert sorted(records, key=lambda r: r.id) == sorted(backend.scan(where), key=lambda r: r.id)
    assert len({r.id for r in records}) == len(records)
    if records:
        want = np.stack([written[r.id] for r in records])
        assert _cosines(vectors, want) == pytest.approx(1.0, abs=1e-5)
    return list(records)


@pytest.mark.parametrize("name", list(FILTERS))
def test_records_are_those_of_scan_each_with_its_stored_vector(
    backend: Any, written: dict[str, np.ndarray], name: str
) -> None:
    where = FILTERS[name]
    records = _check(backend, where, written)
    assert {r.id for r in records} == {r.id for r in _corpus() if where.matches(r)}


def test_filters_select_what_they_should(backend: Any, written: dict[str, np.ndarray]) -> None:
    def ids(name: str) -> set[str]:
        return {r.id for r in backend.scan_vectors(FILTERS[name])[0]}

    assert ids("alice") == {"a1", "a2", "a5"}
    assert ids("alice+shared") == {"a1", "a2", "a5", "g1"}
    assert ids("alice facts") == {"a2"}
    assert ids("alice superseded") == {"a1", "a2", "a3", "a5"}
    assert ids("alice ids") == {"a1", "a3"}
    assert ids("alice budget") == {"a1", "a3"}
    assert ids("metadata number") == {"a1"}
    assert ids("every user") == set(written)


def test_no_match_is_an_empty_matrix_of_the_dimension(backend: Any, written: dict[str, np.ndarray]) -> None:
    for where in (FILTERS["nobody"], FILTERS["no ids"]):
        records, vectors = backend.scan_vectors(where)
        assert records == []
        assert vectors.shape == (0, DIMENSION) and vectors.dtype == np.float32


def test_the_cosine_of_a_returned_vector_is_what_query_reports(backend: Any, written: dict[str, np.ndarray]) -> None:
    q = np.random.default_rng(11).normal(size=DIMENSION).astype(np.float32)
    where = FILTERS["alice+shared"]
    records, vectors = backend.scan_vectors(where)
    mine = dict(zip([r.id for r in records], _cosines(vectors, np.tile(q, (len(records), 1)))))
    hits = backend.query(q, k=len(records), where=where)
    assert {h.record.id for h in hits} == set(mine)
    for hit in hits:
        assert hit.similarity == pytest.approx(mine[hit.record.id], abs=1e-4)


def test_a_deleted_record_is_gone_and_an_updated_one_keeps_its_vector(
    backend: Any, written: dict[str, np.ndarray]
) -> None:
    assert backend.delete(ids=["a1"]) == 1
    (a2,) = backend.get(["a2"])
    backend.update([a2.copy(importance=0.9, metadata={"topic": "moved"})])
    records = _check(backend, FILTERS["alice everything"], written)
    assert "a1" not in {r.id for r in records}
    (updated,) = [r for r in records if r.id == "a2"]
    assert updated.importance == pytest.approx(0.9) and updated.metadata == {"topic": "moved"}
    assert updated.text == a2.text
    # An update that stops a record matching takes it out, as in scan.
    assert {r.id for r in _check(backend, FILTERS["alice budget"], written)} == {"a3"}


def test_an_upsert_replaces_the_vector(backend: Any, written: dict[str, np.ndarray]) -> None:
    fresh = np.random.default_rng(3).normal(size=(1, DIMENSION)).astype(np.float32)
    (b1,) = backend.get(["b1"])
    backend.upsert([b1.copy(text="rewritten")], fresh)
    records = _check(backend, FILTERS["bob"], {**written, "b1": fresh[0]})
    assert {r.id: r.text for r in records}["b1"] == "rewritten"
