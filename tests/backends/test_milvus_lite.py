"""Milvus Lite by a local path, run through the shared conformance suite."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_vec.backends import Backend
from memory_vec.backends._milvus_rows import request_batches, to_row
from memory_vec.backends.milvus import MilvusBackend
from memory_vec.testing.conformance import BackendConformance, make_record

pytestmark = pytest.mark.integration


class TestMilvusLite(BackendConformance):
    supports_reopen = True
    exclusive_process_lock = True  # a Lite path is single-process (StoreLockedError)
    large_batch_size = 10_000

    @pytest.fixture
    def backend(self, tmp_path: Path) -> Iterator[MilvusBackend]:
        path = tmp_path / "milvus.db"
        b = MilvusBackend(str(path), collection="conformance")
        yield b
        b.close()
        shutil.rmtree(path, ignore_errors=True)

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, MilvusBackend)
        return MilvusBackend(backend.uri, collection=backend.collection)

    def subprocess_code(self, backend: Backend) -> str:
        assert isinstance(backend, MilvusBackend)
        return (
            "from memory_vec.backends.milvus import MilvusBackend\n"
            f"backend = MilvusBackend({backend.uri!r}, collection={backend.collection!r})\n"
        )

    def seal(self, backend: Backend) -> None:
        assert isinstance(backend, MilvusBackend)
        backend.flush()


def test_unknown_or_bad_options_are_config_errors_before_anything_is_created(tmp_path: Path) -> None:
    from memory_vec import MemoryConfig, MemoryCore
    from memory_vec._model.errors import ConfigError
    from memory_vec.testing import DeterministicHashEmbedder

    store = tmp_path / "store"
    for options, named in (
        ({"consistency": "Strong"}, "consistency"),
        ({"consistency_level": "Sometimes"}, "consistency_level"),
    ):
        config = MemoryConfig(backend="milvus", persist_dir=str(store), backend_options=options)
        with pytest.raises(ConfigError, match=named):
            MemoryCore(config, embedder=DeterministicHashEmbedder(dimension=16))
        assert not (store / "milvus.db").exists()


def test_consistency_level_is_taken_from_backend_options(tmp_path: Path) -> None:
    from memory_vec import MemoryConfig

    config = MemoryConfig(
        backend="milvus",
        persist_dir=str(tmp_path),
        backend_options={"consistency_level": "Strong", "exact_fallback_limit": 0},
    )
    backend = MilvusBackend.from_config(config)
    assert (backend._consistency, backend._exact_limit) == ("Strong", 0)


def test_upserts_of_records_at_the_limits_are_split_below_the_servers_request_size() -> None:
    # A 2.3.5 server refused one request of 600 such rows (79 MB > 64 MiB).
    big = make_record("x", text="語" * 21845, metadata={"pad": "語" * 21842})
    rows = [to_row(big.copy(id=f"b{i}"), np.ones(384, dtype=np.float32)) for i in range(600)]
    batches = list(request_batches(rows, 1000))
    assert sum(len(b) for b in batches) == 600 and len(batches) > 1
    assert all(len(json.dumps(b, ensure_ascii=False).encode()) < 64 << 20 for b in batches)
    small = [to_row(make_record(f"s{i}"), np.ones(8, dtype=np.float32)) for i in range(2500)]
    assert [len(b) for b in request_batches(small, 1000)] == [1000, 1000, 500]


def test_rows_decoded_in_bulk_equal_what_pymilvus_decodes_row_by_row(tmp_path: Path) -> None:
    # decoded() reads pymilvus' lazy columns directly (no public API): it must
    # give exactly the rows pymilvus itself gives, and fall back when unsure.
    from pymilvus import MilvusClient

    from memory_vec.backends import _milvus_schema
    from memory_vec.backends._milvus_rows import from_row
    from memory_vec.backends._milvus_scan import RowReader, decoded
    from memory_vec.backends.base import RecordFilter

    client = MilvusClient(str(tmp_path / "decode.db"))
    _milvus_schema.create(
        client,
        "c",
        dimension=8,
        model_id="m",
        partition_key=False,
        num_partitions=1,
        index_type="FLAT",
        index_params={},
        timeout=30,
    )
    rng = np.random.default_rng(7)
    metadata = [{}, {"topic": "预算", "nested": {"a": [1, 2.5, None]}}, {"emoji": "👍", "n": -3}, {"s": "x" * 500}]
    records = [
        make_record(f"r{i}", text=f"第{i}条", metadata=metadata[i % 4], source_ids=[f"r{i - 1}"] if i else [])
        for i in range(37)
    ]
    vectors = rng.standard_normal((37, 8)).astype(np.float32)
    client.insert("c", [to_row(r, v) for r, v in zip(records, vectors, strict=True)])
    fields = [*_milvus_schema.OUTPUT, "vector"]

    def query() -> list[dict[str, object]]:
        return client.query("c", filter='id != ""', output_fields=fields, limit=100)  # type: ignore[no-any-return]

    fast, public = decoded(query()), [dict(row) for row in query()]
    assert len(fast) == 37 and [row["id"] for row in fast] == [row["id"] for row in public]
    for mine, theirs in zip(fast, public, strict=True):
        assert mine.keys() == theirs.keys()
        assert isinstance(mine["vector"], np.ndarray) and mine["vector"].dtype == np.float32
        np.testing.assert_array_equal(mine["vector"], np.asarray(theirs["vector"], dtype=np.float32))
        assert {k: v for k, v in mine.items() if k != "vector"} == {k: v for k, v in theirs.items() if k != "vector"}
        assert from_row(mine) == from_row(theirs)
    by_id = {row["id"]: row for row in fast}
    for record, vector in zip(records, vectors, strict=True):
        assert from_row(by_id[record.id]) == record
        np.testing.assert_array_equal(by_id[record.id]["vector"], vector)

    # Paged by our id cursor, 10 rows a page: every record once, decoded, the cursor read from decoded rows.
    reader = RowReader(client, "c", "Strong", 30, 10, False, lambda action: contextlib.nullcontext())
    paged = list(reader.with_vectors(RecordFilter(include_superseded=True, include_archived=True)))
    assert sorted(record.id for record, _ in paged) == sorted(r.id for r in records)
    for record, vector in paged:
        assert record == next(r for r in records if r.id == record.id)
        np.testing.assert_array_equal(vector, by_id[record.id]["vector"])

    touched = query()
    _ = touched[3]  # pymilvus has decoded one row itself: read them all its way
    assert [row["id"] for row in decoded(touched)] == [row["id"] for row in public]
    assert decoded(public) == public  # plain dicts (another pymilvus) pass through
    assert decoded(client.query("c", filter='id == "none"', output_fields=fields)) == []
    client.close()
