from __future__ import annotations

import json

import pytest

from memory_vec import MemoryConfig, MemoryCore, MemoryNotFoundError, WriteEvent
from memory_vec._rules.conflict import (
    ConflictAction,
    ConflictResolver,
    ExistingFact,
    ExtractedFact,
    LLMExtractor,
    RuleExtractor,
)
from memory_vec._rules.facts import is_question
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import ScriptedLLM, parts


def texts(hits) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.text for h in hits]


def test_rule_extractor_english_and_chinese() -> None:
    ex = RuleExtractor()
    assert [f.type for f in ex.extract("user", "I prefer window seats.")] == ["preference"]
    fact = ex.extract("user", "预算调整到8000元")[0]
    assert fact.subject == "预算" and fact.importance > 0.5
    assert ex.extract("user", "我喜欢喝绿茶")[0].type == "preference"
    assert ex.extract("user", "以后都不要用表情符号")[0].type == "constraint"
    assert ex.extract("user", "Please convert this file to PDF now")[0].transient
    assert ex.extract("user", "thanks!") == []
    assert ex.extract("assistant", "The budget is 5000.") == []  # only the user's own statements


def test_update_supersedes_old_fact_and_its_message(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", "The budget is 5000 dollars.")
    assert first.event is WriteEvent.ADDED and len(first.fact_ids) == 1
    core.add_message("user", "I like green tea.")
    second = core.add_message("user", "Actually the budget is now 8000 dollars.")
    assert second.event is WriteEvent.UPDATED
    assert set(first.fact_ids) | {first.id} <= set(second.superseded_ids)
    hits = texts(core.recall("what is the budget", k=10))
    assert not any("5000" in t for t in hits) and any("8000" in t for t in hits)
    old = core.get(first.fact_ids[0])
    assert old.valid_to is not None and old.superseded_by == second.fact_ids[0]
    chain = core.history(second.fact_ids[0])
    assert [r.id for r in chain] == [first.fact_ids[0], second.fact_ids[0]]
    # nothing was physically deleted
    assert (
        parts(core).backend.count(RecordFilter(include_superseded=True))
        == parts(core).backend.count(RecordFilter()) + 2
    )


def test_restore_undoes_a_supersede(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", "The budget is 5000 dollars.")
    second = core.add_message("user", "The budget is 8000 dollars.")
    core.restore(first.fact_ids[0])
    hits = texts(core.recall("budget", k=10))
    assert any("5000" in t for t in hits) and not any("8000" in t for t in hits)
    assert core.get(second.fact_ids[0]).superseded_by == first.fact_ids[0]


def test_exact_duplicate_fact_is_a_noop_but_message_is_kept(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    a = core.add_message("user", "I prefer window seats.")
    b = core.add_message("user", "I prefer window seats.")
    assert b.event is WriteEvent.SKIPPED_DUPLICATE and b.duplicate_of == a.fact_ids[0]
    facts = parts(core).backend.scan(RecordFilter(user_id="u1", kinds=("fact",)))
    assert len(facts) == 1 and facts[0].id == a.fact_ids[0]
    assert parts(core).backend.count(RecordFilter(kinds=("message",))) == 2


@pytest.mark.parametrize(
    ("before", "after", "new_value"),
    [
        ("My warfarin dose is 1.5 mg daily.", "My warfarin dose is 15 mg daily.", "15 mg"),
        ("The freezer must be set to -18 degrees.", "The freezer must be set to 18 degrees.", "to 18"),
        ("我的体温是37.5度。", "我的体温是375度。", "375"),
    ],
)
def test_a_value_differing_only_in_a_numbers_punctuation_is_an_update(  # type: ignore[no-untyped-def]
    make_core, before: str, after: str, new_value: str
) -> None:
    core = make_core()
    first = core.add_message("user", before)
    second = core.add_message("user", after)
    assert second.event is not WriteEvent.SKIPPED_DUPLICATE and second.fact_ids
    current = [f.text for f in parts(core).backend.scan(RecordFilter(user_id="u1", kinds=("fact",)))]
    assert any(new_value in t for t in current) and first.fact_ids[0] not in second.fact_ids


def test_decimals_do_not_split_a_fact() -> None:
    from memory_vec._rules.facts import split_sentences

    assert split_sentences("My warfarin dose is 2.5 mg daily. The budget is 5000.50 euros.") == [
        "My warfarin dose is 2.5 mg daily.",
        "The budget is 5000.50 euros.",
    ]
    assert split_sentences("我的体温是37.5度。2019年搬家了") == ["我的体温是37.5度。", "2019年搬家了"]
    assert split_sentences("Version 1.2.3 is out.Next!") == ["Version 1.2.3 is out.", "Next!"]


def test_transient_instruction_is_skipped_as_low_value(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    result = core.add_message("user", "Please convert this file to PDF now")
    assert result.event is WriteEvent.SKIPPED_LOW_VALUE and result.fact_ids == []
    assert parts(core).backend.get([result.id])  # the raw message is stored


def test_other_users_facts_are_never_superseded(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = InMemoryBackend(), InMemoryStateStore()
    alice = make_core(backend=backend, state=state, user_id="alice")
    bob = make_core(backend=backend, state=state, user_id="bob")
    a = alice.add_message("user", "The budget is 5000 dollars.")
    bob.add_message("user", "The budget is 9000 dollars.")
    assert alice.get(a.fact_ids[0]).valid_to is None


def test_summary_reflects_the_update(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(max_token_limit=150, summary_max_tokens=60, keep_recent_turns=2)
    core.add_message("user", "The budget is 5000 dollars.")
    for i in range(12):
        core.add_message("user", f"chatting about hobby number {i} and other things")
    assert "5000" in core.working_state().summary
    core.add_message("user", "The budget is 8000 dollars.")
    summary = core.working_state().summary
    assert "8000" in summary and "5000" not in summary


def test_manage_single_memories_within_user_scope(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = InMemoryBackend(), InMemoryStateStore()
    core = make_core(backend=backend, state=state)
    mallory = make_core(backend=backend, state=state, user_id="mallory")
    r = core.remember("Remember that I prefer aisle seats")
    rec = core.get(r.id)
    assert rec.pinned and rec.kind == "fact" and rec.importance == 1.0
    with pytest.raises(MemoryNotFoundError):
        mallory.get(r.id)
    with pytest.raises(MemoryNotFoundError):
        mallory.delete(r.id)
    assert not core.unpin(r.id).pinned and core.pin(r.id).pinned
    updated = core.update(r.id, "Remember that I prefer window seats")
    assert texts(core.recall("which seats do I prefer", k=5))[0] == "Remember that I prefer window seats"
    assert [x.id for x in core.history(updated.id)] == [r.id, updated.id]
    assert core.delete(updated.id)
    with pytest.raises(MemoryNotFoundError):
        core.get(updated.id)
    # Deleting the newer value made the older one current again: remembering it again is a duplicate.
    assert core.get(r.id).valid_to is None
    assert core.remember("Remember that I prefer aisle seats").event is WriteEvent.SKIPPED_DUPLICATE


def test_llm_extractor_bad_json_is_skipped_with_reason(make_core, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    llm = ScriptedLLM(
        [
            "not json at all",
            json.dumps([{"fact": "budget is 5000", "subject": ""}]),
            json.dumps(
                [{"fact": "The user's budget is 5000", "subject": "budget", "importance": 0.9, "type": "constraint"}]
            ),
        ]
    )
    core = MemoryCore(
        MemoryConfig(user_id="u", fact_extractor="llm", score_threshold=0.0),
        llm=llm,
        embedder=hash_embedder,
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
    )
    r1 = core.add_message("user", "my budget is 5000")
    assert r1.fact_ids == [] and any("malformed JSON" in e for e in core.last_trace.events)  # type: ignore[union-attr]
    r2 = core.add_message("user", "my budget is 5000 ok")
    assert r2.fact_ids == [] and any("without subject" in e for e in core.last_trace.events)  # type: ignore[union-attr]
    r3 = core.add_message("user", "the budget: 5000")
    assert len(r3.fact_ids) == 1 and core.get(r3.fact_ids[0]).subject == "budget"
    assert parts(core).backend.get([r1.id, r2.id, r3.id])  # raw messages always stored


def test_llm_extractor_raising_keeps_message(make_core, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    core = MemoryCore(
        MemoryConfig(user_id="u", fact_extractor="llm"),
        llm=ScriptedLLM([TimeoutError("slow")]),
        embedder=hash_embedder,
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
    )
    r = core.add_message("user", "my budget is 5000")
    assert parts(core).backend.get([r.id]) and any("failed" in e for e in core.last_trace.events)  # type: ignore[union-attr]


def test_judge_decides_borderline_cases() -> None:
    judge = ScriptedLLM(["UPDATE 0"])
    resolver = ConflictResolver(threshold=0.9, judge=judge)
    fact = ExtractedFact("We will meet in the big conference room", None, 0.5)
    old = ExistingFact("x1", "We will meet in the small meeting room", None, 0.85)
    decision = resolver.decide(fact, [old])
    assert decision.action is ConflictAction.UPDATE and decision.superseded == ("x1",) and decision.judged
    assert "small meeting room" in judge.prompts[0]
    assert ConflictResolver(threshold=0.9).decide(fact, [old]).action is ConflictAction.ADD


def test_retraction_deletes_subject() -> None:
    resolver = ConflictResolver()
    old = ExistingFact("x1", "My favourite food is sushi", "favourite food", 0.7)
    fact = RuleExtractor().extract("user", "My favourite food is not sushi anymore")[0]
    assert resolver.decide(fact, [old]).action is ConflictAction.DELETE


def test_llm_extractor_parses_fenced_json() -> None:
    reply = '```json\n[{"fact": "Likes tea", "subject": "drink", "importance": 2}]\n```'
    facts = LLMExtractor(lambda p: reply).extract("user", "I like tea")
    assert facts[0].importance == 1.0 and facts[0].subject == "drink"


def test_export_import_round_trip(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    core.add_message("user", "The budget is 5000 dollars.", metadata={"k": [1, 2]})
    core.add_message("user", "The budget is 8000 dollars.", session_id="s2")
    data = core.export_memories()
    json.dumps(data)  # serializable
    fresh = make_core()
    assert fresh.import_memories(data) == len(data["records"])
    again = fresh.export_memories()
    assert sorted(again["records"], key=lambda r: r["id"]) == sorted(data["records"], key=lambda r: r["id"])
    assert again["sessions"].keys() == data["sessions"].keys()
    for s in data["sessions"]:
        a, b = dict(data["sessions"][s]), dict(again["sessions"][s])
        a.pop("updated_at"), b.pop("updated_at")
        assert a == b


def test_assistant_echo_of_the_old_value_is_superseded_too(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    core.add_messages([("user", "The budget is 5000 dollars."), ("assistant", "Got it, a budget of 5000 dollars.")])
    core.add_messages([("user", "I like green tea."), ("assistant", "Green tea it is.")])
    result = core.add_message("user", "The budget is now 8000 dollars.")
    assert result.event is WriteEvent.UPDATED
    hits = texts(core.recall("what is the budget", k=10))
    assert not any("5000" in t for t in hits) and any("8000" in t for t in hits)
    assert "Green tea it is." in texts(core.recall("green tea", k=10))  # other replies untouched


# --------------------------------------------------------------------------- whose fact it is (issue 14.6)
def _decide(new_text: str, old_text: str, similarity: float = 0.95) -> ConflictAction:
    """What the rules do with ``new_text`` against one existing fact (as the
    rule extractor would have stored it), at a high similarity."""
    from memory_vec._rules.facts import subject_key

    fact = RuleExtractor().extract("user", new_text)[0]
    old = ExistingFact("old", old_text, subject_key(old_text), similarity)
    return ConflictResolver(threshold=0.9).decide(fact, [old]).action


OTHER_OWNER_PAIRS = [
    # (the user's fact, another person's look-alike)
    ("Actually the budget is now 8000 dollars.", "My colleague's budget is 3000 dollars."),
    ("I am 36 years old.", "My wife is 34 years old."),
    ("I'm 36 years old now.", "My mom just turned 61."),
    ("My flight to Tokyo leaves at 9:15.", "My husband's flight to Tokyo leaves at 11:15."),
    ("My address is 12 Oak Street.", "Anna's address is 40 Pine Road."),
    ("预算调整到8000元了。", "我同事的预算是3000元。"),
    ("我今年35岁。", "我妈今年60岁。"),
    ("我去东京的航班8点起飞。", "我老婆去东京的航班10点起飞。"),
    ("我家的地址是人民路12号。", "李强家的地址是中山路40号。"),
]


@pytest.mark.parametrize(("own", "other"), OTHER_OWNER_PAIRS)
def test_another_persons_fact_never_supersedes_the_users_nor_the_reverse(own: str, other: str) -> None:
    assert _decide(other, own) is ConflictAction.ADD
    assert _decide(own, other) is ConflictAction.ADD


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My colleague's budget is 3000 dollars.", "My colleague's budget is now 4000 dollars."),
        ("My wife's flight to Tokyo leaves at 9:15.", "My wife's flight to Tokyo now leaves at 11:15."),
        ("我同事的预算是3000元。", "我同事的预算调整到4000元了。"),
        ("我妈去东京的航班8点起飞。", "我妈去东京的航班改到10点起飞了。"),
    ],
)
def test_the_same_persons_fact_still_updates(old: str, new: str) -> None:
    assert _decide(new, old) is ConflictAction.UPDATE


def test_subject_keys_are_owner_qualified() -> None:
    ex = RuleExtractor()
    fact = ex.extract("user", "My colleague's budget is 3000 dollars.")[0]
    assert (fact.owner, fact.subject) == ("colleague", "colleague/budget")
    fact = ex.extract("user", "My coworker is planning a trip. Her budget is 900 dollars.")[-1]
    assert (fact.owner, fact.subject) == ("colleague", "colleague/budget")  # the pronoun's antecedent
    assert ex.extract("user", "我同事的预算是3000元。")[0].subject == "同事/预算"
    assert ex.extract("user", "我老婆的预算是3000元。")[0].subject == "妻子/预算"
    own = ex.extract("user", "The budget is now 8000 dollars.")[0]
    assert (own.owner, own.subject) == ("user", "budget")  # the user's keys are unchanged
    sister = ex.extract("user", "Sorry, I got that wrong, my sister's name is Grace.")[0]
    assert (sister.owner, sister.subject) == ("sister", "sister")


@pytest.mark.slow
def test_other_persons_fact_does_not_hide_the_users_value_in_recall(make_core) -> None:  # type: ignore[no-untyped-def]
    # The hashing embedder is not semantic: a low threshold stands in for the
    # cosine >= 0.9 a real embedder gives such look-alikes.
    core = make_core(conflict_threshold=0.2)
    core.add_message("user", "My budget is 5000 dollars.")
    core.add_message("user", "Actually my budget is now 8000 dollars.")
    result = core.add_message("user", "My colleague's budget is 3000 dollars.")
    assert result.event is WriteEvent.ADDED and result.superseded_ids == []
    hits = texts(core.recall("what is my budget", k=10))
    assert any("8000" in t for t in hits) and any("3000" in t for t in hits)
    zh = make_core(user_id="u2", conflict_threshold=0.2)
    zh.add_message("user", "我今年35岁。")
    assert zh.add_message("user", "我妈今年60岁。").superseded_ids == []
    assert any("35岁" in t for t in texts(zh.recall("我多大", k=10)))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I like sushi.", "I don't like sushi."),
        ("I love olives.", "I no longer like olives."),
        ("I don't like olives.", "I like olives now."),
        ("I hate cilantro.", "Actually I love cilantro these days."),
        ("我喜欢吃火锅。", "我不喜欢吃火锅。"),
        ("我不喜欢吃苦瓜。", "我现在喜欢吃苦瓜了。"),
    ],
)
def test_negated_preference_supersedes_and_back(old: str, new: str) -> None:
    assert _decide(new, old, similarity=0.5) in (ConflictAction.UPDATE, ConflictAction.DELETE)


def test_preference_of_another_person_is_not_negated_by_the_user() -> None:
    assert _decide("I don't like sushi.", "My wife loves sushi.") is ConflictAction.ADD
    assert _decide("我不喜欢吃火锅。", "我老婆很喜欢吃火锅。") is ConflictAction.ADD
    assert _decide("I like sushi.", "I like ramen.") is ConflictAction.ADD  # two likings


def test_dont_like_after_like_leaves_one_current(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", "I like sushi.")
    second = core.add_message("user", "I don't like sushi.")
    assert second.event is WriteEvent.UPDATED and set(first.fact_ids) <= set(second.superseded_ids)
    assert texts(core.recall("do I like sushi", k=10)).count("I like sushi.") == 0


def test_llm_extractor_asks_and_parses_the_owner() -> None:
    answer = json.dumps(
        [
            {"fact": "The user's wife is 34 years old.", "owner": "the user's wife", "subject": "age"},
            {"fact": "The user is 36 years old.", "owner": "User", "subject": "age"},
            {"fact": "Anna's budget is 200 dollars.", "subject": "budget"},  # owner missing: read from the text
            {"fact": "My mom's flight leaves at 9.", "owner": None, "subject": "mom/flight"},
            {"fact": "我同事的预算是3000元。", "owner": "我同事", "subject": "预算"},
        ]
    )
    llm = ScriptedLLM([answer])
    facts = LLMExtractor(llm).extract("user", "…")
    assert [(f.owner, f.subject) for f in facts] == [
        ("wife", "wife/age"),
        ("user", "age"),
        ("anna", "anna/budget"),
        ("mother", "mother/flight"),
        ("同事", "同事/预算"),
    ]
    assert '"owner"' in llm.prompts[0]
    resolver = ConflictResolver(threshold=0.9)
    old = ExistingFact("x", facts[1].text, facts[1].subject, 0.97)
    assert resolver.decide(facts[0], [old]).action is ConflictAction.ADD


def test_patch_summary_drops_the_old_value_and_its_echo_but_not_other_peoples() -> None:
    from memory_vec._rules.conflict import patch_summary

    summary = (
        "- [user] Our travel budget is 5000 euros for the whole trip.\n"
        "- [assistant] Got it, a budget of 5000 euros.\n"
        "- [user] My colleague's budget is 5000 euros too.\n"
        "- [user] The wedding budget is 5000 euros."
    )
    patched = patch_summary(
        summary,
        subject="travel budget",
        old_texts=["Our travel budget is 5000 euros for the whole trip."],
        new_text="Update: the travel budget is now 8000 euros.",
    )
    assert "Got it" not in patched and "whole trip" not in patched and "8000" in patched
    assert "colleague's budget is 5000" in patched and "wedding budget is 5000" in patched
    zh = patch_summary(
        "- [user] 我们这次旅行的预算是5000元。\n- [assistant] 好的，预算5000元。\n- [user] 我同事的预算是5000元。",
        subject="预算",
        old_texts=["我们这次旅行的预算是5000元。"],
        new_text="更新一下：预算调整到8000元。",
    )
    assert "好的" not in zh and "旅行的预算是5000" not in zh and "我同事的预算是5000元" in zh
    likes = patch_summary(
        "- [user] I like olives.\n- [user] My wife likes olives.",
        subject=None,
        old_texts=["I like olives."],
        new_text="I don't like olives.",
    )
    assert "I like olives." not in likes and "My wife likes olives." in likes


def test_extractive_summary_drops_the_assistants_echo_of_an_old_value() -> None:
    from memory_vec._rules.summary import ExtractiveSummarizer
    from memory_vec._rules.tokens import get_token_counter
    from memory_vec.state.base import StateMessage

    turns = [
        ("user", "Our travel budget is 5000 euros for the whole trip."),
        ("assistant", "Got it, a budget of 5000 euros."),
        ("user", "My colleague's budget is 3000 euros."),
        ("user", "I like olives."),
        ("user", "Update: the travel budget is now 8000 euros."),
        ("user", "I don't like olives."),
    ]
    msgs = [StateMessage(i + 1, f"m{i}", role, text, 0.0, 10) for i, (role, text) in enumerate(turns)]
    out = ExtractiveSummarizer(counter=get_token_counter()).summarize("", msgs, max_tokens=400)
    assert "5000" not in out and "8000" in out and "colleague's budget is 3000" in out
    assert "I like olives" not in out and "I don't like olives" in out


@pytest.mark.parametrize(
    ("plant", "echo", "update"),
    [
        (
            "Our travel budget is 5000 euros for the whole trip.",
            "Got it, a budget of 5000 euros.",
            "Update: the travel budget is now 8000 euros.",
        ),
        ("我们这次旅行的预算是5000元。", "好的，预算5000元。", "更新一下：预算调整到8000元。"),
    ],
)
def test_running_summary_drops_the_old_value_and_the_assistants_echo(make_core, plant, echo, update) -> None:  # type: ignore[no-untyped-def]
    """The demo's case: the summary must not keep serving the old budget after the update."""
    core = make_core(max_token_limit=220, summary_max_tokens=120, keep_recent_turns=2)
    core.add_messages([("user", plant), ("assistant", echo)])
    for i in range(14):
        core.add_messages(
            [
                ("user", f"What do you think about topic number {i}?"),
                ("assistant", f"Topic number {i} is a great topic."),
            ]
        )
    assert "5000" in core.working_state().summary
    core.add_messages([("user", update), ("assistant", "OK.")])
    for i in range(14):
        core.add_messages([("user", f"Tell me more about subject {i}."), ("assistant", f"Subject {i} is deep.")])
    summary = core.working_state().summary
    assert "5000" not in summary and "8000" in summary


@pytest.mark.parametrize(
    "question",
    [
        "我的预算是多少？",
        "我的预算是多少",
        "预算是不是8000？",
        "你知道我的预算吗",
        "我住在哪里",
        "谁是我的老师",
        "What is my budget?",
        "what's my budget",
        "how much is my budget",
        "is my budget 8000",
        "Do you remember my budget",
        "when does my flight leave",
    ],
)
def test_a_question_is_never_a_fact(question: str) -> None:
    assert is_question(question)
    assert RuleExtractor().extract("user", question) == []


@pytest.mark.parametrize(
    "statement",
    [
        "我的预算是5000元。",
        "我什么时候都有空",
        "谁都可以",
        "哪里都行",
        "我还在上海呢",
        "预算是5000，对吧？",
        "The budget is 5000, right?",
        "Do not use commas.",
        "What I want is a budget of 5000.",
        "How I met my wife is a long story.",
        "我买了几本书",
        "Have the report ready by Friday.",
        "Do the dishes before 8pm",
        "When I was 20 I lived in Paris.",
        "What a great day",
    ],
)
def test_statements_that_look_like_questions_are_not_questions(statement: str) -> None:
    assert not is_question(statement)


@pytest.mark.parametrize("extractor", ["rules", "none"])
@pytest.mark.parametrize(
    ("fact", "question"),
    [
        ("我的预算是5000元。", "我的预算是多少？"),
        ("我的预算是5000元。", "预算是不是8000？"),
        ("The budget is 5000 dollars.", "Is the budget 8000 dollars?"),
        ("The budget is 5000 dollars.", "what is the budget now"),
    ],
)
def test_asking_about_a_value_does_not_overwrite_it(make_core, extractor, fact: str, question: str) -> None:  # type: ignore[no-untyped-def]
    # Found in use: "我的预算是多少？" was stored as a fact and superseded the budget.
    core = make_core(fact_extractor=extractor)
    stated = core.add_message("user", fact)
    asked = core.add_message("user", question)
    assert asked.event is WriteEvent.ADDED and asked.superseded_ids == [] and asked.fact_ids == []
    assert core.get(stated.id).valid_to is None
    assert fact in texts(core.recall(question, k=10))
    # A real update still supersedes.
    update = "我的预算调整到8000元。" if "预算" in fact else "The budget is now 8000 dollars."
    assert core.add_message("user", update).event is WriteEvent.UPDATED


@pytest.mark.parametrize("extractor", ["rules", "none"])
def test_a_later_message_of_the_same_call_supersedes_the_earlier_one(make_core, extractor: str) -> None:  # type: ignore[no-untyped-def]
    # Both messages reach the store in one write: the earlier one (and its fact) must be
    # stored as history, not served next to the new value.
    core = make_core(fact_extractor=extractor)
    first, second = core.add_messages(
        [("user", "The budget is 5000 dollars."), ("user", "Actually the budget is now 8000 dollars.")]
    )
    assert second.superseded_ids and first.id in second.superseded_ids
    current = [r.text for r in parts(core).backend.scan(RecordFilter(user_id="u1"))]
    assert current and not any("5000" in text for text in current)
    assert not any("5000" in h.text for h in core.recall("what is the budget", k=5))
