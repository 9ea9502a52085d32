"""Hybrid recall with the real default embedder (multilingual-e5-small)."""

from __future__ import annotations

import pytest

from memory_vec import MemoryConfig, MemoryCore, RankingPolicy
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore

pytestmark = pytest.mark.integration


def test_default_recall_with_real_embedder_english_and_chinese() -> None:
    core = MemoryCore(MemoryConfig(user_id="recall-int"), backend=InMemoryBackend(), state_store=InMemoryStateStore())
    core.add_messages(
        [
            {"role": "user", "content": "Priya: I went to the chess club yesterday.", "metadata": {"speaker": "Priya"}},
            {
                "role": "assistant",
                "content": "Marek: Did you go to the chess club again?",
                "metadata": {"speaker": "Marek"},
            },
            {
                "role": "assistant",
                "content": "Marek: Yes, the booking code was KX-4471.",
                "metadata": {"speaker": "Marek"},
            },
            {"role": "user", "content": "我最喜欢吃北京烤鸭，每个月都去全聚德。"},
            {"role": "user", "content": "今天的天气不错，适合去公园散步。"},
        ]
    )
    hits = core.recall("What was the booking code KX-4471 for?", k=1)
    assert "KX-4471" in hits[0].text and hits[0].components["bm25"] > 0
    assert hits[0].neighbors  # the question it answers comes along as context
    # speaker_boost is off by default (LoCoMo adversarial questions), on here
    core.config.ranking = core.config.ranking.with_overrides(speaker_boost=0.1)
    hits = core.recall("When did Priya go to the chess club?", k=1)
    assert hits[0].metadata["speaker"] == "Priya"
    hits = core.recall("我喜欢吃什么？", k=1)
    assert "烤鸭" in hits[0].text
    assert all(0.0 <= h.score <= 1.0 for h in core.recall("support group", k=5))


def test_dates_with_real_embedder_on_embedded_chroma(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The date path end to end on a real store: event_date written and filtered on by
    Chroma, the period's memories fetched with a time filter, English and Chinese."""
    from datetime import datetime, timezone

    def at(day: int) -> float:
        return datetime(2023, 10, day, 12, tzinfo=timezone.utc).timestamp()

    config = MemoryConfig(
        backend="chroma",
        persist_dir=str(tmp_path),
        collection="dates",
        user_id="mel",
        neighbor_window=0,
        ranking={"date_window_boost": 0.0},
    )
    core = MemoryCore(config)
    bike = "The next morning I picked up a second-hand bike, it's blue"
    days = [
        (2, "s1", "I bought new hiking boots, what a good buy"),
        (9, "s2", "我昨天通过了驾照考试！"),
        (9, "s2", "I passed my driving test yesterday!"),
        (9, "s2", bike),
        (16, "s3", "I bought groceries and a new lamp, what did I buy that for"),
        (20, "s5", "I bought a new phone today, best thing I bought all year"),
        (23, "s4", "我买了一台新的咖啡机，每天早上都用"),
        (24, "s6", "上个月我买了很多东西"),
    ]
    for day, session, text in days:
        core.add_message("user", text, timestamp=at(day), session_id=session)
    core.flush()
    on_the_8th = core.recall("driving test", k=5, filters={"event_date": "2023-10-08"})
    assert {h.text for h in on_the_8th} == {"我昨天通过了驾照考试！", "I passed my driving test yesterday!"}

    def bike_rank(query: str) -> int:
        texts = [h.text for h in core.recall(query, k=8)]
        return texts.index(bike)

    questions = ["What did I buy the day after I passed my driving test?", "我通过驾照考试之后的那个周末买了什么？"]
    plain = [bike_rank(q) for q in questions]
    core.config.ranking = core.config.ranking.with_overrides(date_window_boost=RankingPolicy().date_window_boost)
    dated = [bike_rank(q) for q in questions]
    assert core.last_trace is not None and "dates" in core.last_trace.timings
    assert dated[0] <= plain[0] and dated[0] <= 1
    assert dated[1] < plain[1]  # the weekend after the test (9-16 Oct) outranks last month's shopping
    core.close()
