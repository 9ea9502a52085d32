"""Chroma's row layout: a dozen metadata keys per row, and rows of the first
layout (every field a key) still read, filtered and rewritten correctly."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_vec._model.records import MemoryRecord
from memory_vec.backends import RecordFilter
from memory_vec.backends._chroma_rows import RECORD_JSON, decode, encode
from memory_vec.backends.chroma import ChromaBackend
from memory_vec.testing.conformance import DIMENSION, MODEL_ID, T0, make_record, vectors_for

pytestmark = pytest.mark.integration

EVERYTHING = RecordFilter(include_superseded=True, include_archived=True)
COMPACT_KEYS = {
    "role",
    "user_id",
    "session_id",
    "timestamp",
    "kind",
    "seq",
    "visibility",
    "archived",
    "agent_id",
    "agent_id_is_null",
    "valid_to_is_null",
    RECORD_JSON,
}


def first_layout(record: MemoryRecord) -> dict[str, Any]:
    """The metadata the first layout wrote (memory-vec up to 2026-12-02), kept here to test reading it."""
    meta: dict[str, Any] = {
        name: getattr(record, name)
        for name in (
            "role",
            "user_id",
            "session_id",
            "timestamp",
            "kind",
            "seq",
            "importance",
            "visibility",
            "pinned",
            "archived",
            "recall_count",
        )
    }
    for name in ("agent_id", "superseded_by", "subject"):
        value = getattr(record, name)
        meta[name], meta[f"{name}_is_null"] = ("" if value is None else value), value is None
    for name in ("valid_to", "expire_at", "last_recalled_at"):
        value = getattr(record, name)
        meta[name], meta[f"{name}_is_null"] = (0.0 if value is None else float(value)), value is None
    meta["source_ids"] = json.dumps(record.source_ids)
    meta["metadata_json"] = json.dumps(record.metadata, ensure_ascii=False)
    for key, value in record.metadata.items():
        if isinstance(value, bool | str) or (isinstance(value, int | float) and math.isfinite(value)):
            meta["m." + key] = value
    return meta


def rich(record_id: str, **fields: Any) -> MemoryRecord:
    """A record with every field away from its default."""
    base: dict[str, Any] = {
        "text": f"预算是 {record_id} 🎯",
        "role": "assistant",
        "kind": "fact",
        "seq": 7,
        "timestamp": T0 + 3.25,
        "agent_id": "bot",
        "importance": 0.875,
        "metadata": {"topic": "budget", "n": 3, "flag": True, "nested": {"a": [1, "二"]}},
        "valid_to": T0 + 9.5,
        "superseded_by": "newer",
        "visibility": "agent",
        "subject": "budget",
        "source_ids": ["m1", "m2"],
        "pinned": True,
        "expire_at": T0 + 86400.0,
        "archived": False,
        "recall_count": 4,
        "last_recalled_at": T0 + 7.0,
    }
    base.update(fields)
    return make_record(record_id, **base)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChromaBackend]:
    backend = ChromaBackend(path=tmp_path / "chroma", collection="layout")
    backend.open(dimension=DIMENSION, model_id=MODEL_ID)
    yield backend
    backend.close()


def raw(store: ChromaBackend) -> Any:
    return store._readable()  # the chromadb collection itself


def test_a_row_has_a_dozen_keys_and_round_trips_every_field(store: ChromaBackend) -> None:
    records = [
        rich("r1"),
        rich(
            "r2",
            agent_id=None,
            valid_to=None,
            superseded_by=None,
            subject=None,
            expire_at=None,
            last_recalled_at=None,
            metadata={},
        ),
    ]
    store.upsert(records, vectors_for(records))
    page = raw(store).get(ids=["r1", "r2"], include=["metadatas"])
    for meta in page["metadatas"]:
        assert set(meta) == COMPACT_KEYS
    assert store.get(["r1", "r2"], where=EVERYTHING) == records
    assert decode("r1", records[0].text, encode(records[0])) == records[0]


def test_rows_of_the_first_layout_are_read_filtered_and_rewritten(store: ChromaBackend) -> None:
    old = [
        rich("old1", valid_to=None, superseded_by=None, archived=False),
        rich("old2", metadata={"topic": "travel"}, valid_to=None, superseded_by=None),
    ]
    new = [rich("new1", valid_to=None, superseded_by=None)]
    raw(store).upsert(
        ids=[r.id for r in old],
        embeddings=vectors_for(old),
        metadatas=[first_layout(r) for r in old],
        documents=[r.text for r in old],
    )
    store.upsert(new, vectors_for(new))
    assert store.get(["old1", "old2", "new1"], where=EVERYTHING) == [*old, *new]
    # The caller's metadata filters both layouts alike, in every read and in delete.
    budget = RecordFilter(user_id="u1", metadata={"topic": "budget"}, include_shared=False)
    assert [r.id for r in store.scan(budget)] == ["new1", "old1"]  # same time and seq: by id
    assert store.count(budget) == 2
    assert {h.record.id for h in store.query(vectors_for(old)[0], k=5, where=budget)} == {"old1", "new1"}
    travel = RecordFilter(metadata={"topic": "travel"})
    assert store.count(travel) == 1
    # A replica's load (a user's scope with its vectors) reads both layouts too.
    scope = RecordFilter(user_id="u1", include_shared=True, include_superseded=True, include_archived=True)
    loaded, vectors = store.scan_vectors(scope)
    assert sorted(r.id for r in loaded) == sorted(r.id for r in store.scan(scope)) == ["new1", "old1", "old2"]
    assert {r.id: r for r in loaded} == {r.id: r for r in [*old, *new]}
    assert np.allclose(vectors, vectors_for(loaded), atol=1e-5)
    # Rewriting an old row (an update: conflict-overwrite, reinforcement) leaves only the new keys.
    changed = old[0].copy(importance=0.25, metadata={"topic": "budget", "v": 2})
    store.update([changed])
    [meta] = raw(store).get(ids=["old1"], include=["metadatas"])["metadatas"]
    assert set(meta) == COMPACT_KEYS
    assert store.get(["old1"], where=EVERYTHING) == [changed]
    # So does a re-upsert (reembed, import over an existing id).
    store.upsert([old[1]], vectors_for([old[1]]))
    [meta] = raw(store).get(ids=["old2"], include=["metadatas"])["metadatas"]
    assert set(meta) == COMPACT_KEYS
    assert store.get(["old2"], where=EVERYTHING) == [old[1]]
    assert store.delete(where=travel) == 1
    assert {r.id for r in store.scan(EVERYTHING)} == {"old1", "new1"}


def test_metadata_filters_do_not_reach_other_users_or_widen_a_delete(store: ChromaBackend) -> None:
    records = [make_record(f"a{i}", user_id="alice", metadata={"topic": "budget" if i % 2 else "x"}) for i in range(6)]
    records += [make_record(f"b{i}", user_id="bob", metadata={"topic": "budget"}) for i in range(3)]
    store.upsert(records, vectors_for(records))
    where = RecordFilter(user_id="alice", metadata={"topic": "budget"})
    assert store.delete(where=where) == 3
    left = {r.id for r in store.scan(EVERYTHING)}
    assert left == {"a0", "a2", "a4", "b0", "b1", "b2"}
