"""docs/operations.md, row by row, on every vector backend (issue #44, points 4 and 6).

Each test runs one operation through the public ``MemoryCore`` API on the
in-process backend, SQLite, embedded Chroma, a Chroma server, Milvus Lite
(embedded and as a server) and a Milvus server, then reads the result back the
way another process would: the stores are released and a new core opens them
from the config (the in-process backend has no other copy, so it is read where
it lives). What is checked is what that core finds in the backend's rows, in
recall, in the working state and in an export, never what the writing core
remembers.

The hashing embedder stands in for the model where the assertion is about
bookkeeping; ``test_edits_with_the_real_model`` runs the edits with the
default model (multilingual-e5-small), the one recall uses in production.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_vec import CrossUserImportError, MemoryConfig, MemoryCore, WriteEvent, release_stores
from memory_vec._model.records import MemoryRecord
from memory_vec._pipelines.maintenance import reembed
from memory_vec._pipelines.reembed_journal import ReembedJournal
from memory_vec.backends import RecordFilter
from memory_vec.embeddings import E5_SMALL_ID
from memory_vec.state import DeadLetter
from memory_vec.testing import DeterministicHashEmbedder, parts

pytestmark = [pytest.mark.integration]

EMBEDDER = DeterministicHashEmbedder(dimension=64)
BACKENDS = ("memory", "sqlite", "chroma", "chroma-server", "milvus-lite", "milvus-lite-server", "milvus-server")
SERVER_BACKENDS = ("chroma-server", "milvus-lite-server", "milvus-server")
FAST_BACKENDS = ("memory", "sqlite")  # well under a second a test
# Small enough that a dozen lines fold the oldest into the summary.
FOLDING = {"max_token_limit": 150, "summary_max_tokens": 60, "keep_recent_turns": 2}

Make = Callable[..., MemoryCore]


def _marks(kind: str) -> list[pytest.MarkDecorator]:
    marks = [] if kind in FAST_BACKENDS else [pytest.mark.slow]
    return [*marks, pytest.mark.services] if kind in SERVER_BACKENDS else marks


@pytest.fixture(params=[pytest.param(kind, marks=_marks(kind)) for kind in BACKENDS])
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def base_config(backend_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    config: dict[str, Any] = {
        "collection": f"ops_{uuid.uuid4().hex[:10]}",
        "persist_dir": str(tmp_path / "store"),
        "score_threshold": 0.0,
        "user_id": "alice",
        "session_id": "s1",
    }
    if backend_kind in ("memory", "sqlite", "chroma"):
        config["backend"] = backend_kind
    elif backend_kind == "chroma-server":
        config.update(backend="chroma", url=request.getfixturevalue("chroma_server").url)
    elif backend_kind == "milvus-lite":
        config["backend"] = "milvus"
    elif backend_kind == "milvus-lite-server":
        config.update(backend="milvus", url=request.getfixturevalue("milvus_lite_server").url)
    elif backend_kind == "milvus-server":
        config.update(backend="milvus", url=request.getfixturevalue("milvus_server").url)
    else:  # pragma: no cover
        raise ValueError(backend_kind)
    yield config
    release_stores()  # the next test opens its stores anew


@pytest.fixture
def make(base_config: dict[str, Any]) -> Make:
    """A core built from config, as users build it (hashing embedder unless one is given)."""

    def build(embedder: Any = EMBEDDER, **overrides: Any) -> MemoryCore:
        config = MemoryConfig(**{**base_config, **overrides})
        return MemoryCore(config) if embedder is None else MemoryCore(config, embedder=embedder)

    return build


# --- reading back -----------------------------------------------------------------------------


def read_back(core: MemoryCore, **overrides: Any) -> MemoryCore:
    """A new core on what the stores hold, as another process would open them."""
    core.flush()
    if core.config.backend != "memory":  # the in-process backend is its own only copy
        release_stores()
    return MemoryCore(core.config.model_copy(update=overrides), embedder=parts(core).embedder)


def rows(core: MemoryCore, user_id: str | None = "alice") -> dict[str, MemoryRecord]:
    where = RecordFilter(user_id=user_id, include_superseded=True, include_archived=True)
    return {r.id: r for r in parts(core).backend.scan(where)}


def top(core: MemoryCore, query: str = "what is my budget") -> list[str]:
    return [h.text for h in core.recall(query, k=10)]


def keyword_hits(core: MemoryCore, word: str) -> list[str]:
    """Recalled texts the keyword index scored (a BM25 match, not only a vector)."""
    return [h.text for h in core.recall(word, k=10) if h.components.get("bm25", 0.0) > 0 and word in h.text]


def exported(core: MemoryCore) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    data = core.export_memories()
    return {r["id"]: r for r in data["records"]}, data["sessions"]


def current_export_texts(core: MemoryCore) -> list[str]:
    records, _ = exported(core)
    return [r["text"] for r in records.values() if r["valid_to"] is None]


def chat(core: MemoryCore, n: int = 12, session_id: str | None = None) -> None:
    """Small talk that pushes the earlier lines out of the window into the summary."""
    for i in range(n):
        core.add_message("user", f"chatting about hobby number {i} and other things", session_id=session_id)
    core.flush()


def window(core: MemoryCore, session_id: str | None = None, user: str | None = None) -> list[str]:
    return [m.content for m in core.working_state(session_id=session_id, user_id=user).messages]


def refused(core: MemoryCore, session_id: str) -> str:
    """A record of the core's user the backend refused, kept as a dead letter (in the working state)."""
    user = core.config.user_id
    record = MemoryRecord(uuid.uuid4().hex, "a refused note", "user", user, session_id, time.time())
    parts(core).store.state.add_dead_letters(
        [DeadLetter(record.id, record.user_id, session_id, "refused", 0.0, asdict(record))]
    )
    return record.id


