"""A real C++ Milvus 2.3 server (PyPI ``milvus``), through the conformance suite."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

from memory_vec.backends import _milvus_schema, _milvus_search
from memory_vec.backends.base import Backend, RecordFilter
from memory_vec.backends.milvus import MilvusBackend
from memory_vec.testing.conformance import DIMENSION, MODEL_ID, make_record, vectors_for
from tests._services import Service
from tests.backends.test_milvus_lite_server import TestMilvusLiteServer as _ServerSuite
from tests.backends.test_milvus_lite_server import scope_index_types

pytestmark = pytest.mark.integration


class TestMilvusServer(_ServerSuite):
    service_fixture = "milvus_server"
    large_batch_size = 5_000  # at 3,000 rows (10 per user) 2.3.5 still found them all

    def seal(self, backend: Backend) -> None:
        assert isinstance(backend, MilvusBackend)
        # Seal the segments and wait for their HNSW index: the narrow-filter
        # test is about the indexed search, which missed rows before the fix.
        backend.flush()
        _unbuilt_indexes(backend, ("vector",), timeout=60)
        time.sleep(5)  # the query node swaps in the indexed segments a moment later


del _ServerSuite  # collected once, under its own module


def _unbuilt_indexes(backend: MilvusBackend, fields: tuple[str, ...], *, timeout: float) -> list[dict[str, object]]:
    """Wait until the index of each of ``fields`` covers every sealed row; returns the
    descriptions of those that still do not when ``timeout`` ends (empty: all built)."""
    client, deadline = backend._client, time.monotonic() + timeout
    while True:
        infos = [client.describe_index(backend.collection, field) for field in fields]
        unbuilt = [i for i in infos if not (i.get("total_rows") and i.get("indexed_rows") == i.get("total_rows"))]
        if not unbuilt or time.monotonic() >= deadline:
            return unbuilt
        time.sleep(0.5)


_CHILD_WRITES = """
import sys
from memory_vec.backends.milvus import MilvusBackend
from memory_vec.testing.conformance import DIMENSION, MODEL_ID, make_record, vectors_for
backend = MilvusBackend(sys.argv[1], collection=sys.argv[2])
backend.open(dimension=DIMENSION, model_id=MODEL_ID)
records = [make_record(f"child-{i}", user_id="u9") for i in range(12)]
backend.upsert(records, vectors_for(records))
backend.close()
"""


@pytest.mark.slow
def test_strong_reader_sees_another_process_writes_at_once(milvus_server: Service) -> None:
    name = f"c_{uuid.uuid4().hex[:12]}"
    reader = MilvusBackend(milvus_server.url, collection=name, consistency_level="Strong")
    reader.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        assert reader.count() == 0
        done = subprocess.run(
            [sys.executable, "-c", _CHILD_WRITES, milvus_server.url, name],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        # Strong: the long-lived reader needs no reopen to see acknowledged writes.
        assert reader.count(RecordFilter(user_id="u9")) == 12
        assert len(reader.scan(RecordFilter(user_id="u9"))) == 12
    finally:
        reader.drop()
        reader.close()


@pytest.mark.slow
def test_a_search_the_server_answers_short_is_completed_and_explained(
    milvus_server: Service,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One user's 300 rows among 6,000 in growing segments: the 2.3 server's
    interim index returns a fraction of them; the backend still answers all
    k (scored exactly) and says once how to make the server's search complete."""
    name = f"c_{uuid.uuid4().hex[:12]}"
    writer = MilvusBackend(milvus_server.url, collection=name)
    writer.open(dimension=DIMENSION, model_id=MODEL_ID)
    # A second client, so this process's own recent writes cannot fill the gap.
    reader = MilvusBackend(milvus_server.url, collection=name, consistency_level="Strong")
    try:
        records = [make_record(f"r{i}", user_id="u0" if i < 300 else f"u{i // 10}") for i in range(6000)]
        for start in range(0, len(records), 1000):
            writer.upsert(records[start : start + 1000], vectors_for(records[start : start + 1000]))
        reader.open(dimension=DIMENSION, model_id=MODEL_ID)
        q = vectors_for(records[:1])[0]
        raw = reader._client.search(
            name,
            data=[q.tolist()],
            limit=200,
            filter='user_id == "u0"',
            output_fields=["id"],
            consistency_level="Strong",
        )
        _milvus_search._told_short.clear()
        with caplog.at_level(logging.WARNING, logger="memory_vec"):
            hits = reader.query(q, k=200, where=RecordFilter(user_id="u0"))
        assert len(hits) == 200
        assert {h.record.user_id for h in hits} == {"u0"}
        assert hits[0].record.id == "r0"  # exact: the query's own row first
        sims = q @ vectors_for([h.record for h in hits]).T
        assert np.allclose([h.similarity for h in hits], sims, atol=1e-5)
        assert np.all(np.diff(sims) <= 1e-6)  # best first
        said = "interimIndex.enableIndex=false" in caplog.text
        assert said == (len(raw[0]) <= 100), (len(raw[0]), caplog.text)  # said when most rows were missed
    finally:
        writer.drop()
        writer.close()
        reader.close()


