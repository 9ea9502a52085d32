"""Behaviour of each recall technique: BM25 hybrid, neighbours, speaker boost,
decay, importance, dedupe, thresholds. Hash embedder and in-process stores."""

from __future__ import annotations

import math
import time

import pytest

from memory_vec._model.records import MemoryRecord
from memory_vec._rules.bm25 import BM25Index, IndexedDoc, mentioned_speakers, tokenize
from memory_vec._rules.ranking import Candidate, ScorePolicy, decay, rank
from memory_vec.backends import RecordFilter
from memory_vec.testing import parts

DAY = 86400.0


def _record(
    rid: str,
    text: str,
    *,
    ts: float = 1_700_000_000.0,
    importance: float = 0.5,
    speaker: str | None = None,
    seq: int = 0,
) -> MemoryRecord:
    meta = {"speaker": speaker} if speaker else {}
    return MemoryRecord(
        id=rid,
        text=text,
        role="user",
        user_id="u1",
        session_id="s1",
        timestamp=ts,
        importance=importance,
        metadata=meta,
        seq=seq,
    )


FILLER = [
    "what is the code for the front door of the office",
    "the code review for the office door sensor is what we discussed",
    "what door code do we use at the office, is it the same as before",
    "the office front door is red and the code of conduct hangs there",
    "what about the door code at the office front",
]


# --------------------------------------------------------------------------- BM25 index
def test_bm25_finds_rare_token_that_vector_ranking_misses(make_core) -> None:  # type: ignore[no-untyped-def]
    # Plain stored vectors: with contextual_embedding the reply would read the door-code filler before it.
    core = make_core(hybrid=False, neighbor_window=0, contextual_embedding=False, ranking={"speaker_boost": 0.0})
    for text in FILLER:
        core.add_message("user", text)
    core.add_message("user", "ZQ7781 it is")
    query = "door code ZQ7781"
    dense = core.recall(query, k=1)
    assert dense[0].text != "ZQ7781 it is"  # the vector ranking prefers the many shared words
    core.config.hybrid = True
    core.config.ranking = core.config.ranking.with_overrides(bm25_weight=0.6)
    hybrid = core.recall(query, k=1)
    assert hybrid[0].text == "ZQ7781 it is"
    assert hybrid[0].components["bm25"] > dense[0].components.get("bm25", 0.0)


def test_bm25_scores_are_normalized_and_rank_rarer_terms_higher() -> None:
    index = BM25Index()
    index.add([IndexedDoc(str(i), t, seq=i) for i, t in enumerate([*FILLER, "the ZQ7781 office"])])
    found = index.search("ZQ7781 office", k=10)
    assert found[0][0] == str(len(FILLER))
    assert all(0.0 <= s <= 1.0 for _, s in found)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert index.search("nothing matches here", k=5) == []


def test_bm25_index_add_and_remove_keep_statistics_consistent() -> None:
    index = BM25Index()
    index.add([IndexedDoc("a", "alpha beta"), IndexedDoc("b", "beta gamma", seq=1)])
    before = index.search("beta gamma", k=5)
    index.add([IndexedDoc("c", "delta epsilon", seq=2)])
    index.remove(["c"])
    assert index.search("beta gamma", k=5) == before
    index.add([IndexedDoc("a", "zeta only")])  # same id replaces
    assert [d for d, _ in index.search("alpha", k=5)] == []
    assert [d for d, _ in index.search("zeta", k=5)] == ["a"]
    assert len(index) == 2