# --- add_message ------------------------------------------------------------------------------


def test_a_new_value_supersedes_and_what_is_not_an_update_is_kept(make: Make) -> None:
    core = make(**FOLDING)
    first, echo = core.add_messages(
        [("user", "My budget is 5000 euros."), ("assistant", "Noted: your budget is 5000 euros.")]
    )
    reported = core.add_message("user", "He told me the budget is 9000 euros.")
    assert reported.event is WriteEvent.ADDED and reported.superseded_ids == []
    assert reported.reason.startswith("kept: new is reported")
    chat(core)
    assert "My budget is 5000 euros." in core.working_state().summary  # the user's value stays
    new = core.add_message("user", "My budget is now 8000 euros.")
    assert new.event is WriteEvent.UPDATED and new.reason.startswith("update: rule:")
    assert {first.id, *first.fact_ids, echo.id} <= set(new.superseded_ids)
    assert window(core)[-1] == "My budget is now 8000 euros."
    assert "My budget is now 8000 euros." in keyword_hits(core, "8000")  # this process's index

    reader = read_back(core)
    stored = rows(reader)
    for old in (first.id, *first.fact_ids, echo.id):  # history: the row stays, not current
        assert stored[old].valid_to is not None and stored[old].superseded_by == new.fact_ids[0]
    for kept in (reported.id, *reported.fact_ids, new.id, *new.fact_ids):
        assert stored[kept].valid_to is None
    assert stored[reported.fact_ids[0]].metadata["modality"] == "reported"
    assert stored[new.fact_ids[0]].metadata["statement"] == "state"
    texts = top(reader)
    assert texts[0] == "My budget is now 8000 euros." and not any("5000" in t for t in texts)
    assert "He told me the budget is 9000 euros." in texts  # still found, as what it is
    assert "My budget is now 8000 euros." in keyword_hits(reader, "8000")  # rebuilt from the rows
    summary = reader.working_state().summary
    assert "My budget is now 8000 euros." in summary and "5000" not in summary
    assert window(reader)[-1] == "My budget is now 8000 euros."
    records, _ = exported(reader)
    assert records[first.id]["superseded_by"] == new.fact_ids[0] and records[new.id]["valid_to"] is None


