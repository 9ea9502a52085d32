"""The stored-vector policy (memory_vec._pipelines.embed_text): what each stored vector
is under each method, what a turn embeds, and the migration of a store made
by another policy (reembed)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec._model.errors import EmbeddingModelMismatchError
from memory_vec._model.records import MemoryRecord
from memory_vec._pipelines.embed_text import EmbedTextPolicy
from memory_vec._pipelines.maintenance import reembed
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.embeddings.base import normalize_rows
from memory_vec.state import InMemoryStateStore
from memory_vec.state.base import NewMessage
from memory_vec.testing import DeterministicHashEmbedder, parts

CHAT = [
    ("assistant", "How was the pottery workshop?"),
    ("user", "Great, I made a bowl."),
    ("assistant", "Nice! What colour?"),
    ("user", "Blue, like the sea."),
]


class CountingEmbedder(DeterministicHashEmbedder):
    """The hashing embedder, recording each call's texts."""

    def __init__(self, dimension: int = 256) -> None:
        super().__init__(dimension)
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: Any) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed_documents(texts)


def _similarity(core: MemoryCore, text: str, vector: np.ndarray, user: str = "u1") -> float:
    """Cosine between ``vector`` and the stored vector of the message ``text``."""
    [record] = [r for r in parts(core).backend.scan(RecordFilter(user_id=user, kinds=("message",))) if r.text == text]
    [hit] = parts(core).backend.query(vector, k=1, where=RecordFilter(ids=(record.id,)))
    return hit.similarity


def _embed(core: MemoryCore, text: str) -> np.ndarray:
    vector: np.ndarray = parts(core).embedder.embed_documents([text])[0]
    return vector


# --- the rule ---------------------------------------------------------------------------
def test_pair_rule_shares_one_text_between_a_user_message_and_its_reply() -> None:
    policy = EmbedTextPolicy(method="pair", chars=7, weight=0.0)
    pair = "colour?\nBlue, like the sea.\nLovely."  # the end of the message before, the user message, the reply
    turns = [*CHAT[2:], ("assistant", "Lovely."), ("user", "Bye"), ("user", "Still there?")]
    plan = policy.plan_window(turns, range(len(turns)))
    texts = [plan.texts[i] for i in plan.own]
    assert texts[1:3] == [pair, pair] and plan.texts.count(pair) == 1  # embedded once
    assert texts[0] == "Nice! What colour?"  # a session's first message: nothing before it
    assert texts[3:] == ["Lovely.\nBye", "Bye\nStill there?"]  # user messages without a reply: units of their own
    plain = EmbedTextPolicy(method="pair", chars=7, weight=0.0, lone_weight=0.0).plan_window(turns, range(len(turns)))
    assert [plain.texts[i] for i in plain.own][3:] == ["Bye", "Still there?"]  # contextual_lone_weight=0: plain
    assert EmbedTextPolicy(method="pair", chars=0).plan_window(turns, [1]).texts[-1] == "Blue, like the sea.\nLovely."
    assert policy.plan_window([("user", "a"), ("assistant", "b"), ("assistant", "more")], [2]).texts == ("b\nmore",)
    assert policy.completes_pair([("user", "q")], [("assistant", "a")])
    assert not policy.completes_pair([("assistant", "q")], [("assistant", "a")])
    assert not EmbedTextPolicy(method="text").completes_pair([("user", "q")], [("assistant", "a")])


def test_pair_rule_mixes_in_the_previous_unit() -> None:
    turns = [*CHAT, ("assistant", "Lovely.")]  # units: (0), (1, 2), (3, 4)
    plan = EmbedTextPolicy(method="pair", chars=0, weight=0.5).plan_window(turns, [1, 2, 3, 4])
    first, second = "Great, I made a bowl.\nNice! What colour?", "Blue, like the sea.\nLovely."
    assert plan.texts == (CHAT[0][1], first, second)  # each unit embedded once
    assert plan.own == (1, 1, 2, 2) and plan.context == (0, 0, 1, 1)
    vectors = plan.vectors(np.eye(3, dtype=np.float32))
    assert np.allclose(vectors[3], normalize_rows(np.array([[0.0, 0.5, 1.0]], dtype=np.float32))[0])


