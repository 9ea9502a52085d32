from __future__ import annotations

import pytest

from memory_vec import ExtractiveSummarizer, LLMSummarizer, SummaryRejectedError
from memory_vec._rules.summary import SUMMARY_PROMPT, plan_fold, validate_summary
from memory_vec._rules.tokens import get_token_counter
from memory_vec.state.base import StateMessage
from memory_vec.testing import ScriptedLLM

counter = get_token_counter()


def msgs(*pairs: tuple[str, str], tokens: int = 10) -> list[StateMessage]:
    return [StateMessage(i + 1, f"m{i + 1}", role, text, 0.0, tokens) for i, (role, text) in enumerate(pairs)]


def plan(messages, **kw):  # type: ignore[no-untyped-def]
    args = {
        "summary_tokens": 0,
        "folded_through": 0,
        "max_token_limit": 100,
        "trigger_ratio": 0.7,
        "target_ratio": 0.4,
        "keep_recent": 2,
    }
    args.update(kw)
    return plan_fold(messages, **args)


def test_no_fold_under_trigger() -> None:
    assert plan(msgs(*[("user", "x")] * 7)) is None  # 70 tokens, not over 70


def test_fold_takes_oldest_until_target_and_keeps_recent() -> None:
    p = plan(msgs(*[("user", "x")] * 10))  # 100 tokens
    assert p is not None
    assert [m.seq for m in p.messages] == [1, 2, 3, 4, 5, 6]  # leaves 40 = target
    assert p.folded_through == 6


def test_fold_never_touches_the_last_keep_recent() -> None:
    p = plan(msgs(*[("user", "x")] * 3, tokens=40), keep_recent=2)
    assert p is not None and [m.seq for m in p.messages] == [1]
    assert plan(msgs(*[("user", "x")] * 2, tokens=60), keep_recent=2) is None


def test_fold_never_separates_tool_call_from_result() -> None:
    m = msgs(
        ("user", "q"),
        ("assistant", "call tool"),
        ("tool", "result"),
        ("tool", "result2"),
        ("assistant", "a"),
        ("user", "q2"),
        ("assistant", "a2"),
        tokens=15,
    )
    p = plan(m, keep_recent=2)
    assert p is not None
    # the cut may not fall just before a tool message
    assert m[len(p.messages)].role != "tool"


def test_fold_backs_off_rather_than_enter_the_protected_window() -> None:
    m = msgs(("user", "q"), ("assistant", "call"), ("tool", "r"), ("assistant", "a"), tokens=30)
    p = plan(m, keep_recent=2)  # foldable = 2 (q, call) but call's result is protected
    assert p is not None and [x.role for x in p.messages] == ["user"]


def test_llm_prompt_is_structured_and_incremental() -> None:
    llm = ScriptedLLM(["- budget: 5000"])
    s = LLMSummarizer(llm, counter=counter, timeout=None)
    out = s.summarize("- user likes tea", msgs(("user", "The budget is 5000.")), max_tokens=100)
    assert out == "- budget: 5000"
    prompt = llm.prompts[0]
    for kind in ("preferences", "decisions", "tasks", "numbers", "mood"):
        assert kind in prompt
    assert "- user likes tea" in prompt and "user: The budget is 5000." in prompt
    assert "newer value" in SUMMARY_PROMPT


def test_llm_prompt_asks_for_chinese_when_conversation_is_chinese() -> None:
    llm = ScriptedLLM(["- 预算：8000元"])
    LLMSummarizer(llm, counter=counter, timeout=None).summarize("", msgs(("user", "预算调整到8000元")), max_tokens=50)
    assert "Chinese" in llm.prompts[0]


@pytest.mark.parametrize("junk", ["", "   ", "Error: rate limit exceeded", "I'm sorry, I cannot help", "None"])
def test_junk_answers_are_refused(junk: str) -> None:
    with pytest.raises(SummaryRejectedError):
        validate_summary(junk, max_tokens=100, counter=counter)


def test_over_budget_answer_is_refused() -> None:
    with pytest.raises(SummaryRejectedError, match="budget"):
        validate_summary("word " * 200, max_tokens=50, counter=counter)


def test_llm_timeout_is_refused() -> None:
    s = LLMSummarizer(ScriptedLLM([(2.0, "- late")]), counter=counter, timeout=0.2)
    with pytest.raises(SummaryRejectedError, match="timed out"):
        s.summarize("", msgs(("user", "hi")), max_tokens=50)


def test_extractive_keeps_valuable_sentences_and_newer_value_wins() -> None:
    s = ExtractiveSummarizer(counter=counter)
    first = s.summarize(
        "",
        msgs(("user", "The budget is 5000 dollars. Nice weather today."), ("user", "I prefer window seats.")),
        max_tokens=200,
    )
    assert "5000" in first and "window seats" in first
    second = s.summarize(first, msgs(("user", "Actually the budget is now 8000 dollars.")), max_tokens=200)
    assert "8000" in second and "5000" not in second and "window seats" in second


def test_extractive_chinese_newer_value_wins() -> None:
    s = ExtractiveSummarizer(counter=counter)
    first = s.summarize("", msgs(("user", "我的预算是5000元。"), ("user", "我喜欢靠窗的座位。")), max_tokens=200)
    second = s.summarize(first, msgs(("user", "预算调整到8000元。")), max_tokens=200)
    assert "8000" in second and "5000" not in second and "靠窗" in second


def test_extractive_respects_budget() -> None:
    s = ExtractiveSummarizer(counter=counter)
    many = msgs(*[("user", f"The item {i} costs {i * 10} dollars and I must buy it by Friday.") for i in range(60)])
    out = s.summarize("", many, max_tokens=80)
    assert 0 < counter.count(out) <= 80
