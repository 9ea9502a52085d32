"""The engine redesign's contracts, each on real stores: one bad record never
stalls anyone, collections never leak into each other, writer settings are
never silently rewritten, traces never cross threads, a summary patch never
overwrites a fold (or the other way round)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from memory_vec import ConfigError, MemoryConfig, MemoryCore, RecordRejectedError, release_stores
from memory_vec._model.errors import InvalidMetadataError
from memory_vec.testing import DeterministicHashEmbedder, parts

EMBEDDER = DeterministicHashEmbedder(dimension=64)
EMBEDDED = ["chroma", "milvus"]


def _config(backend: str, tmp_path: Path, **overrides: Any) -> MemoryConfig:
    base: dict[str, Any] = {
        "backend": backend,
        "persist_dir": str(tmp_path / "mem"),
        "score_threshold": 0.0,
        "collection": f"c_{uuid.uuid4().hex[:8]}",
        "fact_extractor": "none",
    }
    return MemoryConfig(**{**base, **overrides})


@pytest.fixture(autouse=True)
def _fresh_stores() -> Any:
    yield
    release_stores()


@pytest.mark.integration
@pytest.mark.parametrize("backend", EMBEDDED)
def test_validation_refuses_what_the_backend_cannot_store(backend: str, tmp_path: Path) -> None:
    core = MemoryCore(_config(backend, tmp_path, user_id="mallory"), embedder=EMBEDDER)
    with pytest.raises(InvalidMetadataError, match="outside the integers"):
        core.add_message("user", "a huge number", metadata={"n": 2**70})
    assert core.working_state().messages == []  # nothing written, the working state included
    assert parts(core).backend.count() == 0


class PoisonEmbedder(DeterministicHashEmbedder):
    """A model that returns NaN for one text (as a broken model can): Chroma
    refuses such a vector, and only Chroma can tell."""

    def embed_documents(self, texts: Any) -> Any:
        vectors = super().embed_documents(texts)
        for i, text in enumerate(texts):
            if "POISON" in text:
                vectors[i] = float("nan")
        return vectors


@pytest.mark.integration
@pytest.mark.parametrize("backend", EMBEDDED)
def test_a_refused_record_is_dead_lettered_and_blocks_nobody(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(backend, tmp_path, user_id="mallory", contextual_embedding=False)
    embedder = PoisonEmbedder(dimension=64)
    core = MemoryCore(config, embedder=embedder)
    canary = MemoryCore(config.model_copy(update={"user_id": "canary"}), embedder=embedder)
    assert parts(canary).store is parts(core).store
    # Switch the library's checks off, so that only the real engine can refuse
    # the record: Milvus refuses integers beyond int64 in JSON, Chroma a NaN
    # vector. The writer's isolation is what is tested here.
    import memory_vec._model.validate as checks

    monkeypatch.setattr(checks, "INT_MAX", 2**80)
    monkeypatch.setattr(parts(core).store, "validate", lambda records, vectors=None: None)
    monkeypatch.setattr(parts(core).store.writer, "_validate", None)
    if backend == "milvus":
        bad: dict[str, Any] = {"content": "a huge number", "metadata": {"n": 2**70}}
    else:
        bad = {"content": "POISON pill"}
    with pytest.raises(RecordRejectedError) as refused:
        core.add_message("user", **bad)
    bad_id = refused.value.record_ids[0]
    assert [d.record_id for d in core.dead_letters()] == [bad_id]
    # Nobody is stalled: the canary and mallory's next message are stored.
    assert not canary.add_message("user", "the canary sings at dawn").pending
    assert not core.add_message("user", "a normal message").pending
    assert canary.recall("canary sings", k=1)[0].text == "the canary sings at dawn"
    monkeypatch.undo()
    # After a restart, healing the session never re-queues the dead letter.
    release_stores()
    again = MemoryCore(config, embedder=embedder)
    result = again.add_message("user", "after the restart")
    assert not result.pending
    assert [d.record_id for d in again.dead_letters()] == [bad_id]
    assert bad_id not in {r.id for r in again.session_history()}
    assert {r.text for r in again.session_history()} == {"a normal message", "after the restart"}
    assert again.drop_dead_letters() == 1 and again.dead_letters() == []


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("backend", EMBEDDED)
def test_two_collections_under_one_persist_dir_do_not_leak(backend: str, tmp_path: Path) -> None:
    a = MemoryCore(_config(backend, tmp_path, collection="coll_a"), embedder=EMBEDDER)
    b = MemoryCore(_config(backend, tmp_path, collection="coll_b"), embedder=EMBEDDER)
    a.add_message("user", "the secret of collection A is tangerine")
    assert b.working_state().messages == []
    assert all("tangerine" not in h.text for h in b.recall("secret tangerine", k=5))
    b.build_context("what is the secret?")  # heals B's session: must not copy A's turns
    assert parts(b).backend.count() == 0
    b.forget()
    assert [m.content for m in a.working_state().messages] == ["the secret of collection A is tangerine"]
    assert a.recall("tangerine", k=1)[0].text == "the secret of collection A is tangerine"


def test_other_writer_settings_on_one_store_raise(tmp_path: Path) -> None:
    config = _config("memory", tmp_path)
    MemoryCore(config, embedder=EMBEDDER)
    with pytest.raises(ConfigError, match="batch_size"):
        MemoryCore(config.model_copy(update={"write_batch_size": 7}), embedder=EMBEDDER)
    MemoryCore(config.model_copy(update={"user_id": "other"}), embedder=EMBEDDER)  # same settings: fine


def test_ids_the_config_accepts_are_accepted_everywhere() -> None:
    with pytest.raises(ConfigError, match="control characters"):
        MemoryConfig(user_id="bad\x07id")
    config = MemoryConfig(user_id="ünïcode 用户 id", session_id="s:1/2")
    core = MemoryCore(config.model_copy(update={"collection": f"c_{uuid.uuid4().hex[:8]}"}), embedder=EMBEDDER)
    core.add_message("user", "hello there")
    assert core.build_context("hello").recent[0].content == "hello there"


def test_threads_sharing_one_core_each_see_their_own_trace(make_core: Any) -> None:
    core = make_core()
    for user in ("alice", "bob"):
        core.add_message("user", f"{user} likes the number {len(user)}", user_id=user)
    errors: list[str] = []
    barrier = threading.Barrier(2)

    def worker(user: str) -> None:
        barrier.wait()
        for _ in range(40):
            ctx = core.build_context("which number?", user_id=user)
            assert ctx.trace is not None
            seen = {ctx.trace.user_id, core.last_trace.user_id if core.last_trace else None}
            ids = {r["id"] for r in ctx.trace.recalled}
            if seen != {user} or not {m.id for m in ctx.relevant} <= ids:
                errors.append(f"{user} saw {seen}")
            core.recall("number", user_id=user)
            if core.last_trace is None or core.last_trace.user_id != user:
                errors.append(f"{user} recall trace wrong")

    threads = [threading.Thread(target=worker, args=(u,)) for u in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_async_twins_bring_the_trace_back(make_core: Any) -> None:
    import asyncio

    core = make_core()

    async def turn() -> None:
        await core.aadd_message("user", "the locker code is 4411")
        ctx = await core.abuild_context("locker code?")
        assert core.last_trace is ctx.trace and ctx.trace is not None and ctx.trace.operation == "build_context"

    asyncio.run(turn())


def test_a_summary_patch_during_a_fold_is_not_lost(make_core: Any) -> None:
    from memory_vec.backends import InMemoryBackend
    from memory_vec.state import InMemoryStateStore

    backend, state = InMemoryBackend(), InMemoryStateStore()
    other = make_core(backend=backend, state=state)
    other.add_message("user", "The budget is 5000.")
    assert state.commit_fold(
        "u1", "s1", expected_folded_through=0, folded_through=0, summary="User: The budget is 5000.", summary_tokens=8
    )

    class PatchMidFold:
        name = "patch-mid-fold"
        calls = 0

        def summarize(self, previous: str, messages: Any, *, max_tokens: int) -> str:
            PatchMidFold.calls += 1
            if PatchMidFold.calls == 1:  # another writer supersedes the budget meanwhile
                other.add_message("user", "Actually the budget is now 8000.")
            return previous + " More talk."

    folding = MemoryCore(
        MemoryConfig(
            user_id="u1",
            session_id="s1",
            score_threshold=0.0,
            max_token_limit=120,
            summary_max_tokens=60,
            keep_recent_turns=1,
        ),
        embedder=parts(other).embedder,
        backend=backend,
        state_store=state,
        summarizer=PatchMidFold(),
    )
    for i in range(8):
        folding.add_message("assistant", f"filler turn number {i} about the weather and nothing else")
    folding.flush()  # a custom summarizer folds off the turn
    summary = state.load("u1", "s1").summary
    assert PatchMidFold.calls >= 1
    assert "8000" in summary and "5000" not in summary
