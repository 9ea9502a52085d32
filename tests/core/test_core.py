from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta, timezone

import pytest

from memory_vec import (
    ContentTooLargeError,
    InvalidContentError,
    InvalidIdError,
    InvalidInputError,
    InvalidMetadataError,
    InvalidRoleError,
    InvalidTimestampError,
    MemoryConfig,
    MemoryCore,
    WriteEvent,
)
from memory_vec._model.errors import BackendUnavailableError
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import ScriptedLLM, parts


def test_add_and_recall_round_trip(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    ts = datetime(2023, 5, 8, 13, 56)
    result = core.add_message(
        "user", "The budget cap is 5000.", timestamp=ts, metadata={"k": "v", "n": [1, {"x": None}]}
    )
    assert result.event is WriteEvent.ADDED and result.seq == 1 and not result.pending
    core.add_message("user", "My cat is called Miso.")
    hits = core.recall("what is the budget cap?", k=5)
    top = hits[0]
    assert top.text == "The budget cap is 5000."
    assert top.role == "user" and top.session_id == "s1" and top.kind == "message"
    assert top.metadata == {"k": "v", "n": [1, {"x": None}]}
    assert top.timestamp == ts.replace(tzinfo=timezone.utc)  # naive taken as UTC
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_repeated_message_is_stored_twice(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    a = core.add_message("user", "yes")
    b = core.add_message("user", "yes")
    assert a.id != b.id and b.seq == a.seq + 1
    from memory_vec.backends import RecordFilter

    assert parts(core).backend.count(RecordFilter(kinds=("message",))) == 2


def test_epoch_timestamp_and_per_call_session(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    core.add_message("user", "session two fact", timestamp=1683554160, session_id="s2")
    hit = core.recall("session two fact", k=1)[0]
    assert hit.session_id == "s2" and hit.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert core.recall("session two fact", scope="session") == []
    assert core.recall("session two fact", scope="session", session_id="s2")[0].id == hit.id


def test_users_never_see_each_other(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = InMemoryBackend(), InMemoryStateStore()
    alice = make_core(backend=backend, state=state, user_id="alice")
    bob = make_core(backend=backend, state=state, user_id="bob")
    alice.add_message("user", "alice secret password is tulip")
    bob.add_message("user", "bob likes tulip bulbs")
    assert {h.user_id for h in alice.recall("tulip", k=10)} == {"alice"}
    assert {h.user_id for h in bob.recall("tulip", k=10)} == {"bob"}
    assert alice.recall("tulip", k=10, user_id="bob")[0].user_id == "bob"  # explicit override only


def test_filters_and_time_range(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for day in range(5):
        core.add_message(
            "user",
            f"gym session on day {day}",
            timestamp=base + timedelta(days=day),
            metadata={"topic": "gym" if day % 2 == 0 else "other", "day": day},
        )
    hits = core.recall("gym session", k=10, filters={"topic": "gym"})
    assert sorted(h.metadata["day"] for h in hits) == [0, 2, 4]
    hits = core.recall("gym session", k=10, since=base + timedelta(days=1), until=base + timedelta(days=3))
    assert sorted(h.metadata["day"] for h in hits) == [1, 2, 3]
    with pytest.raises(InvalidMetadataError):
        core.recall("gym", filters={"topic": ["a"]})


def test_shared_memories_are_opt_in_and_global(make_core) -> None:  # type: ignore[no-untyped-def]
    from memory_vec._model.records import MemoryRecord

    backend = InMemoryBackend()
    core = make_core(backend=backend, user_id="alice")
    vec = parts(core).embedder.embed_documents(["office opening hours are nine to five"])
    backend.upsert(
        [
            MemoryRecord(
                id="g1",
                text="office opening hours are nine to five",
                role="system",
                user_id="admin",
                session_id="kb",
                timestamp=0.0,
                visibility="global",
            )
        ],
        vec,
    )
    backend.upsert(
        [
            MemoryRecord(
                id="p1",
                text="office opening hours are nine to five",
                role="user",
                user_id="mallory",
                session_id="x",
                timestamp=0.0,
            )
        ],
        vec,
    )
    ids = {h.id for h in core.recall("office opening hours", k=10)}
    assert ids == {"g1"}  # shared yes, another user's private no
    assert core.recall("office opening hours", k=10, include_shared=False) == []


BAD_CALLS = [
    ({"role": "user", "content": ""}, InvalidContentError),
    ({"role": "user", "content": "   \n"}, InvalidContentError),
    ({"role": "user", "content": 42}, InvalidContentError),
    ({"role": "user", "content": None}, InvalidContentError),
    ({"role": "robot", "content": "hi"}, InvalidRoleError),
    ({"role": "user", "content": "x" * 40000}, ContentTooLargeError),
    ({"role": "user", "content": "a\ud800b"}, InvalidContentError),
    ({"role": "user", "content": "bell\x07"}, InvalidContentError),
    ({"role": "user", "content": "hi", "timestamp": math.nan}, InvalidTimestampError),
    ({"role": "user", "content": "hi", "timestamp": math.inf}, InvalidTimestampError),
    ({"role": "user", "content": "hi", "timestamp": "yesterday"}, InvalidTimestampError),
    ({"role": "user", "content": "hi", "timestamp": 1e300}, InvalidTimestampError),
    ({"role": "user", "content": "hi", "metadata": {"a": object()}}, InvalidMetadataError),
    ({"role": "user", "content": "hi", "metadata": {"a": math.nan}}, InvalidMetadataError),
    ({"role": "user", "content": "hi", "metadata": {1: "a"}}, InvalidMetadataError),
    ({"role": "user", "content": "hi", "metadata": ["a"]}, InvalidMetadataError),
    ({"role": "user", "content": "hi", "metadata": {"big": "x" * 20000}}, InvalidMetadataError),
    ({"role": "user", "content": "hi", "session_id": ""}, InvalidIdError),
    ({"role": "user", "content": "hi", "session_id": "s" * 257}, InvalidIdError),
    ({"role": "user", "content": "hi", "user_id": "a\ud800"}, InvalidIdError),
    ({"role": "user", "content": "hi", "user_id": 7}, InvalidIdError),
]


@pytest.mark.parametrize(("kwargs", "error"), BAD_CALLS)
def test_bad_input_gets_named_error_and_nothing_is_written(make_core, kwargs, error) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    core.add_message("user", "existing message")
    role, content = kwargs.pop("role"), kwargs.pop("content")
    with pytest.raises(error):
        core.add_message(role, content, **kwargs)
    assert parts(core).backend.count() == 1
    assert [m.content for m in core.working_state().messages] == ["existing message"]


def test_batch_is_validated_before_anything_is_written(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    with pytest.raises(InvalidRoleError):
        core.add_messages([("user", "fine"), ("bad-role", "not fine")])
    assert parts(core).backend.count() == 0 and core.working_state().messages == []


def test_unusual_ids_are_stored_and_filtered_exactly(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = InMemoryBackend(), InMemoryStateStore()
    weird = ['a"b', "it's", "back\\slash", "x' or 1==1 --", "用户😀", "u" * 256]
    for uid in weird:
        make_core(backend=backend, state=state, user_id=uid).add_message("user", f"note of {uid}")
    for uid in weird:
        hits = make_core(backend=backend, state=state, user_id=uid).recall("note of", k=20)
        assert {h.user_id for h in hits} == {uid}


def test_recall_input_checks(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    with pytest.raises(InvalidContentError):
        core.recall("")
    with pytest.raises(InvalidInputError):
        core.recall("x", k=0)
    with pytest.raises(InvalidInputError):
        core.recall("x", scope="everyone")


@pytest.mark.slow
def test_buffer_never_exceeds_budget_over_500_turns(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(max_token_limit=400, summary_max_tokens=120, relevant_token_limit=150, keep_recent_turns=4)
    for i in range(250):
        core.add_message("user", f"Turn {i}: I need {i} apples and my budget is {i * 3} dollars, deadline day {i}.")
        core.add_message("assistant", f"Noted turn {i}. " + "Some longer explanation text. " * (i % 7))
        if i % 25 == 0:
            ctx = core.build_context(f"apples for turn {i}")
            assert ctx.tokens["summary"] + ctx.tokens["recent"] <= 400
            assert ctx.tokens["relevant"] <= 150
            assert ctx.tokens["total"] <= 550
            state = core.working_state()
            # folding keeps the stored buffer near its budget too
            assert state.summary_tokens + state.recent_tokens <= 400
    assert core.working_state().summary  # something was summarized
    from memory_vec.backends import RecordFilter

    stored = parts(core).backend.count(RecordFilter(kinds=("message",), include_superseded=True))
    assert stored == 500  # every message is still stored


def test_huge_single_message_is_truncated_in_context_not_in_store(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(max_token_limit=200, summary_max_tokens=50, keep_recent_turns=1)
    text = "word " * 3000
    core.add_message("user", text)
    ctx = core.build_context()
    assert ctx.tokens["recent"] <= 200 and ctx.recent[0].content.endswith("[truncated]")
    assert core.recall("word", k=1)[0].text == text


def test_summarizer_failure_keeps_previous_summary_and_retries(make_core) -> None:  # type: ignore[no-untyped-def]
    llm = ScriptedLLM(["- first summary", RuntimeError("LLM down"), "Error: 500", "- second summary"])
    core = MemoryCore(
        MemoryConfig(
            user_id="u",
            session_id="s",
            max_token_limit=120,
            summary_max_tokens=40,
            keep_recent_turns=2,
            score_threshold=0.0,
            summary_in_background=False,
        ),  # read each turn's summary right after it
        embedder=parts(make_core()).embedder,
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
        llm=llm,
    )
    summaries = []
    for i in range(40):
        core.add_message("user", f"message number {i} with some words to fill the buffer up")
        summaries.append(core.working_state().summary)
        if llm.calls == 4:
            break
    assert "- first summary" in summaries
    assert summaries[-1] == "- second summary"
    first_at = summaries.index("- first summary")
    second_at = summaries.index("- second summary")
    # between the two, the failed folds left the first summary in place
    assert all(s == "- first summary" for s in summaries[first_at:second_at])
    assert llm.calls == 4


def test_summary_folds_only_new_messages(make_core) -> None:  # type: ignore[no-untyped-def]
    llm = ScriptedLLM(default="- running summary")
    core = MemoryCore(
        MemoryConfig(
            user_id="u",
            session_id="s",
            max_token_limit=120,
            summary_max_tokens=40,
            keep_recent_turns=2,
            summary_in_background=False,
        ),  # every fold's prompt in order (test_background_folds: off the turn)
        embedder=parts(make_core()).embedder,
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
        llm=llm,
    )
    for i in range(20):
        core.add_message("user", f"unique marker m{i:03d} with filler words to take tokens")
    seen = [p.count(f"m{i:03d}") for i in range(20) for p in llm.prompts]
    per_marker = [sum(p.split("NEW MESSAGES:")[1].count(f"m{i:03d}") for p in llm.prompts) for i in range(20)]
    assert max(per_marker) == 1  # no message is folded twice
    assert seen  # prompts were made


def test_render_annotates_date_and_speaker(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(keep_recent_turns=0)
    core.add_message("user", "I started surfing five years ago.", timestamp=datetime(2023, 5, 8))
    core.add_message("user", "unrelated filler", session_id="other")
    ctx = core.build_context("when did I start surfing?", session_id="fresh")
    text = ctx.render()
    # the year the words refer to, resolved against the message's own date
    assert "- [2023-05-08 · user · event 2018-01-01/2018-12-31] I started surfing five years ago." in text
    assert text.splitlines()[0].startswith("Relevant memories")
    assert ctx.tokens["relevant"] > 0 and ctx.tokens["total"] == sum(
        ctx.tokens[k] for k in ("summary", "recent", "relevant")
    )


def test_relevant_slot_skips_what_recent_window_shows(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    core.add_message("user", "the wifi password is hunter2")
    ctx = core.build_context("wifi password")
    assert ctx.relevant == [] and "hunter2" in ctx.render_history()


def test_clear_removes_only_this_session(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    core.add_message("user", "keep me", session_id="other")
    core.add_message("user", "drop me")
    assert core.clear() == 1
    assert core.working_state().messages == []
    assert [h.text for h in core.recall("me", k=5)] == ["keep me"]


def test_forget_user_removes_everything_and_verifies(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = InMemoryBackend(), InMemoryStateStore()
    core = make_core(backend=backend, state=state)
    other = make_core(backend=backend, state=state, user_id="u2")
    for s in ("a", "b"):
        core.add_message("user", f"fact in {s}", session_id=s)
    other.add_message("user", "other user's fact")
    receipt = core.forget()
    assert (receipt.records_deleted, receipt.sessions_cleared, receipt.remaining_after_scan) == (2, 2, 0)
    # Only the other user's records are left (its message, and the fact stated in it).
    assert {r.user_id for r in backend.scan(RecordFilter())} == {"u2"}
    assert other.recall("fact", k=5)[0].user_id == "u2"


class FlakyBackend(InMemoryBackend):
    down = False

    def upsert(self, records, vectors):  # type: ignore[no-untyped-def]
        if self.down:
            raise BackendUnavailableError("server stopped")
        super().upsert(records, vectors)

    def query(self, vector, *, k, where):  # type: ignore[no-untyped-def]
        if self.down:
            raise BackendUnavailableError("server stopped")
        return super().query(vector, k=k, where=where)


def test_backend_down_keeps_the_turn_and_answers_degraded(make_core) -> None:  # type: ignore[no-untyped-def]
    """An outage: the turn is acknowledged in the working state (pending), the
    context comes back degraded with it among the recent turns, recall raises,
    and the session's next call after the outage stores it (heal)."""
    backend = FlakyBackend()
    core = make_core(backend=backend, backend_retries=0)
    core.add_message("user", "stored while up")
    backend.down = True
    result = core.add_message("user", "written while down")
    assert result.pending and backend.count() == 1
    ctx = core.build_context("stored")
    assert ctx.degraded and ctx.relevant == [] and core.last_trace and core.last_trace.degraded
    assert "written while down" in [m.content for m in ctx.recent]
    with pytest.raises(BackendUnavailableError):
        core.recall("stored")
    backend.down = False
    core.add_message("user", "written after recovery")
    assert backend.count() == 3 and backend.get([result.id])[0].text == "written while down"


def test_a_new_record_is_keyword_scored_by_the_first_recall(make_core) -> None:  # type: ignore[no-untyped-def]
    """The user's keyword index is built by this recall, from the backend."""
    core = make_core()
    result = core.add_message("user", "the gate code for the warehouse is ZQ7781")
    assert not result.pending and parts(core).store.keywords.users == 0
    [hit] = [h for h in core.recall("ZQ7781 gate code", k=5) if h.id == result.id]
    assert hit.components["bm25"] > 0


def test_second_core_reuses_loaded_parts() -> None:
    from memory_vec.embeddings import get_embedder

    a = get_embedder("hash:32")
    assert get_embedder("hash:32") is a
    cfg = MemoryConfig(user_id="x", embedding_model="hash:32", collection="reuse-test")
    c1, c2 = MemoryCore(cfg), MemoryCore(cfg)
    assert (
        parts(c1).embedder is parts(c2).embedder
        and parts(c1).backend is parts(c2).backend
        and parts(c1).state is parts(c2).state
    )


def test_async_twins(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()

    async def run() -> None:
        await core.aadd_message("user", "async stored fact about kiwis")
        hits = await core.arecall("kiwis")
        assert hits and hits[0].text == "async stored fact about kiwis"
        ctx = await core.abuild_context("kiwis", session_id="other")
        assert ctx.relevant
        assert await core.aclear() == 1

    asyncio.run(run())


def test_message_only_in_working_state_is_restored_to_the_store(make_core) -> None:  # type: ignore[no-untyped-def]
    """A crash between the state append and the vector write is healed."""
    from memory_vec.state.base import NewMessage

    backend, state = InMemoryBackend(), InMemoryStateStore()
    state.append("u1", "s1", [NewMessage("orphan-1", "user", "written just before a crash", 1.0, 6)])
    core = make_core(backend=backend, state=state)
    core.build_context("anything")
    assert [r.text for r in backend.get(["orphan-1"])] == ["written just before a crash"]
    assert core.session_history()[0].seq == 1


def test_restored_message_gets_the_contextual_vector_a_normal_write_stores(make_core) -> None:  # type: ignore[no-untyped-def]
    from memory_vec.backends.base import RecordFilter
    from memory_vec.state.base import NewMessage

    backend, state = InMemoryBackend(), InMemoryStateStore()
    # The text method here; the default vector method: tests/core/test_stored_vectors.py.
    core = make_core(backend=backend, state=state, contextual_embedding=True, contextual_method="text")
    core.add_message("user", "my cat is called Miso")
    state.append("u1", "s1", [NewMessage("orphan-2", "assistant", "what a lovely name", 2.0, 5)])
    other = make_core(
        backend=backend,
        state=state,
        contextual_embedding=True,  # a new process, say
        contextual_method="text",
    )
    other.build_context("anything")
    expected = parts(other).embedder.embed_documents(["my cat is called Miso\nwhat a lovely name"])[0]
    [hit] = backend.query(expected, k=1, where=RecordFilter(ids=("orphan-2",)))
    assert hit.similarity == pytest.approx(1.0, abs=1e-5)