# --- update -----------------------------------------------------------------------------------


def test_update_of_a_message_reaches_its_facts_the_summary_the_window_and_exports(make: Make) -> None:
    core = make(**FOLDING)
    first = core.add_message("user", "The budget is 5000 dollars.")
    chat(core)
    assert "5000" in core.working_state().summary
    cat = core.add_message("user", "My cat is called Tom.")
    edited = core.update(first.id, "The budget is 7000 dollars.")
    assert {first.id, *first.fact_ids} <= set(edited.superseded_ids) and edited.fact_ids
    renamed = core.update(cat.id, "My cat is called Felix.")
    assert window(core)[-1] == "My cat is called Felix."

    reader = read_back(core)
    stored = rows(reader)
    assert all(stored[i].valid_to is not None for i in (first.id, *first.fact_ids, cat.id, *cat.fact_ids))
    assert all(stored[i].valid_to is None for i in (edited.id, *edited.fact_ids, renamed.id))
    texts = top(reader)
    assert texts[0] == "The budget is 7000 dollars." and not any("5000" in t for t in texts)
    assert not any("Tom" in t for t in top(reader, "what is my cat called"))
    summary = reader.working_state().summary
    assert "7000" in summary and "5000" not in summary
    assert window(reader)[-1] == "My cat is called Felix." and "My cat is called Tom." not in window(reader)
    current = current_export_texts(reader)
    assert "The budget is 7000 dollars." in current and not any("5000" in t or "Tom" in t for t in current)
    # The edit's own facts are what a later update finds.
    later = reader.add_message("user", "The budget is now 9000 dollars.")
    assert set(edited.fact_ids) & set(later.superseded_ids)
    chat(reader)  # a later fold folds the edit, never the old text
    assert "Tom" not in read_back(reader).working_state().summary


def test_update_of_a_fact_is_current_and_ranked_first(make: Make) -> None:
    core = make(**FOLDING)
    first = core.add_message("user", "My budget is 5000 euros.")
    chat(core)
    edited = core.update(first.fact_ids[0], "My budget is 6500 euros.")
    assert first.id in edited.superseded_ids  # the source message said the old value

    reader = read_back(core)
    stored = rows(reader)
    assert stored[edited.id].kind == "fact" and stored[edited.id].valid_to is None
    assert stored[first.id].valid_to is not None and stored[first.fact_ids[0]].valid_to is not None
    texts = top(reader)
    assert texts[0] == "My budget is 6500 euros." and not any("5000" in t for t in texts)
    summary = reader.working_state().summary
    assert "6500" in summary and "5000" not in summary
    current = current_export_texts(reader)
    assert "My budget is 6500 euros." in current and not any("5000" in t for t in current)


# --- delete -----------------------------------------------------------------------------------


def test_delete_of_a_message_takes_its_facts_summary_lines_and_window_copy(make: Make) -> None:
    core = make(**FOLDING)
    first = core.add_message("user", "The budget is 5000 dollars.")
    chat(core)
    assert "5000" in core.working_state().summary
    cat = core.add_message("user", "My cat is called Tom.")
    result = core.delete(first.id)
    assert set(result.deleted_ids) == {first.id, *first.fact_ids}
    assert set(core.delete(cat.id).deleted_ids) == {cat.id, *cat.fact_ids}
    assert keyword_hits(core, "5000") == []

    reader = read_back(core)
    gone = {first.id, *first.fact_ids, cat.id, *cat.fact_ids}
    assert not gone & set(rows(reader)) and parts(reader).backend.get(sorted(gone)) == []
    assert not any("5000" in t for t in top(reader)) and keyword_hits(reader, "5000") == []
    assert not any("Tom" in t for t in top(reader, "what is my cat called"))
    assert "5000" not in reader.working_state().summary and "My cat is called Tom." not in window(reader)
    reader.maintain()  # a heal finds nothing to bring back
    assert not gone & set(rows(reader))
    records, sessions = exported(reader)
    assert not any("5000" in r["text"] or "Tom" in r["text"] for r in records.values())
    assert "5000" not in sessions["s1"]["summary"]


