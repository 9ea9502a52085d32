"""reembed: rebuild every vector from the stored texts with a new embedder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import EmbeddingModelMismatchError, InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec._pipelines.embed_text import EmbedTextPolicy
from memory_vec._pipelines.maintenance import reembed
from memory_vec.backends import Backend, InMemoryBackend, RecordFilter
from memory_vec.backends.chroma import ChromaBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder, parts

EVERYTHING = RecordFilter(include_superseded=True, include_archived=True)
TEXTS = ["The budget cap is 5000 euros", "I live in Lisbon", "My dog is called Pixel", "Meeting on Friday"]
POLICY = EmbedTextPolicy.from_config(MemoryConfig())  # the default stored-vector policy, recorded with the model id


def _fill(backend: Backend, embedder: DeterministicHashEmbedder) -> list[MemoryRecord]:
    records = [
        MemoryRecord(
            id=f"r{i}",
            text=t,
            role="user",
            user_id="u1",
            session_id="s1",
            timestamp=1.7e9 + i,
            seq=i,
            valid_to=(1.7e9 if i == 3 else None),
        )
        for i, t in enumerate(TEXTS)
    ]
    backend.upsert(records, embedder.embed_documents(TEXTS))
    return records


def test_reembed_core_switches_model_and_keeps_every_record() -> None:
    old, new = DeterministicHashEmbedder(32), DeterministicHashEmbedder(48)
    backend = InMemoryBackend()
    core = MemoryCore(
        MemoryConfig(user_id="u1", session_id="s1", score_threshold=0.0),
        embedder=old,
        backend=backend,
        state_store=InMemoryStateStore(),
    )
    records = _fill(backend, old)
    result = reembed(core, new, batch_size=3, progress=False)
    assert (result.records, result.model_id, result.dimension) == (4, "hash-48", 48)
    assert parts(core).embedder is new
    assert {r.id: r for r in backend.scan(EVERYTHING)} == {r.id: r for r in records}
    # The new vectors follow the one policy of every write path (contextual_embedding).
    plan = POLICY.plan_records(records)
    expected = plan.vectors(new.embed_documents(plan.texts))
    for record, vector in zip(records, expected):
        [hit] = backend.query(vector, k=1, where=RecordFilter(ids=(record.id,), include_superseded=True))
        assert hit.similarity > 0.999
    assert backend.model_id == POLICY.space_id("hash-48")
    with pytest.raises(EmbeddingModelMismatchError):
        backend.open(dimension=32, model_id="hash-32")


def test_reembed_config_on_embedded_chroma_lets_the_new_embedder_open(tmp_path: Path) -> None:
    old, new = DeterministicHashEmbedder(32), DeterministicHashEmbedder(48)
    backend = ChromaBackend(path=tmp_path / "chroma", collection="memory_vec")
    backend.open(dimension=old.dimension, model_id=old.model_id)
    records = _fill(backend, old)
    backend.close()
    config = MemoryConfig(backend="chroma", persist_dir=str(tmp_path))
    assert reembed(config, new, batch_size=2, progress=True).records == 4
    from memory_vec import release_stores

    release_stores()
    reopened = ChromaBackend(path=tmp_path / "chroma", collection="memory_vec")
    try:
        with pytest.raises(EmbeddingModelMismatchError, match=r"hash-48.*hash-32"):
            reopened.open(dimension=old.dimension, model_id=old.model_id)
        reopened.open(dimension=new.dimension, model_id=POLICY.space_id(new.model_id))
        assert {r.id: r for r in reopened.scan(EVERYTHING)} == {r.id: r for r in records}
        [hit] = reopened.query(new.embed_query("dog Pixel"), k=1, where=RecordFilter(user_id="u1"))
        assert hit.record.id == "r2" and hit.similarity > 0.5
    finally:
        reopened.close()


def test_failing_embedder_leaves_the_store_untouched() -> None:
    class Broken(DeterministicHashEmbedder):
        def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
            raise RuntimeError("model crashed")

    old = DeterministicHashEmbedder(32)
    backend = InMemoryBackend()
    core = MemoryCore(
        MemoryConfig(user_id="u1", session_id="s1"), embedder=old, backend=backend, state_store=InMemoryStateStore()
    )
    _fill(backend, old)
    broken = Broken(48)
    broken._dimension = 48  # skip the probe call, which would fail too
    with pytest.raises(Exception, match="model crashed"):
        reembed(core, broken, progress=False)
    assert backend.count() == 4 and backend.model_id == POLICY.space_id("hash-32") and parts(core).embedder is old


def test_reembed_rejects_bad_input() -> None:
    with pytest.raises(InvalidInputError, match="batch_size"):
        reembed(MemoryConfig(backend="chroma"), DeterministicHashEmbedder(8), batch_size=0)
    with pytest.raises(InvalidInputError, match="pass the MemoryCore"):
        reembed(MemoryConfig(), DeterministicHashEmbedder(8))


def _fail_part_way(
    backend: Backend, config: MemoryConfig, new: DeterministicHashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run a reembed whose second batch of upserts fails: the rewrite stops part-way."""
    real_upsert, calls = backend.upsert, []

    def fails_on_the_second_batch(records: object, vectors: object) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise ConnectionError("backend gone during the rewrite")
        real_upsert(records, vectors)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "upsert", fails_on_the_second_batch)
    with pytest.raises(ConnectionError):
        reembed(config, new, batch_size=8, progress=False)
    monkeypatch.setattr(backend, "upsert", real_upsert)