def test_a_burst_of_user_messages_is_mixed_with_what_came_before() -> None:
    """A user message without a reply (one of a burst) is a unit of its own:
    its plain vector plus the unit before's, so a short "and in blue" is found
    by its context; the texts are the ones the turn has anyway (no more to embed)."""
    turns = [
        ("user", "I made a bowl."),
        ("assistant", "Nice!"),
        ("user", "at the workshop"),
        ("user", "in blue"),
        ("assistant", "Lovely."),
    ]
    plan = EmbedTextPolicy().plan_window(turns, [2, 3, 4])
    assert plan.texts == ("I made a bowl.\nNice!", "at the workshop", "in blue\nLovely.")
    assert plan.own == (1, 2, 2) and plan.context == (0, 1, 1)
    assert plan.context_weights == (0.5, 1.0, 1.0)  # contextual_lone_weight for the lone one
    own = EmbedTextPolicy(own_weight=0.5).plan_window(turns, [3, 4])  # the user message adds its own vector
    vectors = own.vectors(np.eye(len(own.texts), dtype=np.float32))
    expected = normalize_rows(np.array([[1.0, 1.0, 0.5], [1.0, 1.0, 0.0]], dtype=np.float32))
    assert own.texts == ("at the workshop", "in blue\nLovely.", "in blue") and np.allclose(vectors, expected)


def test_a_burst_embeds_nothing_more(make_core) -> None:  # type: ignore[no-untyped-def]
    emb = CountingEmbedder()
    core = make_core(embedder=emb, hybrid=False)
    core.add_messages([("user", "Hi there."), ("assistant", "Hello! How are you?")])
    for text in ("ok so", "the trip is off"):
        core.build_context(text)
        emb.calls.clear()
        core.add_message("user", text)
        assert emb.calls == []  # its own vector is the query's, the unit before it is cached
    core.build_context("What now?")
    emb.calls.clear()
    core.add_messages([("user", "What now?"), ("assistant", "Let's rebook.")])
    assert emb.calls == [["What now?\nLet's rebook."]]


def test_text_and_vector_rules() -> None:
    turns = [("user", "Where?"), ("assistant", "Paris.")]
    assert EmbedTextPolicy(method="text", chars=3).plan_window(turns, [0, 1]).texts == ("Where?", "re?\nParis.")
    assert EmbedTextPolicy(contextual=False).plan_window(turns, [1]).texts == ("Paris.",)
    plan = EmbedTextPolicy(method="vector", weight=0.25).plan_window(turns, [0, 1])
    assert plan.texts == ("Where?", "Paris.") and plan.own == (0, 1) and plan.context == (None, 0)
    expected = normalize_rows(np.array([[1.0, 0.0], [0.25, 1.0]], dtype=np.float32))
    assert np.allclose(plan.vectors(np.eye(2, dtype=np.float32)), expected)


def test_the_policy_is_part_of_the_id_a_collection_records() -> None:
    default = EmbedTextPolicy.from_config(MemoryConfig())
    assert (default.method, default.chars, default.weight) == ("pair", 0, 1.0)
    assert default.space_id("m") == "m#pair:c0:w1:u0.5"
    assert EmbedTextPolicy(method="pair", chars=200, weight=0.5).space_id("m") == "m#pair:c200:w0.5:u0.5"
    assert EmbedTextPolicy(weight=0.5, lone_weight=0, own_weight=0.5).space_id("m") == "m#pair:c0:w0.5:o0.5"
    assert EmbedTextPolicy(method="vector", weight=0.7).space_id("m") == "m#vector:w0.7"
    assert EmbedTextPolicy(method="text", chars=200).space_id("m") == "m#text:c200"
    # The policies stores held before the tag existed keep the bare model id.
    legacy = EmbedTextPolicy.from_config(MemoryConfig(contextual_method="text"))
    assert legacy.chars == 500 and legacy.space_id("m") == "m"
    assert EmbedTextPolicy(contextual=False, method="pair").space_id("m") == "m"


