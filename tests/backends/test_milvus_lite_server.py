"""Milvus Lite served over gRPC (``milvus-lite server``), through the conformance suite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from memory_vec.backends.base import Backend, RecordFilter
from memory_vec.backends.milvus import MilvusBackend
from memory_vec.testing.conformance import BackendConformance
from tests._services import Service

pytestmark = pytest.mark.integration


class TestMilvusLiteServer(BackendConformance):
    supports_reopen = True
    supports_multiprocess = True  # a server is shared; the lock is only for local paths
    large_batch_size = 3_000
    service_fixture = "milvus_lite_server"

    @pytest.fixture(scope="class")
    @classmethod
    def collection(cls, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
        # One collection per class, emptied after each test: creating, loading
        # and dropping a collection costs seconds on a server.
        service: Service = request.getfixturevalue(cls.service_fixture)
        name = f"c_{uuid.uuid4().hex[:12]}"
        yield service.url, name
        b = MilvusBackend(service.url, collection=name)
        b.drop()
        b.close()

    @pytest.fixture
    def backend(self, collection: tuple[str, str]) -> Iterator[MilvusBackend]:
        url, name = collection
        b = MilvusBackend(url, collection=name)
        yield b
        b.close()
        cleaner = MilvusBackend(url, collection=name)
        try:
            cleaner.open(dimension=self.dimension, model_id=self.model_id)
            cleaner.delete(where=RecordFilter(include_superseded=True, include_archived=True))
            assert cleaner.count() == 0
        finally:
            cleaner.close()

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, MilvusBackend)
        return MilvusBackend(backend.uri, collection=backend.collection)

    def subprocess_code(self, backend: Backend) -> str:
        assert isinstance(backend, MilvusBackend)
        return (
            "from memory_vec.backends.milvus import MilvusBackend\n"
            f"backend = MilvusBackend({backend.uri!r}, collection={backend.collection!r})\n"
        )


def scope_index_types(backend: MilvusBackend) -> dict[str, str]:
    """The index type on each scope field that has an index (shared with the 2.3 server's tests)."""
    from memory_vec.backends._milvus_schema import SCOPE_FIELDS

    client = backend._client
    return {
        field: client.describe_index(backend.collection, field).get("index_type", "")
        for field in SCOPE_FIELDS
        if client.list_indexes(backend.collection, field_name=field)
    }


def test_a_lite_server_collection_gets_the_scope_indexes_lite_has(milvus_lite_server: Service) -> None:
    """Milvus Lite has no Trie index (a 2.3 server's kind): its server collections get INVERTED ones."""
    from memory_vec.backends._milvus_schema import SCOPE_FIELDS
    from memory_vec.testing.conformance import DIMENSION, MODEL_ID, make_record, vectors_for

    backend = MilvusBackend(milvus_lite_server.url, collection=f"scope_{uuid.uuid4().hex[:10]}")
    backend.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        assert scope_index_types(backend) == dict.fromkeys(SCOPE_FIELDS, "INVERTED")
        records = [make_record("a", user_id="al"), make_record("b", user_id="al2")]
        backend.upsert(records, vectors_for(records))
        assert {r.id for r in backend.scan(RecordFilter(user_id="al"))} == {"a"}
    finally:
        backend.drop()
        backend.close()


@pytest.mark.slow
def test_a_server_collection_named_before_names_were_mapped_stays_in_use(
    milvus_lite_server: Service,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Milvus Lite served over a URL took any name, so stores made before names were
    mapped for servers (memory_vec.backends._names) hold "my memories" as given: they
    must open that collection, not a new empty one under the mapped name."""
    from memory_vec.backends import _names
    from memory_vec.testing.conformance import DIMENSION, MODEL_ID, make_record, vectors_for

    given = f"legacy memories {uuid.uuid4().hex[:8]}"
    with monkeypatch.context() as old_version:
        old_version.setattr(_names, "milvus_collection", lambda client, name, is_server, timeout: name)
        before = MilvusBackend(milvus_lite_server.url, collection=given)
        before.open(dimension=DIMENSION, model_id=MODEL_ID)
        records = [make_record("kept", user_id="al")]
        before.upsert(records, vectors_for(records))
        before.close()
    after = MilvusBackend(milvus_lite_server.url, collection=given)
    after.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        assert after.collection == given
        assert [r.id for r in after.scan(RecordFilter(user_id="al"))] == ["kept"]
    finally:
        after.drop()
        after.close()
    fresh = MilvusBackend(milvus_lite_server.url, collection=f"new memories {uuid.uuid4().hex[:8]}")
    fresh.open(dimension=DIMENSION, model_id=MODEL_ID)
    try:
        assert fresh.collection == _names.milvus_name(fresh.given_name) != fresh.given_name
    finally:
        fresh.drop()
        fresh.close()