@pytest.mark.slow
@pytest.mark.parametrize("backend_name", ["sqlite", "chroma", "milvus"])
def test_a_rewrite_that_fails_part_way_is_finished_by_the_next_run(
    backend_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_vec import release_stores

    old, new = DeterministicHashEmbedder(32), DeterministicHashEmbedder(48)
    config = MemoryConfig(backend=backend_name, persist_dir=str(tmp_path), user_id="u1", score_threshold=0.0)
    core = MemoryCore(config, embedder=old)
    for i in range(30):
        core.add_message("user", f"note {i}: the budget line {i} is {1000 + i} euros")
    core.close()
    release_stores()
    total = len(MemoryCore(config, embedder=old).export_memories()["records"])
    release_stores()

    from memory_vec._storage.store import open_store

    store = open_store(config)  # a config path, as `memory-vec reembed --model ...` runs it
    _fail_part_way(store.backend, config, new, monkeypatch)
    assert store.backend.count() < total  # half rewritten
    with pytest.raises(InvalidInputError, match="did not finish"):
        reembed(config, DeterministicHashEmbedder(40), progress=False)  # another model must wait
    late = MemoryRecord(
        id="late",
        text="written while the rewrite was broken",
        role="user",
        user_id="u1",
        session_id="s9",
        timestamp=1.8e9,
        seq=1,
    )
    store.backend.open(dimension=new.dimension, model_id=POLICY.space_id(new.model_id))  # a writer on the new
    store.backend.upsert([late], new.embed_documents([late.text]))  # model that was not stopped
    assert reembed(config, new, batch_size=8, progress=False).records == total + 1  # finished from the journal
    release_stores()
    after = MemoryCore(config, embedder=new)
    assert len(after.export_memories()["records"]) == total + 1
    assert [h.text for h in after.recall("budget line 7", k=1)] == ["note 7: the budget line 7 is 1007 euros"]
    assert not list(tmp_path.glob("reembed-*.journal*"))
    after.close()


@pytest.mark.slow
def test_forget_reaches_the_journal_of_an_unfinished_rewrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """#44: a reembed that failed part-way kept a forgotten user's text in its journal,
    and finishing it restored every forgotten record."""
    from memory_vec import release_stores
    from memory_vec._storage.store import open_store

    old, new = DeterministicHashEmbedder(32), DeterministicHashEmbedder(48)
    config = MemoryConfig(backend="sqlite", persist_dir=str(tmp_path), user_id="u1", score_threshold=0.0)
    core = MemoryCore(config, embedder=old)
    for i in range(12):
        core.add_message("user", f"alice's secret number {i} is {4000 + i}", user_id="alice")
        core.add_message("user", f"bob's note {i}: the budget is {1000 + i} euros", user_id="bob")
    core.close()
    release_stores()
    store = open_store(config)
    _fail_part_way(store.backend, config, new, monkeypatch)
    [journal] = tmp_path.glob("reembed-*.journal.npz")
    assert "secret number" in str(np.load(journal)["head"])
    receipt = MemoryCore(config, embedder=new).forget(user_id="alice")
    assert receipt.remaining_after_scan == 0
    assert "secret number" not in str(np.load(journal)["head"])  # the journal holds nothing of alice
    reembed(config, new, batch_size=8, progress=False)  # finishing the rewrite brings nothing of alice back
    release_stores()
    after = MemoryCore(config, embedder=new)
    assert after.export_memories(user_id="alice")["records"] == []
    assert after.export_memories(user_id="bob")["records"]
    after.close()