def test_records_follow_the_rule_whatever_their_order() -> None:
    records = [
        MemoryRecord(id=f"m{i}", text=text, role=role, user_id="u", session_id="s", timestamp=float(i), seq=i + 1)
        for i, (role, text) in enumerate(CHAT)
    ]
    fact = MemoryRecord(
        id="f", text="made a bowl", role="user", user_id="u", session_id="s", timestamp=1.0, kind="fact", seq=2
    )
    policy = EmbedTextPolicy(method="pair", chars=500, weight=0.5)
    plan = policy.plan_records([records[3], fact, records[1]], known=records)
    window = policy.plan_window(CHAT, [3, 1])
    assert [plan.texts[i] for i in plan.own] == [
        window.texts[window.own[0]],
        "made a bowl",
        window.texts[window.own[1]],
    ]
    assert plan.texts[plan.context[0] or 0] == window.texts[window.context[0] or 0]
    assert plan.context[1] is None


# --- through the core -------------------------------------------------------------------
@pytest.mark.parametrize("split", [False, True])
def test_a_user_message_and_its_reply_store_the_pair_vector(make_core, split: bool) -> None:  # type: ignore[no-untyped-def]
    core = make_core(hybrid=False)
    if split:  # the reply in a later call: the user message is stored as a unit of its own, then with the pair
        core.add_messages(CHAT[:2])
        alone = normalize_rows(_embed(core, CHAT[1][1]) + 0.5 * _embed(core, CHAT[0][1]))[0]  # lone weight 0.5
        assert _similarity(core, CHAT[1][1], alone) == pytest.approx(1.0, abs=1e-5)
        core.add_messages(CHAT[2:3])
    else:
        core.add_messages(CHAT[:1])
        core.add_messages(CHAT[1:3])
    core.add_message("user", "Other session", session_id="s2")
    # The pair's vector plus (weight 1) the vector of the unit before it, the opening question.
    pair = normalize_rows(_embed(core, f"{CHAT[1][1]}\n{CHAT[2][1]}") + _embed(core, CHAT[0][1]))[0]
    assert _similarity(core, CHAT[1][1], pair) == pytest.approx(1.0, abs=1e-5)
    assert _similarity(core, CHAT[2][1], pair) == pytest.approx(1.0, abs=1e-5)
    assert _similarity(core, CHAT[0][1], _embed(core, CHAT[0][1])) == pytest.approx(1.0, abs=1e-5)
    assert _similarity(core, "Other session", _embed(core, "Other session")) == pytest.approx(1.0, abs=1e-5)
    assert len(parts(core).backend.scan(RecordFilter(user_id="u1", kinds=("message",)))) == 4


