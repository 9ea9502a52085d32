"""Questions about the order of two events (``memory_vec._rules.event_order``), and
what the read path does with them (``split_order_questions``)."""

from __future__ import annotations

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.records import MemoryRecord, RecalledMemory
from memory_vec._pipelines.read import interleave
from memory_vec._rules.event_order import event_order_parts
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import parts


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "Did Priya join the chess club before or after she baked the lemon tart?",
            ("Priya join the chess club", "she baked the lemon tart"),
        ),
        ("Which came first, Marek's move to Lisbon or his new job?", ("Marek's move to Lisbon", "his new job")),
        (
            "Which happened first: the woodworking class or the camping trip?",
            ("the woodworking class", "the camping trip"),
        ),
        ("Which one came earlier, the concert or the exam?", ("the concert", "the exam")),
        ("What did Marek do first, sell his car or buy the bike?", ("Marek sell his car", "Marek buy the bike")),
        ("which did Priya try first, the tart or the pie?", ("Priya the tart", "Priya the pie")),
        ("The lemon tart or the chess tournament — which came first?", ("The lemon tart", "the chess tournament")),
        ("Did Priya bake the tart before the chess tournament?", ("Priya bake the tart", "the chess tournament")),
        ("Was the trip to Lisbon after the wedding?", ("the trip to Lisbon", "the wedding")),
        ("Did the concert happen before the exam?", ("the concert", "the exam")),
        ("搬家和换工作哪个先?", ("搬家", "换工作")),
        ("去北京和买车，哪件事先发生？", ("去北京", "买车")),
        ("小红去北京是在买车之前还是之后？", ("小红去北京", "买车")),
        ("她先去了北京还是先买了车?", ("她先去了北京", "买了车")),
        ("搬家比换工作早吗？", ("搬家", "换工作")),
        ("小红去北京早于买车吗", ("小红去北京", "买车")),
        ("她去北京是在买车之前吗？", ("她去北京", "买车")),
        ("是先搬家后换工作吗？", ("搬家", "换工作")),
        ("Did the move happen first, or the new job?", ("the move", "the new job")),
    ],
)
def test_an_order_question_splits_into_its_two_events(question: str, parts: tuple[str, str]) -> None:
    assert event_order_parts(question) == parts


@pytest.mark.integration
def test_an_order_question_never_serves_a_fact_next_to_its_message() -> None:
    memory = core(ranking={"split_order_questions": True})
    memory.add_messages(
        [
            {"role": "user", "content": text}
            for text in (
                "I moved to Berlin in 2019 and I love it there.",
                "I started my new job at the bakery last spring.",
                "My sister visited me in Berlin last week.",
                "The bakery job is hard but fun.",
            )
        ]
    )
    assert parts(memory).backend.count(RecordFilter(kinds=("fact",))) >= 1
    # Before the fix, one event's list held a fact and the other its message: both were served.
    hits = memory.recall("Which came first, my move to Berlin or my job at the bakery?", k=10)
    served = {h.id for h in hits}
    sources = {r.id: set(r.source_ids) for r in parts(memory).backend.scan(RecordFilter(kinds=("fact",)))}
    assert hits and not any(sources.get(h.id, set()) & served for h in hits)
    assert all(h.source_ids == sorted(sources.get(h.id, ())) for h in hits)
    assert any("Berlin" in h.text for h in hits) and any("bakery" in h.text for h in hits)


@pytest.mark.parametrize(
    "question",
    [
        "What did Priya do the day after her interview?",  # a relative date, not an order
        "Did Priya go hiking two weeks after the wedding?",
        "Did you go to the store?",
        "What is my budget?",
        "Which came first?",  # no events named
        "Was it before or after?",
        "你喜欢咖啡还是茶？",  # a choice, not an order
        "我的预算是多少？",
        "搬家之后的那个周末做了什么?",
        "他比我高吗？",  # a comparison, not of events in time
        "你是先吃饭吗？",
        "我今天先去上班再说",  # a statement
        "在这之前你做什么？",
        "",
        "   ",
    ],
)
def test_other_questions_stay_whole(question: str) -> None:
    assert event_order_parts(question) == ()