def test_index_follows_new_messages_and_forgets_cleared_ones(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(hybrid=True, ranking={"bm25_weight": 0.7})
    core.add_message("user", "we talked about the weather")
    core.recall("weather", k=3)
    index = parts(core).store.keywords.for_user("u1")
    core.add_message("user", "the locker number is QX55")
    assert parts(core).store.keywords.for_user("u1") is index  # fed, not rebuilt
    assert any(d == core.recall("QX55", k=1)[0].id for d, _ in index.search("QX55", k=3))
    assert "QX55" in core.recall("QX55", k=1)[0].text
    core.clear()
    assert core.recall("QX55", k=3) == []
    core.add_message("user", "back again", session_id="s2")
    assert [h.text for h in core.recall("QX55 back again", k=3)] == ["back again"]


def test_index_builds_lazily_from_the_store(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(hybrid=True, ranking={"bm25_weight": 0.7})
    core.add_message("user", "the wifi password is hunter2zz")
    parts(core).store.keywords.drop()  # as in a new process over the same store
    hits = core.recall("hunter2zz", k=1)
    assert hits and hits[0].components["bm25"] > 0


def test_bm25_context_weight_lifts_the_reply_to_a_matching_question() -> None:
    index = BM25Index()
    index.add(
        [
            IndexedDoc("q", "how was the pottery workshop", "s1", 1),
            IndexedDoc("a", "it was great, I made a bowl", "s1", 2),
            IndexedDoc("other", "a new session starts here", "s2", 2),
            IndexedDoc("fact", "the pottery workshop was fun", "s1", 1, positional=False),
        ]
    )
    assert [d for d, _ in index.search("pottery workshop", k=10)] == ["q", "fact"]  # off: words only
    found = dict(index.search("pottery workshop", k=10, context_weight=0.5))
    assert set(found) == {"q", "fact", "a"}  # the reply, not the fact's or another session's neighbour
    assert found["a"] == pytest.approx(0.5 * found["q"])
    assert all(0.0 <= s <= 1.0 for s in found.values())


def test_recall_finds_a_reply_by_the_words_of_its_question(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(hybrid=True, neighbor_window=0, ranking={"bm25_weight": 0.5, "bm25_context_weight": 0.0})
    for text in FILLER:
        core.add_message("user", text)
    core.add_message("assistant", "Did you finish the ZQ7781 migration?")
    core.add_message("user", "Yes, it went live on Friday.")
    question, reply = "Did you finish the ZQ7781 migration?", "Yes, it went live on Friday."
    off = {h.text: h.components.get("bm25", 0.0) for h in core.recall("ZQ7781 migration", k=10)}
    assert off.get(reply, 0.0) == 0.0
    core.config.ranking = core.config.ranking.with_overrides(bm25_context_weight=0.75)
    on = {h.text: h.components["bm25"] for h in core.recall("ZQ7781 migration", k=10)}
    assert 0.0 < on[reply] < on[question]


def test_chinese_is_tokenized_with_jieba() -> None:
    tokens = tokenize("我最喜欢吃北京烤鸭")
    assert "烤鸭" in tokens and "北京" in tokens
    assert "的" not in tokenize("我的烤鸭")
    index = BM25Index()
    index.add(
        [
            IndexedDoc("a", "我最喜欢吃北京烤鸭"),
            IndexedDoc("b", "今天的天气很好", seq=1),
            IndexedDoc("c", "鸭子在湖里游泳", seq=2),
        ]
    )
    assert index.search("烤鸭好吃吗", k=3)[0][0] == "a"


def test_english_tokens_drop_function_words() -> None:
    assert tokenize("What did Priya do at the chess group?") == ["priya", "chess", "group"]


# --------------------------------------------------------------------------- ranking
def test_fusion_weight_moves_the_order() -> None:
    a = Candidate(_record("a", "semantic match"), similarity=0.9, bm25=0.0)
    b = Candidate(_record("b", "keyword match"), similarity=0.5, bm25=1.0)
    vector_only = rank([a, b], policy=ScorePolicy(bm25_weight=0.0), now=1.8e9, k=2)
    keyword_heavy = rank([a, b], policy=ScorePolicy(bm25_weight=0.6), now=1.8e9, k=2)
    assert [h.id for h in vector_only] == ["a", "b"]
    assert [h.id for h in keyword_heavy] == ["b", "a"]
    assert keyword_heavy[0].components["bm25"] == 1.0
    assert math.isclose(keyword_heavy[0].components["relevance"], 0.4 * 0.5 + 0.6 * 1.0)


def test_newer_wins_when_similarity_ties_and_important_keeps_a_floor() -> None:
    now = 1_800_000_000.0
    old = Candidate(_record("old", "same text one", ts=now - 100 * DAY), similarity=0.8)
    new = Candidate(_record("new", "same text two", ts=now - 1 * DAY), similarity=0.8)
    policy = ScorePolicy(half_life_days=30.0, recency_weight=0.5)
    assert [h.id for h in rank([old, new], policy=policy, now=now, k=2)] == ["new", "old"]
    assert decay(1000 * DAY, half_life_days=30.0, importance=0.9) == pytest.approx(0.9)
    assert decay(1000 * DAY, half_life_days=30.0, importance=0.5) < 0.01
    important = Candidate(_record("imp", "old but vital", ts=now - 1000 * DAY, importance=0.9), similarity=0.8)
    trivial = Candidate(_record("triv", "old and trivial", ts=now - 1000 * DAY, importance=0.5), similarity=0.8)
    ranked = rank([trivial, important], policy=policy, now=now, k=2)
    assert ranked[0].id == "imp" and ranked[0].components["decay"] >= 0.9


def test_decay_off_means_no_time_effect() -> None:
    now = 1_800_000_000.0
    old = Candidate(_record("old", "x one", ts=now - 900 * DAY), similarity=0.81)
    new = Candidate(_record("new", "x two", ts=now), similarity=0.80)
    policy = ScorePolicy(half_life_days=None, recency_weight=0.5)
    assert rank([old, new], policy=policy, now=now, k=1)[0].id == "old"


def test_near_identical_texts_collapse() -> None:
    cands = [
        Candidate(_record("1", "Yes, five years ago!"), 0.9),
        Candidate(_record("2", "yes five years ago"), 0.89),
        Candidate(_record("3", "No, last year."), 0.5),
    ]
    assert [h.id for h in rank(cands, policy=ScorePolicy(), now=1.8e9, k=3)] == ["1", "3"]


def test_scores_in_unit_range_and_threshold_applies_to_final_score() -> None:
    cands = [
        Candidate(_record(str(i), f"text {i}", importance=0.0), similarity=s, bm25=b, boost=0.3)
        for i, (s, b) in enumerate([(1.5, 1.0), (-0.4, 0.0), (0.7, 0.2), (float("nan"), 0.5)])
    ]
    hits = rank(cands, policy=ScorePolicy(bm25_weight=0.3), now=1.8e9, k=10)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    # similarity 0.7 passes a 0.6 threshold, but importance weighting lowers the final score below it
    lone = [Candidate(_record("x", "only one", importance=0.0), similarity=0.7)]
    assert rank(lone, policy=ScorePolicy(threshold=0.6), now=1.8e9, k=1)
    assert rank(lone, policy=ScorePolicy(threshold=0.6, importance_weight=0.5), now=1.8e9, k=1) == []


def test_default_threshold_scales_with_the_vector_share(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(score_threshold=None, hybrid=True, ranking={"bm25_weight": 0.25})
    assert core.threshold == pytest.approx(parts(core).embedder.default_threshold * 0.75)
    core.config.hybrid = False
    assert core.threshold == pytest.approx(parts(core).embedder.default_threshold)
    core.config.score_threshold = 0.4
    assert core.threshold == 0.4


# --------------------------------------------------------------------------- neighbours, speakers
def test_neighbours_are_attached_but_not_counted_as_hits(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(neighbor_window=1)
    core.add_messages(
        [
            ("user", "Have you been surfing for long?"),
            ("assistant", "Yes, five years ago!"),
            ("user", "Cool, where do you go?"),
        ]
    )
    core.add_message("user", "something unrelated", session_id="s2")
    hits = core.recall("five years ago", k=1)
    assert len(hits) == 1 and hits[0].text == "Yes, five years ago!"
    assert [n.text for n in hits[0].neighbors] == ["Have you been surfing for long?", "Cool, where do you go?"]
    core.config.neighbor_window = 0
    assert core.recall("five years ago", k=1)[0].neighbors == []


def test_neighbours_stay_inside_the_session(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(neighbor_window=2)
    core.add_message("user", "first session closing line", session_id="a")
    core.add_message("user", "opening line about kayaks", session_id="b")
    hit = core.recall("kayaks", k=1)[0]
    assert hit.neighbors == []


def test_speaker_boost_when_the_query_names_a_person(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(hybrid=False, ranking={"speaker_boost": 0.0})
    core.add_message("user", "I baked a lemon tart last week", metadata={"speaker": "Marek"}, timestamp=1e9)
    core.add_message("assistant", "I baked a lemon tart last week", metadata={"speaker": "Priya"}, timestamp=2e9)
    core.config.score_threshold = 0.0
    # identical texts collapse, so use different sessions' wording instead
    core.add_message(
        "assistant", "I baked a lemon tart last week too", metadata={"speaker": "Priya"}, timestamp=2e9 + 1
    )
    q = "When did Marek bake a lemon tart?"
    assert core.recall(q, k=1)[0].metadata["speaker"] == "Priya"
    core.config.ranking = core.config.ranking.with_overrides(speaker_boost=0.2)
    top = core.recall(q, k=1)[0]
    assert top.metadata["speaker"] == "Marek" and top.components["boost"] == 0.2


def test_mentioned_speakers_are_whole_words() -> None:
    known = {"al", "marek", "jean claude", "小明"}
    assert mentioned_speakers("Did Marek's dog also come?", known) == {"marek"}
    assert mentioned_speakers("what did Jean Claude say", known) == {"jean claude"}
    assert mentioned_speakers("小明昨天去哪了", known) == {"小明"}
    assert mentioned_speakers("nobody here", known) == set()


def test_recall_is_prefix_consistent(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(hybrid=True, ranking={"bm25_weight": 0.3, "speaker_boost": 0.05})
    core.add_messages([("user", f"note {i} about topic {i % 7} and item {i % 5}") for i in range(80)])
    for q in ("topic 3 item 2", "note 17", "item 4"):
        full = [h.id for h in core.recall(q, k=30)]
        for k in (1, 5, 10):
            assert [h.id for h in core.recall(q, k=k)] == full[:k]


def test_trace_shows_each_component(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(hybrid=True, ranking={"speaker_boost": 0.1})
    core.add_message("user", "Priya: I joined the choir", metadata={"speaker": "Priya"})
    core.recall("what did Priya join", k=1)
    entry = core.last_trace.recalled[0]
    for key in ("score", "similarity", "bm25", "boost", "decay", "factor"):
        assert key in entry
    assert "bm25" in core.last_trace.timings


def test_bm25_search_cost_at_ten_thousand_messages() -> None:
    index = BM25Index()
    t0 = time.perf_counter()
    index.add(
        IndexedDoc(str(i), f"message {i} about topic{i % 300} with word{i % 1000} and things", seq=i)
        for i in range(10_000)
    )
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(10):
        index.search("what about topic42 and word7", k=200)
    per_query = (time.perf_counter() - t0) / 10
    assert build < 5.0 and per_query < 0.05  # loose bounds; the benchmark reports the real figures


def test_contextual_embedding_stores_the_turn_with_its_predecessor(make_core, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The text method; the default vector method: tests/core/test_stored_vectors.py.
    core = make_core(contextual_embedding=True, contextual_method="text", hybrid=False)
    embedded: list[str] = []
    original = parts(core).embedder.embed_documents
    monkeypatch.setattr(
        parts(core).embedder, "embed_documents", lambda texts: (embedded.extend(texts), original(texts))[1]
    )
    core.add_message("assistant", "How was the pottery workshop?")
    core.add_messages([("user", "Great, I made a bowl."), ("assistant", "Nice!")])
    core.add_message("user", "Other session", session_id="s2")
    # First turn plain; then each turn with the one before it (across calls, not across sessions);
    # the user message is also embedded plain (the likely next query), the assistant message is not.
    assert "How was the pottery workshop?\nGreat, I made a bowl." in embedded
    assert "Great, I made a bowl.\nNice!" in embedded
    assert "Great, I made a bowl." in embedded and "Nice!" not in embedded
    assert not any(t.endswith("\nOther session") for t in embedded)
    stored = {r.text: r for r in parts(core).backend.scan(RecordFilter(user_id="u1", kinds=("message",)))}
    assert set(stored) == {"How was the pottery workshop?", "Great, I made a bowl.", "Nice!", "Other session"}
    # The reply is found by the question it answers; with the option off it is not lifted.
    lifted = core.recall("pottery workshop", k=2)
    assert "Great, I made a bowl." in [h.text for h in lifted]
    plain = make_core(contextual_embedding=False, hybrid=False)
    plain.add_message("assistant", "How was the pottery workshop?")
    plain.add_messages([("user", "Great, I made a bowl."), ("assistant", "Nice!")])
    top = {h.text: h.similarity for h in plain.recall("pottery workshop", k=3)}
    assert {h.text: h.similarity for h in lifted}["Great, I made a bowl."] > top.get("Great, I made a bowl.", 0.0)


# --------------------------------------------------------------------------- keyword feedback
def test_feedback_terms_are_words_the_top_hits_share_not_the_query() -> None:
    index = BM25Index()
    index.add(
        [
            IndexedDoc("a", "Marek signed up for a woodworking class downtown", "s1", 1),
            IndexedDoc("b", "the woodworking class made Marek calm, sawdust everywhere", "s2", 1),
            IndexedDoc("c", "Marek went camping with the kids", "s3", 1),
            IndexedDoc("d", "we talked about the weather", "s4", 1),
        ]
    )
    terms = index.feedback_terms(["a", "b", "c"], n=10, exclude="What does Marek do?")
    assert set(terms) == {"woodworking", "class"}  # shared by two hits; 'marek' is the query's
    assert max(terms.values()) == 1.0 and all(0.0 < w <= 1.0 for w in terms.values())
    assert set(index.feedback_terms(["a", "b", "c"], n=10, exclude="Marek", min_docs=1)) >= {"camping", "sawdust"}
    assert index.feedback_terms(["a"], n=10) == {}  # one hit alone cannot steer
    assert index.feedback_terms(["missing", "d"], n=10) == {}


def test_search_counts_extra_terms_at_their_weight() -> None:
    index = BM25Index()
    index.add([IndexedDoc("a", "pottery class on friday", "s1", 1), IndexedDoc("b", "clay and a kiln", "s2", 1)])
    assert [d for d, _ in index.search("pottery", k=5)] == ["a"]
    widened = dict(index.search("pottery", k=5, extra_terms={"kiln": 0.3}))
    assert set(widened) == {"a", "b"} and widened["b"] < widened["a"]
    assert all(0.0 <= s <= 1.0 for s in widened.values())
    assert index.search("", k=5, extra_terms={"kiln": 0.5})  # feedback words alone still search


def test_keyword_feedback_reaches_a_memory_without_the_question_words(make_core) -> None:  # type: ignore[no-untyped-def]
    def build(feedback: int):  # type: ignore[no-untyped-def]
        core = make_core(
            hybrid=True,
            neighbor_window=0,
            ranking={"bm25_weight": 0.6, "keyword_feedback": feedback, "keyword_feedback_weight": 0.5},
        )
        core.add_messages([("user", t) for t in FILLER])
        core.add_message("user", "My hobby: the glaze studio on Elm street", session_id="a")
        core.add_message("user", "My hobby is glaze painting at the studio", session_id="b")
        core.add_message("user", "Booked the glaze studio again for Sunday", session_id="c")
        return core

    query, booked = "what is my hobby", "Booked the glaze studio again for Sunday"
    off = [h.text for h in build(0).recall(query, k=10)]
    assert off.index(booked) > 2  # no word of the question: below the fillers' 'what' and 'is'
    core = build(3)
    on = [h.text for h in core.recall(query, k=10)]
    assert on.index(booked) == 2  # 'glaze' and 'studio', shared by the two hits above it
    assert on[:2] == off[:2]  # the hits that gave the words keep their places
    assert "feedback" in core.last_trace.timings
    assert any("keyword feedback" in e for e in core.last_trace.events)
    # prefix-consistent like any recall
    assert [h.text for h in core.recall(query, k=3)] == on[:3]