@pytest.mark.slow
@pytest.mark.parametrize("level", ["Bounded", "Session"])
def test_scans_smaller_than_a_page_as_big_as_one_and_bigger_read_every_row(milvus_server: Service, level: str) -> None:
    """A server scan reads at its level first (one plain read, which holds a small scope whole),
    then pages by id when the scope fills that read: no row lost or repeated at either edge."""
    name = f"pages_{uuid.uuid4().hex[:10]}"
    writer = MilvusBackend(milvus_server.url, collection=name, batch_size=7, consistency_level=level)
    writer.open(dimension=DIMENSION, model_id=MODEL_ID)
    sizes = {"small": 3, "page": 7, "pages": 23}
    records = [make_record(f"{user}-{i:02d}", user_id=user, seq=i) for user, n in sizes.items() for i in range(n)]
    writer.upsert(records, vectors_for(records))
    # Another client (no own writes to merge in: what it reads comes from the server);
    # opening makes one Strong read, so everything acknowledged before is visible.
    reader = MilvusBackend(milvus_server.url, collection=name, batch_size=7, consistency_level=level)
    reader.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        for user, n in sizes.items():
            want = [f"{user}-{i:02d}" for i in range(n)]
            assert [r.id for r in reader.scan(RecordFilter(user_id=user))] == want
            found, vectors = reader.scan_vectors(RecordFilter(user_id=user))
            assert sorted(r.id for r in found) == want and vectors.shape == (n, DIMENSION)
            assert np.allclose(vectors, vectors_for(found), atol=1e-6)
        assert len(reader.scan(RecordFilter())) == sum(sizes.values())
    finally:
        reader.close()
        writer.drop()
        writer.close()


@pytest.mark.slow
def test_a_user_scope_on_a_collection_without_partition_key_is_filtered_without_the_owner_clause(
    milvus_server: Service,
) -> None:
    """A 2.3 server has no partition key: naming the owners prunes nothing there and
    costs a clause over every row. Reads leave it out and stay exact: the user's rows,
    every global row, the agent's rows, and nobody else's."""
    name = f"owner_{uuid.uuid4().hex[:10]}"
    backend = MilvusBackend(milvus_server.url, collection=name)
    backend.open(dimension=DIMENSION, model_id=MODEL_ID)
    assert not backend._pk_enabled  # 2.3: the partition key is off by default (module doc)
    records = [
        make_record("mine", user_id="alice"),
        make_record("mine-fact", user_id="alice", kind="fact"),
        make_record("hers", user_id="bob"),
        make_record("global", user_id="bob", visibility="global"),
        make_record("agent-a", user_id="bob", visibility="agent", agent_id="a"),
        make_record("agent-b", user_id="bob", visibility="agent", agent_id="b"),
    ]
    backend.upsert(records, vectors_for(records))
    filters: list[str] = []
    client = backend._client
    for method in ("query", "search"):

        def recorded(*args: object, _inner: object = getattr(client, method), **kwargs: object) -> object:
            filters.append(str(kwargs.get("filter", "")))
            return _inner(*args, **kwargs)  # type: ignore[operator]

        setattr(client, method, recorded)
    try:
        where = RecordFilter(user_id="alice", agent_id="a", include_shared=True, kinds=("message", "fact"))
        want = {"mine", "mine-fact", "global", "agent-a"}
        assert {r.id for r in backend.scan(where)} == want
        found, vectors = backend.scan_vectors(where)
        assert {r.id for r in found} == want and vectors.shape == (4, DIMENSION)
        assert {hit.record.id for hit in backend.query(vectors_for(records[:1])[0], k=10, where=where)} == want
        assert backend.count(where) == 4
        assert {r.id for r in backend.scan(RecordFilter(user_id="alice"))} == {"mine", "mine-fact"}
        assert filters and not [f for f in filters if "owner" in f]
    finally:
        backend.drop()
        backend.close()


