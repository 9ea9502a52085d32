"""The keyword index of a store is rebuilt from the engine's rows whenever the
user's keyword version in the shared working state is not the one it was built
under (memory_vec/_storage/keywords.py). Two stores over one backend and one
working state stand for two processes: each has its own keyword index."""

from __future__ import annotations

from typing import Any

from memory_vec import MemoryCore
from memory_vec.backends.memory import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import parts


def _two_processes(make_core: Any) -> tuple[MemoryCore, MemoryCore]:
    backend, state = InMemoryBackend(), InMemoryStateStore()
    first = make_core(backend=backend, state=state, hybrid=True, fact_extractor="none")
    second = make_core(backend=backend, state=state, hybrid=True, fact_extractor="none")
    assert (
        parts(first).store is not parts(second).store
        and parts(first).store.keywords is not parts(second).store.keywords
    )
    return first, second


def _bm25(core: MemoryCore, query: str, text: str) -> float:
    return next((float(h.components.get("bm25") or 0.0) for h in core.recall(query, k=10) if h.text == text), 0.0)


def test_another_process_write_is_keyword_scored_at_once(make_core: Any) -> None:
    a, b = _two_processes(make_core)
    a.add_message("user", "we talked about the weather today")
    assert _bm25(b, "weather", "we talked about the weather today") > 0  # b's index built now
    a.add_message("user", "the gate code for the warehouse is ZQ7781", session_id="s2")
    assert _bm25(b, "ZQ7781 gate", "the gate code for the warehouse is ZQ7781") > 0


def test_another_process_forget_and_delete_are_not_served(make_core: Any) -> None:
    a, b = _two_processes(make_core)
    kept = a.add_message("user", "my locker number is QX55")
    gone = a.add_message("user", "my bike lock code is QX77", session_id="s2")
    assert _bm25(b, "QX77", "my bike lock code is QX77") > 0
    a.delete(gone.id)
    index = parts(b).store.keywords.for_user("u1")
    assert gone.id not in index and kept.id in index
    a.forget()
    assert b.recall("QX55 locker", k=5) == [] and len(parts(b).store.keywords.for_user("u1")) == 0
    # Written again after the forget: never mistaken for the copy from before it.
    a.add_message("user", "a fresh start with QX99")
    assert [h.text for h in b.recall("QX99 QX55", k=5)] == ["a fresh start with QX99"]


def test_own_writes_patch_the_copy_and_others_make_it_rebuild(make_core: Any) -> None:
    a, b = _two_processes(make_core)
    a.add_message("user", "first note about tulips")
    index = parts(a).store.keywords.for_user("u1")
    a.add_message("user", "second note about roses")
    assert parts(a).store.keywords.for_user("u1") is index  # nobody else wrote: patched, not rebuilt
    b.add_message("user", "third note about daisies")
    rebuilt = parts(a).store.keywords.for_user("u1")
    assert rebuilt is not index and len(rebuilt) == 3  # another store wrote in between: rebuilt from the engine
    a.add_message("user", "fourth note about lilies")
    assert parts(a).store.keywords.for_user("u1") is rebuilt and len(rebuilt) == 4


def test_a_failed_write_leaves_no_patched_copy(make_core: Any) -> None:
    a, b = _two_processes(make_core)
    a.add_message("user", "a note about tulips")
    index = parts(b).store.keywords.for_user("u1")
    version = parts(b).store.state.keyword_version("u1")

    def down(*_: Any, **__: Any) -> None:
        from memory_vec._model.errors import BackendUnavailableError

        raise BackendUnavailableError("down")

    parts(b).store.backend.insert_new = down  # type: ignore[method-assign]
    result = b.add_message("user", "a note about roses")
    assert result.pending  # kept in the working state for heal
    assert parts(b).store.state.keyword_version("u1") != version  # the engine may hold it: the version moved
    assert parts(b).store.keywords.for_user("u1") is not index


def test_a_patched_copy_holds_what_a_rebuild_would(make_core: Any) -> None:
    a, b = _two_processes(make_core)
    first = a.add_message("user", "a note about tulips")
    second = a.add_message("user", "a note about roses")
    index = parts(a).store.keywords.for_user("u1")
    [stored] = parts(a).store.backend.get([first.id])
    parts(a).store.writer.update([stored.copy(archived=True)])  # archived rows are not indexed
    assert parts(a).store.keywords.for_user("u1") is index  # patched by its own write
    rebuilt = parts(b).store.keywords.for_user("u1")
    assert first.id not in index and second.id in index
    assert first.id not in rebuilt and second.id in rebuilt


def test_a_copy_built_without_a_version_is_never_taken_as_current(make_core: Any) -> None:
    a, b = _two_processes(make_core)
    a.add_message("user", "my locker number is QX55")
    parts(a).store.state.forget_user("u1")  # rows without a version, as a store of 0.1 leaves them
    assert parts(a).store.state.keyword_version("u1") is None
    assert len(parts(b).store.keywords.for_user("u1")) == 1
    a.forget()  # the forget's new version is removed with the user: none again
    assert parts(a).store.state.keyword_version("u1") is None
    assert len(parts(b).store.keywords.for_user("u1")) == 0 and b.recall("QX55", k=3) == []
