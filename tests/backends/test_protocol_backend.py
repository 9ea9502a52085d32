"""A backend written against the ``Backend`` protocol alone (no ``BaseBackend``) gets
the declared defaults of every optional capability (``as_base_backend``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import BackendError
from memory_vec._pipelines.maintenance import reembed
from memory_vec.backends import Backend, InMemoryBackend, RecordFilter
from memory_vec.backends.base import BaseBackend, as_base_backend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder


class ProtocolOnly:
    """The nine protocol methods, delegated; nothing optional."""

    name = "protocol-only"

    def __init__(self) -> None:
        self._inner = InMemoryBackend()

    def open(self, *, dimension: int, model_id: str) -> None:
        self._inner.open(dimension=dimension, model_id=model_id)

    def upsert(self, records: Sequence[Any], vectors: np.ndarray) -> None:
        self._inner.upsert(records, vectors)

    def update(self, records: Sequence[Any]) -> None:
        self._inner.update(records)

    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[Any]:
        return self._inner.query(vector, k=k, where=where)

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[Any]:
        return self._inner.get(ids, where=where)

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[Any]:
        return self._inner.scan(where, limit=limit)

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        return self._inner.delete(ids=ids, where=where)

    def count(self, where: RecordFilter | None = None) -> int:
        return self._inner.count(where)

    def close(self) -> None:
        self._inner.close()


def test_a_protocol_only_backend_gets_the_defaults() -> None:
    backend = ProtocolOnly()
    assert isinstance(backend, Backend) and not isinstance(backend, BaseBackend)
    base = as_base_backend(backend)
    assert as_base_backend(base) is base and base.name == "protocol-only"
    assert not base.vector_reads and not base.resettable and not base.supports_multiprocess and not base.persistent
    assert base.claim_working_state("mine") == "mine"
    base.check_usable()
    report = base.purge()
    assert not report.purged and "no purge" in report.notes[0]
    with pytest.raises(BackendError, match="scan_vectors"):
        base.scan_vectors(RecordFilter())
    with pytest.raises(BackendError, match="reset"):
        base.reset(dimension=8, model_id="m")


def test_a_core_runs_on_a_protocol_only_backend() -> None:
    embedder = DeterministicHashEmbedder(dimension=32)
    core = MemoryCore(
        MemoryConfig(user_id="u1", session_id="s1", score_threshold=0.0, fact_extractor="none"),
        embedder=embedder,
        backend=ProtocolOnly(),  # type: ignore[arg-type]
        state_store=InMemoryStateStore(),
    )
    core.add_message("user", "the boat is called Saltwind")  # insert_new falls back to upsert
    assert [h.text for h in core.recall("Saltwind", k=1)] == ["the boat is called Saltwind"]
    with pytest.raises(BackendError, match="reset"):
        reembed(core, DeterministicHashEmbedder(dimension=16), progress=False)
    core.forget()  # the default purge reports that nothing was purged; no error
    assert core.recall("Saltwind", k=1) == []
