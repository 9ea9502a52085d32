"""Embedded Chroma (``PersistentClient``) against the conformance suite."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_vec import MemoryConfig
from memory_vec._model.errors import ConfigError, SchemaMismatchError
from memory_vec.backends import Backend, RecordFilter, create_backend
from memory_vec.backends.chroma import ChromaBackend
from memory_vec.testing.conformance import BackendConformance, make_record

pytestmark = pytest.mark.integration


class TestChromaEmbedded(BackendConformance):
    """One process owns the store; a second process gets StoreLockedError."""

    supports_reopen = True
    supports_multiprocess = False
    exclusive_process_lock = True

    @pytest.fixture
    def backend(self, tmp_path: Path) -> Iterator[ChromaBackend]:
        # exact_limit=0: Chroma's filtered HNSW search on every scope (the default scores small ones exactly)
        store = ChromaBackend(path=tmp_path / "chroma", collection="conformance", exact_limit=0)
        yield store
        store.close()
        shutil.rmtree(tmp_path / "chroma", ignore_errors=True)

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, ChromaBackend)
        return ChromaBackend(path=backend.path, collection=backend.collection_name, exact_limit=0)

    def subprocess_code(self, backend: Backend) -> str:
        assert isinstance(backend, ChromaBackend)
        return textwrap.dedent(f"""
            from memory_vec.backends.chroma import ChromaBackend
            backend = ChromaBackend(path={backend.path!r}, collection={backend.collection_name!r}, exact_limit=0)
        """)


class TestChromaEmbeddedExact(TestChromaEmbedded):
    """The same suite with small scopes scored exactly (``exact_limit``, on by default) instead of by
    filtered HNSW."""

    @pytest.fixture
    def backend(self, tmp_path: Path) -> Iterator[ChromaBackend]:
        store = ChromaBackend(path=tmp_path / "chroma", collection="conformance", exact_limit=1000)
        yield store
        store.close()
        shutil.rmtree(tmp_path / "chroma", ignore_errors=True)

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, ChromaBackend)
        return ChromaBackend(path=backend.path, collection=backend.collection_name, exact_limit=1000)


def test_exact_limit_scores_a_small_scope_exactly(tmp_path: Path) -> None:
    config = MemoryConfig(backend="chroma", persist_dir=str(tmp_path), backend_options={"exact_limit": 3})
    backend = create_backend(config)
    try:
        backend.open(dimension=4, model_id="m4")
        vectors = np.eye(4, dtype=np.float32)
        backend.upsert([make_record(f"a{i}", user_id="a") for i in range(3)], vectors[:3])
        backend.upsert([make_record(f"b{i}", user_id="b") for i in range(4)], vectors)
        for user in ("a", "b"):  # a: 3 rows, scored exactly; b: 4 > 3, filtered HNSW
            hits = backend.query(vectors[0], k=2, where=RecordFilter(user_id=user))
            assert [h.record.id for h in hits][:1] == [f"{user}0"] and len(hits) == 2
            assert hits[0].similarity == pytest.approx(1.0)
        assert getattr(backend, "inner", backend).exact_limit == 3
    finally:
        backend.close()


def test_config_builds_an_embedded_store_under_persist_dir(tmp_path: Path) -> None:
    config = MemoryConfig(
        backend="chroma",
        persist_dir=str(tmp_path),
        collection="from-config",
        backend_options={"hnsw": {"max_neighbors": 32, "ef_search": 64}},
    )
    backend = create_backend(config)
    try:
        backend.open(dimension=4, model_id="m4")
        backend.upsert([make_record("r1")], np.eye(4, dtype=np.float32)[:1])
        assert (tmp_path / "chroma").is_dir() and backend.count() == 1
    finally:
        backend.close()


def test_unknown_backend_option_names_the_allowed_ones(tmp_path: Path) -> None:
    config = MemoryConfig(backend="chroma", persist_dir=str(tmp_path), backend_options={"hnsw_m": 8})
    with pytest.raises(ConfigError, match="allowed: headers"):
        create_backend(config)


def test_foreign_collection_is_a_schema_mismatch(tmp_path: Path) -> None:
    import chromadb
    from chromadb.api.client import Client
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    assert isinstance(client, Client)  # what close() is declared on
    client.create_collection("foreign", embedding_function=None)
    client.close()
    backend = ChromaBackend(path=tmp_path / "chroma", collection="foreign")
    try:
        with pytest.raises(SchemaMismatchError, match="another `collection` name"):
            backend.open(dimension=4, model_id="m4")
    finally:
        backend.close()


@pytest.mark.parametrize("bad", [-1, "2000", 1.5, True, 10**9])
def test_a_bad_exact_limit_is_a_config_error(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ConfigError, match="exact_limit"):
        create_backend(MemoryConfig(backend="chroma", persist_dir=str(tmp_path), backend_options={"exact_limit": bad}))


def test_small_scopes_are_scored_exactly_by_default(tmp_path: Path) -> None:
    backend = create_backend(MemoryConfig(backend="chroma", persist_dir=str(tmp_path)))
    try:
        assert getattr(backend, "inner", backend).exact_limit == 500
    finally:
        backend.close()
