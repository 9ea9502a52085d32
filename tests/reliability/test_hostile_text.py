"""Text built to make the analyzers backtrack must not stall a turn.

A 30 kB message of spaces between two letters took ~25 s in ``add_messages``
(a question-tag pattern, the clause split and the subject pattern backtracked
over the run), and 8,000 repetitions of one Chinese character ~1 s per
tokenization (jieba is quadratic in a run without a break), on every recall
that indexed it. Whitespace runs are squeezed before analysis and long runs go
to jieba in pieces; these tests pin the mechanisms, and one end-to-end guard
checks that the worst inputs found stay far from that cost.
"""

from __future__ import annotations

import time

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._rules import bm25
from memory_vec._rules.facts import is_question, owned_subject, split_sentences
from memory_vec._rules.owners import detect_owner
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder


def test_sentences_come_out_with_whitespace_runs_squeezed() -> None:
    assert split_sentences("my   budget\t\tis  5000.  Next one.") == ["my budget is 5000.", "Next one."]
    assert split_sentences("a" + " " * 30_000 + "b") == ["a b"]


def test_the_analyzers_read_a_spaced_out_sentence_like_the_squeezed_one() -> None:
    spaced = "My    budget   is   5000 ,   right ?"
    squeezed = "My budget is 5000 , right ?"
    assert is_question(spaced) == is_question(squeezed)
    assert owned_subject(spaced) == owned_subject(squeezed)
    assert detect_owner("My  sister  -  her  flight  leaves") == detect_owner("My sister - her flight leaves")


def test_a_confirmation_tag_is_still_read_at_the_end_of_a_long_sentence() -> None:
    long_statement = "我的预算是5000元" + "，而且" * 500 + "，对吧？"
    assert not is_question(long_statement)
    assert is_question("我的预算是多少" + "，" * 500 + "？")


def test_jieba_gets_long_runs_in_pieces_and_ordinary_text_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    jieba = pytest.importorskip("jieba")
    seen: list[int] = []
    real = jieba.cut_for_search

    def recording(text: str):  # type: ignore[no-untyped-def]
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(jieba, "cut_for_search", recording)
    ordinary = "我最喜欢吃北京烤鸭，每个月都去全聚德。" * 20
    bm25.tokenize(ordinary)
    assert seen == [len(ordinary)]  # unchanged tokens for text with breaks
    seen.clear()
    tokens = bm25.tokenize("的" * 1000 + "北京烤鸭")
    assert seen and max(seen) <= bm25._JIEBA_RUN
    assert "烤鸭" in tokens or "北京烤鸭" in tokens


@pytest.mark.parametrize(
    "text",
    [
        "a" + " " * 30_000 + "b",
        "我" + " " * 30_000 + "吗",
        "Did " + " " * 30_000 + " x?",
        "a" + "\t \n" * 9_000 + "b",
        "我" + "的" * 10_000 + "吗",
        "a" + "5月" * 5_000 + "b",
        "on" + " " * 10_000 + "the day after x",  # the date-relation pattern: cubic before (10k: ~30 s)
        "about" + " " * 10_000 + "x after y",
        " ".join(f"I like thing{i}." for i in range(1_880)),  # 1,880 facts, each checked against all before: 9 s
    ],
)
@pytest.mark.slow
def test_a_hostile_message_is_stored_and_recalled_without_stalling(text: str) -> None:
    core = MemoryCore(
        MemoryConfig(user_id="hostile", session_id="s"),
        embedder=DeterministicHashEmbedder(32),
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
    )
    bm25.tokenize("预热")  # jieba loads its dictionary once per process (~2 s); not what is measured
    start = time.perf_counter()
    core.add_messages([("user", text), ("assistant", "ok")])
    hits = core.recall(text, k=3)
    elapsed = time.perf_counter() - start
    assert any(h.text == text for h in hits)
    # Before: 22-28 s for the whitespace runs. After: well under a second; the
    # bound leaves room for a loaded CI machine, not for a quadratic pattern.
    assert elapsed < 8, f"{elapsed:.1f} s for one {len(text.encode())}-byte message"


def test_a_message_of_many_facts_keeps_each_text_once_and_at_most_the_cap() -> None:
    from memory_vec._pipelines.resolution import MAX_FACTS_PER_MESSAGE

    core = MemoryCore(
        MemoryConfig(user_id="hostile", session_id="s"),
        embedder=DeterministicHashEmbedder(32),
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
    )
    (repeated,) = core.add_messages([("user", "My favourite colour is blue. " * 50)])
    assert len(repeated.fact_ids) == 1  # one fact, not 50 current copies
    (pasted,) = core.add_messages([("user", " ".join(f"I like thing{i}." for i in range(200)))])
    assert len(pasted.fact_ids) == MAX_FACTS_PER_MESSAGE
    assert core.last_trace is not None and any(
        f"200 facts in one message, the first {MAX_FACTS_PER_MESSAGE} kept" in ev for ev in core.last_trace.events
    )
    assert core.get(pasted.id).text.endswith("I like thing199.")  # the message itself is stored whole