def test_delete_of_the_newer_value_makes_the_older_current_again(make: Make) -> None:
    core = make(**FOLDING)
    old = core.add_message("user", "My budget is 5000 euros.")
    chat(core)
    new = core.add_message("user", "My budget is now 8000 euros.")
    chat(core)
    assert "5000" not in core.working_state().summary
    result = core.delete(new.id)
    assert {old.id, *old.fact_ids} <= set(result.restored_ids) and result.relinked_ids == []

    reader = read_back(core)
    stored = rows(reader)
    assert all(stored[i].valid_to is None and stored[i].superseded_by is None for i in (old.id, *old.fact_ids))
    assert not {new.id, *new.fact_ids} & set(stored)
    texts = top(reader)
    assert texts[0] == "My budget is 5000 euros." and not any("8000" in t for t in texts)
    summary = reader.working_state().summary
    assert "My budget is 5000 euros." in summary and "8000" not in summary  # the statement is back
    assert "My budget is 5000 euros." in current_export_texts(reader)


def test_delete_of_the_middle_of_a_chain_relinks_it(make: Make) -> None:
    core = make()
    a = core.add_message("user", "My budget is 5000 euros.")
    b = core.add_message("user", "My budget is now 8000 euros.")
    c = core.add_message("user", "My budget is now 9000 euros.")
    result = core.delete(b.id)  # superseded: allowed, and the result says what was relinked
    assert set(result.deleted_ids) == {b.id, *b.fact_ids} and result.restored_ids == []
    assert a.fact_ids[0] in result.relinked_ids

    reader = read_back(core)
    stored = rows(reader)
    assert stored[a.fact_ids[0]].superseded_by == c.fact_ids[0] and stored[a.fact_ids[0]].valid_to is not None
    assert stored[a.id].valid_to is not None and stored[a.id].superseded_by in set(stored)  # no dangling link
    assert all(r.superseded_by is None or r.superseded_by in stored for r in stored.values())
    assert [r.id for r in reader.history(c.fact_ids[0])] == [a.fact_ids[0], c.fact_ids[0]]
    texts = top(reader)
    assert texts[0] == "My budget is now 9000 euros." and not any("8000" in t or "5000" in t for t in texts)
    assert keyword_hits(reader, "8000") == []
    records, _ = exported(reader)
    assert records[a.fact_ids[0]]["superseded_by"] == c.fact_ids[0] and b.id not in records


def test_restore_makes_a_superseded_value_and_its_message_current(make: Make) -> None:
    core = make(**FOLDING)
    a = core.add_message("user", "My budget is 5000 euros.")
    chat(core)
    b = core.add_message("user", "My budget is now 8000 euros.")
    chat(core)
    assert "8000" in core.working_state().summary and "5000" not in core.working_state().summary
    core.restore(a.fact_ids[0])

    reader = read_back(core)
    stored = rows(reader)
    assert stored[a.fact_ids[0]].valid_to is None and stored[a.id].valid_to is None
    assert stored[b.fact_ids[0]].valid_to is not None
    texts = top(reader)
    assert texts[0] == "My budget is 5000 euros." and not any("8000" in t for t in texts)
    assert "My budget is 5000 euros." in current_export_texts(reader)
    summary = reader.working_state().summary
    assert "My budget is 5000 euros." in summary and "8000" not in summary  # the summary follows


def test_recheck_restores_what_the_old_rules_superseded(make: Make) -> None:
    core = make()
    kept = core.add_message("user", "I ran 5 km on Monday.")
    later = core.add_message("user", "I ran 10 km on Wednesday.")
    budget = core.add_message("user", "My budget is 5000 euros.")
    core.add_message("user", "My budget is now 8000 euros.")
    # What 0.1's rules wrote: the second run superseded the first.
    wrong = [core.get(i).copy(valid_to=time.time(), superseded_by=later.fact_ids[0]) for i in (kept.id, *kept.fact_ids)]
    parts(core).backend.update(wrong)
    found = core.recheck_superseded()
    assert {x.record_id for x in found} == {kept.id, *kept.fact_ids}
    assert rows(read_back(core))[kept.id].valid_to is not None  # a dry run changes nothing
    reader = read_back(core)
    reader.recheck_superseded(apply=True)

    reader = read_back(reader)
    stored = rows(reader)
    assert all(stored[i].valid_to is None and stored[i].superseded_by is None for i in (kept.id, *kept.fact_ids))
    assert stored[budget.id].valid_to is not None  # a real update stays
    assert "I ran 5 km on Monday." in top(reader, "how far did I run")
    assert reader.recheck_superseded() == []


