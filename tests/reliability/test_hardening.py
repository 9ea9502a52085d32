"""Careless and hostile input on the write paths: each gets a named error
before anything is written (issue #14's numbered failures 1, 2, 3 and 7)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from memory_vec import (
    InvalidInputError,
    InvalidMetadataError,
    InvalidTimestampError,
    MemoryCore,
    SupersededMemoryError,
)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def _untouched(core: MemoryCore) -> None:
    assert core.working_state().messages == []
    assert core.backend.count() == 0


@pytest.mark.parametrize("metadata", [{"n": 2**64}, {"n": -(2**63) - 1}, _nested(400), {"x": [math.nan]}])
def test_metadata_the_backends_cannot_store_is_refused_first(make_core: Any, metadata: dict[str, Any]) -> None:
    core = make_core()
    with pytest.raises(InvalidMetadataError):
        core.add_message("user", "hello", metadata=metadata)
    with pytest.raises(InvalidMetadataError):
        core.remember("a fact", metadata=metadata)
    _untouched(core)
    core.add_message("user", "still works")  # and later writes, context and export are fine
    assert core.build_context("works").recent[0].content == "still works"
    assert core.export_memories()["records"]


def test_an_aware_timestamp_outside_years_1_to_9999_in_utc_is_refused(make_core: Any) -> None:
    core = make_core()
    late = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # year 10000 in UTC
    with pytest.raises(InvalidTimestampError, match="1-9999"):
        core.add_message("user", "from the far future", timestamp=late)
    _untouched(core)
    core.add_message("user", "a normal one")
    assert core.recall("normal")


def test_smaller_ones_get_named_errors(make_core: Any) -> None:
    core = make_core()
    with pytest.raises(InvalidMetadataError):
        core.recall("x", filters="a=1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="importance"):
        core.remember("I like tea", importance=True)
    _untouched(core)


def test_pin_update_delete_on_a_superseded_memory_name_the_current_one(make_core: Any) -> None:
    core = make_core()
    first = core.remember("my budget is 5000", subject="budget")
    newer = core.update(first.id, "my budget is 8000")
    for action in (core.pin, core.unpin, core.delete):
        with pytest.raises(SupersededMemoryError) as err:
            action(first.id)
        assert err.value.current_id == newer.id and newer.id in str(err.value)
    with pytest.raises(SupersededMemoryError):
        core.update(first.id, "my budget is 9000")
    assert core.pin(newer.id).pinned
    assert [r.id for r in core.history(newer.id)] == [first.id, newer.id]


def _export_with(core: MemoryCore, **changes: Any) -> dict[str, Any]:
    data = core.export_memories()
    data["records"][0].update(changes)
    return data


@pytest.mark.parametrize("changes", [
    {"timestamp": "yesterday"}, {"metadata": {"x": math.nan}}, {"kind": "rumour"}, {"text": "bell\x07"},
    {"importance": 7}, {"user_id": "mallory"}, {"valid_to": 1e20}, {"unknown_field": 1},
])
def test_import_refuses_a_bad_record_whole_and_writes_nothing(make_core: Any, changes: dict[str, Any]) -> None:
    source = make_core()
    source.add_message("user", "first memory")
    source.add_message("user", "second memory")
    data = _export_with(source, **changes)
    target = make_core(user_id="u1")
    with pytest.raises(InvalidInputError, match="nothing written"):
        target.import_memories(data)
    _untouched(target)


def test_import_never_takes_over_another_users_record(make_core: Any) -> None:
    from memory_vec.backends import InMemoryBackend
    from memory_vec.state import InMemoryStateStore

    backend, state = InMemoryBackend(), InMemoryStateStore()
    victim = make_core(backend=backend, state=state, user_id="victim")
    kept = victim.add_message("user", "the victim's note")
    mallory = make_core(backend=backend, state=state, user_id="mallory")
    mallory.add_message("user", "mallory's note")
    data = mallory.export_memories()
    data["records"][0]["id"] = kept.id  # reuse the victim's id
    with pytest.raises(InvalidInputError, match="another user"):
        mallory.import_memories(data)
    assert victim.get(kept.id).text == "the victim's note"


def test_a_broken_models_vector_is_refused_before_anything_is_written(make_core: Any) -> None:
    import numpy as np

    from memory_vec import EmbeddingError
    from memory_vec.testing import DeterministicHashEmbedder

    class NaNModel(DeterministicHashEmbedder):
        def embed_documents(self, texts: Any) -> Any:
            vectors = super().embed_documents(texts)
            vectors[:] = np.nan
            return vectors

    core = make_core(embedder=NaNModel(dimension=256))
    with pytest.raises(EmbeddingError, match="non-finite"):
        core.add_message("user", "hello")
    with pytest.raises(EmbeddingError, match="non-finite"):
        core.remember("a fact")
    _untouched(core)
