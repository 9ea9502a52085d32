"""A core's internals are reached through ``memory_vec.testing.parts`` (#45): 0.1's
``MemoryCore.store``, ``.backend`` and the like still work for one version, with a
DeprecationWarning naming the replacement; the package's own paths never raise it."""

from __future__ import annotations

import uuid
import warnings

import pytest

from memory_vec import ExtractiveSummarizer, MemoryConfig, MemoryCore
from memory_vec._pipelines.maintenance import backfill_dates, reembed
from memory_vec.testing import CoreParts, DeterministicHashEmbedder, parts

PARTS = ("store", "backend", "state", "writer", "embedder", "counter", "summarizer", "extractor", "resolver")


def _core() -> MemoryCore:
    config = MemoryConfig(user_id="u1", session_id="s1", score_threshold=0.0, collection=f"parts_{uuid.uuid4().hex}")
    return MemoryCore(config, embedder=DeterministicHashEmbedder(32))


@pytest.mark.parametrize("name", PARTS)
def test_an_old_part_property_warns_naming_the_replacement_and_still_works(name: str) -> None:
    core = _core()
    with pytest.warns(DeprecationWarning, match=rf"MemoryCore\.{name} .*memory_vec\.testing\.parts\(core\)\.{name}"):
        old = getattr(core, name)
    assert old is getattr(parts(core), name)


def test_the_old_setters_warn_and_still_switch_the_part() -> None:
    core = _core()
    new = DeterministicHashEmbedder(32)  # another instance of the store's model
    with pytest.warns(DeprecationWarning, match=r"MemoryCore\.embedder .*switch_embedder"):
        core.embedder = new  # type: ignore[misc]
    assert parts(core).embedder is new
    summarizer = ExtractiveSummarizer(counter=parts(core).counter)
    with pytest.warns(DeprecationWarning, match=r"MemoryCore\.summarizer .*summarizer="):
        core.summarizer = summarizer  # type: ignore[misc]
    assert parts(core).summarizer is summarizer


def test_parts_is_a_live_typed_view() -> None:
    core = _core()
    view = parts(core)
    assert isinstance(view, CoreParts)
    assert view.backend is view.store.backend and view.state is view.store.state and view.writer is view.store.writer
    new = DeterministicHashEmbedder(32)
    view.switch_embedder(new)
    assert view.embedder is new and parts(core).embedder is new  # a view, never a stale copy


def test_the_package_own_paths_raise_no_deprecation_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        core = _core()
        core.add_message("user", "My budget cap is 5000 euros since yesterday.")
        core.update(core.recall("budget", k=1)[0].id, "My budget cap is 6000 euros.")
        assert "6000" in core.build_context("what is my budget?").render_history()
        core.working_state()
        core.dead_letters()
        core.maintain()
        assert backfill_dates(core).checked >= 1
        assert reembed(core, DeterministicHashEmbedder(48), progress=False).dimension == 48
        data = core.export_memories()
        core.forget()
        assert core.import_memories(data) >= 1
        core.close()