def hit(id_: str) -> RecalledMemory:
    record = MemoryRecord(id=id_, text=id_, role="user", user_id="u", session_id="s", timestamp=1.0)
    return RecalledMemory.from_record(record, score=0.5)


def test_interleave_takes_turns_skips_repeats_and_stops_at_k() -> None:
    a, b, c = [hit("a1"), hit("x"), hit("a2")], [hit("x"), hit("b1")], [hit("c1")]
    assert [h.id for h in interleave([a, b, c], 10)] == ["a1", "x", "c1", "b1", "a2"]
    assert [h.id for h in interleave([a, b, c], 2)] == ["a1", "x"]
    assert interleave([], 3) == []


def test_interleave_gives_a_fact_and_its_message_one_slot() -> None:
    message = MemoryRecord(
        id="m1",
        text="Priya: I joined the chess club in March, it is great",
        role="user",
        user_id="u",
        session_id="s",
        timestamp=1.0,
    )
    fact = MemoryRecord(
        id="f1",
        text="Priya joined the chess club in March",
        role="user",
        user_id="u",
        session_id="s",
        timestamp=1.0,
        kind="fact",
        source_ids=["m1"],
    )
    as_fact, as_message = RecalledMemory.from_record(fact, score=0.9), RecalledMemory.from_record(message, score=0.8)
    # Each event's list holds one of the two: one ranking would have collapsed them.
    both = [[as_fact, hit("a")], [as_message, hit("b")]]
    assert [h.id for h in interleave(both, 10, collapse=True)] == ["f1", "a", "b"]
    assert [h.id for h in interleave(list(reversed(both)), 10, collapse=True)] == ["m1", "b", "a"]
    assert [h.id for h in interleave(both, 10)] == ["f1", "m1", "a", "b"]
    echo = RecalledMemory.from_record(
        MemoryRecord(
            id="m2",
            text="priya joined the Chess Club in March!",
            role="user",
            user_id="u",
            session_id="s",
            timestamp=2.0,
        ),
        score=0.5,
    )
    assert [h.id for h in interleave([[as_fact], [echo]], 10, collapse=True)] == ["f1"]
    # Two facts of one message are two memories (an order question's two events, said at once).
    married = RecalledMemory.from_record(
        MemoryRecord(
            id="f2",
            text="Priya got married in 2021",
            role="user",
            user_id="u",
            session_id="s",
            timestamp=1.0,
            kind="fact",
            source_ids=["m1"],
        ),
        score=0.7,
    )
    assert [h.id for h in interleave([[as_fact], [married]], 10, collapse=True)] == ["f1", "f2"]
    assert [h.id for h in interleave([[as_fact], [married], [as_message]], 10, collapse=True)] == ["f1", "f2"]


def core(**settings: object) -> MemoryCore:
    return MemoryCore(
        MemoryConfig(user_id="order", session_id="s", **settings),  # type: ignore[arg-type]
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
    )


@pytest.mark.integration
def test_an_order_question_recalls_both_events_with_the_real_embedder() -> None:
    memory = core(ranking={"split_order_questions": True})
    chess = [f"Priya: the chess club met again, game {i}, I played the Sicilian defence" for i in range(8)]
    memory.add_messages([{"role": "user", "content": text} for text in chess])
    memory.add_messages([{"role": "user", "content": "Priya: I baked a lemon tart for my neighbours today"}])
    hits = memory.recall("Did Priya join the chess club before or after she baked the lemon tart?", k=3)
    assert any("lemon tart" in h.text for h in hits)
    assert any("chess club" in h.text for h in hits)
    trace = memory.last_trace
    assert trace is not None and any("order question" in event for event in trace.events)
    memory.config.ranking = memory.config.ranking.with_overrides(split_order_questions=False)
    memory.recall("Did Priya join the chess club before or after she baked the lemon tart?", k=3)
    assert memory.last_trace is not None and not any("order question" in e for e in memory.last_trace.events)


@pytest.mark.parametrize(
    "question",
    [
        "比" * 10_000 + "吗",
        "Did " + "the day after " * 2_000 + "x?",
        "Which came first, " + "a or " * 6_000 + "b?",
        "在北京之前" * 2_000 + "吗",
    ],
)
def test_a_long_hostile_question_is_not_parsed(question: str) -> None:
    assert event_order_parts(question) == ()  # was seconds of backtracking before the length cap