# --- whole sessions and users -----------------------------------------------------------------


def test_clear_of_a_session_removes_its_records_summary_and_window(make: Make) -> None:
    core = make(**FOLDING)
    core.add_message("user", "In this session the budget is 5000 dollars.")
    chat(core)
    other = core.add_message("user", "My cat is called Tom.", session_id="s2")
    letters = {"s1": refused(core, "s1"), "s2": refused(core, "s2")}
    assert "5000" in core.working_state().summary
    assert core.clear() > 0

    reader = read_back(core)
    assert {r.session_id for r in rows(reader).values()} == {"s2"} and other.id in rows(reader)
    state = reader.working_state()
    assert state.summary == "" and state.messages == []
    assert window(reader, session_id="s2") == ["My cat is called Tom."]
    assert not any("5000" in t for t in top(reader)) and keyword_hits(reader, "5000") == []
    records, sessions = exported(reader)
    assert all(r["session_id"] == "s2" for r in records.values()) and "s1" not in sessions
    assert [d.record_id for d in reader.dead_letters(user_id="alice")] == [letters["s2"]]  # no retry brings s1 back


def _files_naming(root: Path, needle: str) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_forget_leaves_no_record_keyword_summary_window_or_user_id(make: Make, backend_kind: str) -> None:
    user = f"gone{uuid.uuid4().hex[:8]}"
    core = make(user_id=user, **FOLDING)
    bob = make(user_id="bob")
    core.add_message("user", "My budget is 5000 euros.")
    chat(core)
    core.add_message("user", "My budget is now 8000 euros.", session_id="s2")
    core.delete(core.add_message("user", "I ran 5 km on Monday.").id)  # a deletion makes a new keyword version
    bob.add_message("user", "Bob's budget is 3000 euros.")
    refused(core, "s2")
    assert keyword_hits(core, "8000")
    receipt = core.forget()
    assert receipt.remaining_after_scan == 0 and receipt.records_deleted > 0
    # Embedded engines' files are purged; a server's are not the library's, and the receipt says so.
    assert receipt.disk_purged is (backend_kind not in SERVER_BACKENDS) and receipt.disk_notes
    assert keyword_hits(core, "8000") == [] and core.recall("budget", k=10) == []

    reader = read_back(core)
    assert rows(reader, user) == {} and all(r.user_id != user for r in rows(reader, None).values())
    assert reader.recall("budget", k=10) == [] and keyword_hits(reader, "8000") == []
    assert parts(reader).state.sessions(user) == [] and reader.dead_letters(user_id=user) == []
    assert parts(reader).state.keyword_version(user) is None  # reads after the forget made none
    for session in ("s1", "s2"):
        state = reader.working_state(session_id=session)
        assert state.summary == "" and state.messages == []
    assert reader.export_memories()["records"] == [] and reader.export_memories()["sessions"] == {}
    # No file the library writes under persist_dir (working state, journals) names the user.
    assert _files_naming(Path(reader.config.persist_dir), user) == []
    assert [h.text for h in read_back(reader, user_id="bob").recall("budget", k=3)] == ["Bob's budget is 3000 euros."]


def journal_text(path: Path) -> str:
    """The journal's records, decoded (numpy stores the text as UTF-32, out of a byte search's reach)."""
    with np.load(path, allow_pickle=False) as data:
        return str(data["head"])