@pytest.mark.slow
def test_a_server_collection_indexes_its_scope_fields_and_sealed_reads_stay_exact(milvus_server: Service) -> None:
    """A new server collection has a Trie index on each scope field (a user's read compares
    no strings row by row); over sealed, indexed segments a user's scope is exact for ids
    that are prefixes of each other, quoted, or Chinese."""
    name = f"scope_{uuid.uuid4().hex[:10]}"
    backend = MilvusBackend(milvus_server.url, collection=name)
    backend.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        assert scope_index_types(backend) == dict.fromkeys(_milvus_schema.SCOPE_FIELDS, "Trie")
        users = ["alice", "alice2", "ali", 'al"ice', "用户", "用户甲"]
        records = [
            make_record(f"{i}-{kind}", user_id=u, kind=kind)
            for i, u in enumerate(users)
            for kind in ("message", "fact", "summary")
        ]
        records.append(make_record("shared", user_id="bob", visibility="global"))
        backend.upsert(records, vectors_for(records))
        backend.flush()
        unbuilt = _unbuilt_indexes(backend, ("vector", *_milvus_schema.SCOPE_FIELDS), timeout=90)
        assert not unbuilt, f"indexes not built: {unbuilt}"
        time.sleep(5)  # the query node swaps in the indexed segments a moment later
        for i, user in enumerate(users):
            where = RecordFilter(user_id=user, include_shared=True, kinds=("message", "fact"))
            want = {f"{i}-message", f"{i}-fact", "shared"}
            assert {r.id for r in backend.scan(where)} == want, user
            assert {r.id for r in backend.scan_vectors(where)[0]} == want, user
            hits = backend.query(vectors_for(records[:1])[0], k=50, where=where)
            assert {h.record.id for h in hits} == want, user
            assert backend.count(RecordFilter(user_id=user)) == 3, user
    finally:
        backend.drop()
        backend.close()


@pytest.mark.slow
def test_a_collection_indexed_after_it_was_loaded_still_opens(milvus_server: Service) -> None:
    """A 2.3 server refuses to load again a collection whose indexes changed since it was
    loaded (an operator's index, an older memory-vec's collection indexed by hand): a second
    worker still opens it, reads and writes."""
    name = f"reindexed_{uuid.uuid4().hex[:10]}"
    first = MilvusBackend(milvus_server.url, collection=name)
    first.open(dimension=DIMENSION, model_id=MODEL_ID)
    second = MilvusBackend(milvus_server.url, collection=name)
    try:
        records = [make_record("a", user_id="alice"), make_record("b", user_id="bob")]
        first.upsert(records, vectors_for(records))
        extra = first._client.prepare_index_params()
        extra.add_index("session_id", index_type="Trie", index_name="session_id")
        first._client.create_index(name, extra)
        second.open(dimension=DIMENSION, model_id=MODEL_ID)
        assert {r.id for r in second.scan(RecordFilter(user_id="alice"))} == {"a"}
        more = [make_record("c", user_id="alice")]
        second.upsert(more, vectors_for(more))
        assert {r.id for r in second.scan(RecordFilter(user_id="alice"))} == {"a", "c"}
    finally:
        first.drop()
        first.close()
        second.close()