def test_vector_method_mixes_plain_vectors(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(contextual_method="vector", contextual_weight=0.5, hybrid=False)
    core.add_message(*CHAT[0])
    core.add_messages(CHAT[1:3])
    plain = parts(core).embedder.embed_documents([text for _, text in CHAT[:3]])
    for i in (1, 2):
        mixed = normalize_rows(0.5 * plain[i - 1] + plain[i])[0]
        assert _similarity(core, CHAT[i][1], mixed) == pytest.approx(1.0, abs=1e-5)


def test_a_turn_embeds_the_pair_and_the_next_query_once(make_core) -> None:  # type: ignore[no-untyped-def]
    emb = CountingEmbedder()
    core = make_core(embedder=emb, hybrid=False)
    core.add_messages([("user", "Hi there."), ("assistant", "Hello! How are you?")])
    core.build_context("I moved to Lisbon.")  # the next user message, embedded as the recall query
    emb.calls.clear()
    core.add_messages([("user", "I moved to Lisbon."), ("assistant", "Lisbon is lovely.")])
    # One call, one text: the pair. The unit before it was embedded last turn, and the user
    # message's fact (the same sentence) is the cached query vector.
    assert emb.calls == [["I moved to Lisbon.\nLisbon is lovely."]]
    assert [r.text for r in parts(core).backend.scan(RecordFilter(user_id="u1", kinds=("fact",)))] == [
        "I moved to Lisbon."
    ]
    emb.calls.clear()
    core.build_context("What else?")
    assert emb.calls == [["What else?"]]


def test_healing_and_import_store_the_vector_a_normal_write_stores(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = InMemoryBackend(), InMemoryStateStore()
    core = make_core(backend=backend, state=state)
    core.add_message("user", "my cat is called Miso")  # stored plain: no reply yet
    state.append("u1", "s1", [NewMessage("orphan", "assistant", "what a lovely name", 2.0, 5)])  # then a crash
    other = make_core(backend=backend, state=state)  # a new process, say
    other.build_context("anything")
    pair = _embed(other, "my cat is called Miso\nwhat a lovely name")
    for text in ("my cat is called Miso", "what a lovely name"):  # the reply and the user message it answers
        assert _similarity(other, text, pair) == pytest.approx(1.0, abs=1e-5)

    exported = other.export_memories()
    target = make_core()
    assert target.import_memories(exported) == len(exported["records"])
    for text in ("my cat is called Miso", "what a lovely name"):
        assert _similarity(target, text, pair) == pytest.approx(1.0, abs=1e-5)


def test_reembed_migrates_a_store_made_by_the_text_method(tmp_path: Path) -> None:
    emb = DeterministicHashEmbedder(64)
    old = MemoryConfig(
        backend="sqlite",
        persist_dir=str(tmp_path),
        user_id="u1",
        session_id="s1",
        contextual_method="text",
        score_threshold=0.0,
    )
    chat = [("user", "Where do you live?"), ("assistant", "In Lisbon, near the river.")]
    with MemoryCore(old, embedder=emb) as core:
        core.add_messages(chat)
        assert parts(core).backend.model_id == "hash-64"  # the earlier default records the bare model id
    release_stores()
    new = old.with_overrides(contextual_method="pair")
    with pytest.raises(EmbeddingModelMismatchError, match=r"hash-64#pair:c0:w1:u0.5.*memory-vec reembed"):
        MemoryCore(new, embedder=emb)  # asked for the pair policy explicitly: refused, not mixed
    release_stores()
    result = reembed(new, emb, progress=False)
    assert (result.records, result.model_id, result.policy) == (2, "hash-64", "pair:c0:w1:u0.5")
    release_stores()
    with MemoryCore(new, embedder=emb) as core:
        assert parts(core).backend.model_id == "hash-64#pair:c0:w1:u0.5"
        pair = emb.embed_documents(["Where do you live?\nIn Lisbon, near the river."])[0]
        for _, text in chat:
            assert _similarity(core, text, pair) == pytest.approx(1.0, abs=1e-5)
        core.add_message("user", "And your work?")  # the migrated store takes new writes
    release_stores()
    with pytest.raises(EmbeddingModelMismatchError):  # and refuses the old policy from now on
        MemoryCore(old, embedder=emb)
    release_stores()


def test_an_upgrade_keeps_using_a_store_made_by_the_earlier_default(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store of the earlier default ("text", the bare model id) opened with
    the policy left at its defaults is used as it was made, with a warning
    naming the migration; nothing is refused and no vectors of two policies
    end up in one collection."""
    emb = DeterministicHashEmbedder(64)
    base = {
        "backend": "sqlite",
        "persist_dir": str(tmp_path),
        "user_id": "u1",
        "session_id": "s1",
        "score_threshold": 0.0,
    }
    with MemoryCore(MemoryConfig(**base, contextual_method="text"), embedder=emb) as core:
        core.add_messages([("user", "My budget is 5000."), ("assistant", "Noted.")])
    release_stores()
    default = MemoryConfig(**base)
    assert not default.chose_vector_policy and default.with_overrides(max_token_limit=3000).chose_vector_policy is False
    with caplog.at_level("WARNING", logger="memory_vec"), MemoryCore(default, embedder=emb) as core:
        assert parts(core).backend.model_id == "hash-64"
        core.add_messages([("user", "I live in Lisbon."), ("assistant", "Lovely city.")])
        text_vector = emb.embed_documents(["Noted.\nI live in Lisbon."])[0]  # the text method's rule
        assert _similarity(core, "I live in Lisbon.", text_vector) == pytest.approx(1.0, abs=1e-5)
        assert "My budget is 5000." in [h.text for h in core.recall("my budget", k=5)]  # old rows still recalled
    assert "memory-vec reembed --model multilingual-e5-small" in caplog.text
    release_stores()
    result = reembed(default, emb, progress=False)  # the migration the warning names
    assert result.policy == "pair:c0:w1:u0.5"
    release_stores()
    with MemoryCore(default, embedder=emb) as core:
        assert parts(core).backend.model_id == "hash-64#pair:c0:w1:u0.5"
    release_stores()


def test_per_request_cores_of_one_store_share_the_vector_cache(tmp_path: Path) -> None:
    """A server building a core per request still reuses the previous
    exchange's vector (same store, same process), and a cached vector is
    never served for another model."""
    emb = CountingEmbedder(64)
    config = MemoryConfig(
        backend="sqlite",
        persist_dir=str(tmp_path),
        user_id="u1",
        session_id="s1",
        fact_extractor="none",
        score_threshold=0.0,
    )
    first = MemoryCore(config, embedder=emb)
    first.build_context("Where do you live?")
    first.add_messages([("user", "Where do you live?"), ("assistant", "In Lisbon, near the river.")])
    second = MemoryCore(config, embedder=emb)  # the next request's core
    emb.calls.clear()
    second.build_context("And your work?")
    second.add_messages([("user", "And your work?"), ("assistant", "I teach maths.")])
    embedded = [text for call in emb.calls for text in call]
    assert "Where do you live?\nIn Lisbon, near the river." not in embedded  # from the shared cache
    assert embedded.count("And your work?\nI teach maths.") == 1
    cache = second._engine.doc_cache
    assert cache is first._engine.doc_cache
    assert cache.get("And your work?\nI teach maths.", "hash-64") is not None
    assert cache.get("And your work?\nI teach maths.", "other-model") is None
    release_stores()


class DictTier:
    """A shared vector tier in a dict (what Redis is to many worker processes)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.reads = 0

    def cached_vectors(self, keys: Any) -> list[bytes | None]:
        self.reads += 1
        return [self.data.get(k) for k in keys]

    def cache_vectors(self, items: Any, owner: str | None = None) -> None:
        self.data.update(items)

    def forget_vectors(self, owner: str) -> int:
        return 0


class BlockingTier(DictTier):
    """A tier whose puts wait for ``release`` (Redis slow or down): those of
    ``blocked`` owners, or all; it logs its puts and forgets in ``calls``."""

    def __init__(self, blocked: set[str | None] | None = None) -> None:
        super().__init__()
        self.release = threading.Event()
        self.blocked = blocked
        self.calls: list[str] = []

    def cache_vectors(self, items: Any, owner: str | None = None) -> None:
        if self.blocked is None or owner in self.blocked:
            assert self.release.wait(10)
        self.calls.append(f"put {owner}")
        super().cache_vectors(items, owner)

    def forget_vectors(self, owner: str) -> int:
        self.calls.append(f"forget {owner}")
        self.data.clear()
        return 1


def test_the_shared_tier_is_written_off_the_turn_and_forget_comes_after_the_puts() -> None:
    """A put does not wait for the shared tier (a Redis round trip), and a
    forget is run after the puts queued before it: no vector of the forgotten
    user's text lands after the forget."""
    from memory_vec._storage.vector_cache import VectorCache

    tier = BlockingTier()
    calls = tier.calls
    cache = VectorCache(8, shared=tier)
    cache.put_many({"my passport is X1": np.ones(4, dtype=np.float32)}, "m", owner="alice")
    assert calls == [] and cache.get("my passport is X1", "m") is not None  # returned; this process has it
    forgot = threading.Thread(target=lambda: calls.append(f"forgot {cache.forget_owner('alice')}"))
    forgot.start()
    tier.release.set()
    forgot.join(10)
    assert calls == ["put alice", "forget alice", "forgot 1"] and tier.data == {}


def test_a_shared_tier_serves_what_this_process_never_embedded() -> None:
    from memory_vec._storage.vector_cache import VectorCache

    tier = DictTier()
    worker_a, worker_b = VectorCache(8, shared=tier), VectorCache(8, shared=tier)
    vec = np.arange(4, dtype=np.float32)
    worker_a.put_many({"hello": vec}, "m")
    worker_a.flush()  # the shared tier is written off the turn
    got = worker_b.get_many(["hello", "absent"], "m")
    assert set(got) == {"hello"} and np.array_equal(got["hello"], vec)
    assert worker_b.get("hello", "other-model") is None  # keyed by model too
    assert VectorCache(8, shared=tier, kind="q").get("hello", "m") is None  # queries apart from documents
    reads = tier.reads
    worker_b.get("hello", "m")
    assert tier.reads == reads  # now in worker b's own cache: no round trip
    tier.data = dict.fromkeys(tier.data, b"\x01\x02\x03")  # a corrupt entry reads as a miss
    assert VectorCache(8, shared=tier).get("hello", "m") is None


def test_a_read_racing_a_forget_does_not_bring_the_forgotten_vectors_back() -> None:
    """The forget waits behind queued puts; a read in that window finds the
    user's vector in the shared tier and keeps it here: the forget clears
    this process's copy again once the tier has let go."""
    from memory_vec._storage.vector_cache import VectorCache

    tier = BlockingTier(blocked={"later"})
    cache = VectorCache(8, shared=tier)
    cache.put_many({"my passport is X1": np.ones(4, dtype=np.float32)}, "m", owner="alice")
    cache.flush()
    cache.put_many({"another text": np.ones(4, dtype=np.float32)}, "m", owner="later")  # blocks the sender
    forgot = threading.Thread(target=cache.forget_owner, args=("alice",))
    forgot.start()
    deadline = time.monotonic() + 10
    while cache._data and time.monotonic() < deadline:  # the forget's first clear
        time.sleep(0.01)
    assert cache.get("my passport is X1", "m") is not None  # read back from the tier meanwhile
    tier.release.set()
    forgot.join(10)
    assert cache.get("my passport is X1", "m") is None


def test_close_sends_the_queued_puts_and_ends_the_sender_thread() -> None:
    from memory_vec._storage.vector_cache import VectorCache

    def senders() -> int:
        return sum(t.name == "memvec-vector-cache" for t in threading.enumerate())

    before = senders()
    tier = DictTier()
    cache = VectorCache(8, shared=tier)
    cache.put_many({"hello": np.ones(4, dtype=np.float32)}, "m")
    assert senders() == before + 1
    cache.close()
    assert len(tier.data) == 1  # sent before the thread ended
    deadline = time.monotonic() + 5
    while senders() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert senders() == before
    cache.put_many({"after close": np.ones(4, dtype=np.float32)}, "m")  # this process only: no new thread
    assert senders() == before and len(tier.data) == 1 and cache.get("after close", "m") is not None


def test_close_does_not_hang_on_a_shared_tier_that_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis down at close: close waits a bounded time, drops the puts still
    queued, and the thread ends once the call in progress returns."""
    from memory_vec._storage import vector_cache
    from memory_vec._storage.vector_cache import VectorCache

    tier = BlockingTier()
    cache = VectorCache(8, shared=tier)
    cache.put_many({"first": np.ones(4, dtype=np.float32)}, "m")
    cache.put_many({"second": np.ones(4, dtype=np.float32)}, "m")
    monkeypatch.setattr(vector_cache, "_CLOSE_WAIT_S", 0.2)
    started = time.monotonic()
    cache.close()
    assert time.monotonic() - started < 5
    tier.release.set()
    deadline = time.monotonic() + 5
    while not tier.data and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # time enough for the dropped put to land, were it not dropped
    assert len(tier.data) == 1  # the put in progress finished; the queued one was dropped