def test_forget_reaches_the_journal_of_an_unfinished_reembed(
    make: Make, backend_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend_kind == "memory":
        pytest.skip("the in-process store keeps no reembed journal: it lives and dies with the process")
    core = make(user_id="alice")
    for i in range(10):
        core.add_message("user", f"alice's secret number {i} is {4000 + i}")
        core.add_message("user", f"bob's note {i}: the budget is {1000 + i} euros", user_id="bob")
    core.flush()
    new = DeterministicHashEmbedder(dimension=48)
    backend, calls = parts(core).store.backend, []
    real_upsert = backend.upsert

    def fails_on_the_second_batch(records: Any, vectors: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise ConnectionError("backend gone during the rewrite")
        real_upsert(records, vectors)

    monkeypatch.setattr(backend, "upsert", fails_on_the_second_batch)
    with pytest.raises(ConnectionError):
        reembed(core, new, batch_size=8, progress=False)
    monkeypatch.setattr(backend, "upsert", real_upsert)
    journal = Path(ReembedJournal(core.config).path)
    assert "secret number" in journal_text(journal)

    receipt = MemoryCore(core.config, embedder=new).forget()
    assert receipt.remaining_after_scan == 0
    assert "secret number" not in journal_text(journal) and '"alice"' not in journal_text(journal)
    release_stores()
    reembed(core.config, new, batch_size=8, progress=False)  # finishing brings nothing of alice back
    reader = read_back(MemoryCore(core.config, embedder=new))
    assert rows(reader) == {} and reader.export_memories()["records"] == []
    assert len(rows(reader, "bob")) >= 10 and not journal.exists()


def test_maintain_expires_each_kind_by_its_own_ttl_and_empties_the_window(make: Make) -> None:
    core = make(ttl_days_by_kind={"message": 1.0, "fact": 2.0})
    old = core.add_message("user", "My budget is 5000 euros.")
    assert old.fact_ids and window(core) == ["My budget is 5000 euros."]
    report = core.maintain(now=time.time() + 1.5 * 86400)
    assert report.expired == [old.id]

    reader = read_back(core)
    stored = rows(reader)
    assert old.id not in stored and stored[old.fact_ids[0]].valid_to is None  # a fact outlives its message
    assert window(reader) == [] and top(reader) == ["My budget is 5000 euros."]
    reader.maintain(now=time.time() + 3 * 86400)

    reader = read_back(reader)
    assert rows(reader) == {} and reader.recall("budget", k=10) == [] and keyword_hits(reader, "5000") == []
    assert reader.export_memories()["records"] == []


def test_import_writes_only_into_the_cores_own_user(make: Make) -> None:
    alice = make(**FOLDING)
    alice.add_message("user", "My monthly budget is 5000 dollars.")
    alice.add_message("user", "My monthly budget is now 7000 dollars.")
    chat(alice)
    export = alice.export_memories()
    alice_state = alice.working_state()
    assert "7000" in alice_state.summary
    before = sorted((r.id, r.text, r.valid_to) for r in rows(alice).values())
    bob = make(user_id="bob")
    own = bob.add_message("user", "Bob's own note.", session_id="b1")

    with pytest.raises(CrossUserImportError, match="allow_other_user=True"):
        bob.import_memories(bob.export_memories(), user_id="alice")
    assert bob.import_memories(export) == len(export["records"])
    assert bob.import_memories(export, user_id="carol", allow_other_user=True) == len(export["records"])

    reader = read_back(bob)
    # Alice's records, summary and recent turns are as they were.
    assert sorted((r.id, r.text, r.valid_to) for r in rows(reader, "alice").values()) == before
    assert reader.working_state(user_id="alice") == alice_state
    copied = rows(reader, "bob")
    assert {r.user_id for r in copied.values()} == {"bob"} and len(copied) == len(export["records"]) + 1
    assert own.id in copied and not {i for i, *_ in before} & set(copied)
    assert all(r.superseded_by is None or r.superseded_by in copied for r in copied.values())
    assert top(reader, "monthly budget")[0] == "My monthly budget is now 7000 dollars."
    state = reader.working_state()  # the file's session, as Bob's
    assert state.summary == alice_state.summary and window(reader) == [m.content for m in alice_state.messages]
    assert {m.id for m in state.messages} <= set(copied) and window(reader, "b1") == ["Bob's own note."]
    assert {r.user_id for r in rows(reader, "carol").values()} == {"carol"}
    assert {r["user_id"] for r in reader.export_memories()["records"]} == {"bob"}


# --- the real model ---------------------------------------------------------------------------


@pytest.mark.slow
def test_edits_with_the_real_model(make: Make) -> None:
    """The edits above with the default embedder and its stored-vector policy: what recall ranks first."""
    core = make(embedder=None)
    assert parts(core).embedder.model_id == E5_SMALL_ID
    a = core.add_message("user", "My budget is 5000 euros.")
    core.add_message("user", "I like green tea with breakfast.")
    b = core.add_message("user", "My budget is now 8000 euros.")
    c = core.add_message("user", "My budget is now 9000 euros.")
    assert {*b.superseded_ids} >= set(a.fact_ids) and set(b.fact_ids) <= set(c.superseded_ids)
    assert core.delete(b.id).relinked_ids
    edited = core.update(c.fact_ids[0], "My budget is 9500 euros.")

    reader = read_back(core)
    assert top(reader)[0] == "My budget is 9500 euros."
    assert not any(x in t for t in top(reader) for x in ("5000", "8000", "9000"))
    result = reader.delete(edited.id)
    assert set(c.fact_ids) <= set(result.restored_ids)

    reader = read_back(reader)
    assert top(reader)[0] == "My budget is now 9000 euros."
    assert rows(reader)[a.fact_ids[0]].superseded_by == c.fact_ids[0]
    assert "My budget is now 9000 euros." in current_export_texts(reader)


# --- the LangGraph store (the paragraph under the table) --------------------------------------


def test_the_langgraph_store_searches_the_current_item(base_config: dict[str, Any]) -> None:
    from langchain_memory_vec._store_items import record_id
    from langchain_memory_vec.store import VectorSummaryStore

    alice = ("memories", "alice")
    config = MemoryConfig(**base_config)
    store = VectorSummaryStore(config, embedder=EMBEDDER)
    store.put(alice, "a", {"text": "My budget is 5000 euros."})
    store.put(alice, "b", {"text": "My budget is now 8000 euros."})
    store.put(alice, "c", {"text": "I ran 5 km on Monday."})
    store.put(alice, "d", {"text": "I ran 10 km on Wednesday."})
    if config.backend != "memory":  # read back through a new client
        store.close()
        store = VectorSummaryStore(config, embedder=EMBEDDER)
    keys = [i.key for i in store.search(alice, query="what is my budget", limit=10)]
    assert "b" in keys and "a" not in keys and {"c", "d"} <= set(keys)  # two events: both kept
    old = store.get(alice, "a")
    assert old is not None and old.value == {"text": "My budget is 5000 euros."}  # get by key: as put
    [record] = store.backend.get([record_id(alice, "a")])
    assert record.valid_to is not None and record.metadata["lg_superseded_by"] == "b"
    store.delete(alice, "b")  # the newer item gone: the older is current again
    assert "a" in [i.key for i in store.search(alice, query="what is my budget", limit=10)]
    store.close()

    plain_config = config.model_copy(update={"collection": f"{config.collection}_plain"})
    plain = VectorSummaryStore(plain_config, embedder=EMBEDDER, conflict_overwrite=False)
    plain.put(alice, "a", {"text": "My budget is 5000 euros."})
    plain.put(alice, "b", {"text": "My budget is now 8000 euros."})
    if config.backend != "memory":
        plain.close()
        plain = VectorSummaryStore(plain_config, embedder=EMBEDDER, conflict_overwrite=False)
    assert {"a", "b"} <= {i.key for i in plain.search(alice, query="what is my budget", limit=10)}
    assert all(r.valid_to is None for r in plain.backend.get([record_id(alice, "a"), record_id(alice, "b")]))
    plain.close()
