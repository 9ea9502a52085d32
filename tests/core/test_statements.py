"""What a statement asserts, and what the memory serves as current because of it (#44).

Unit tier: the hashing embedder, in-process stores. The same behaviours on
every backend are in tests/reliability/test_conflict_backends.py; the rates on
the frozen supersede set are a benchmark (benchmarks/supersede).
"""

from __future__ import annotations

import pytest

from memory_vec import WriteEvent
from memory_vec._model.queries import RecordFilter
from memory_vec._model.session import StateMessage
from memory_vec._rules.assertion import Kind, Modality, assess
from memory_vec._rules.change import numbers, retraction, stated_change
from memory_vec._rules.conflict import ConflictAction, ConflictResolver, ExistingFact, patch_summary
from memory_vec._rules.extraction import RuleExtractor
from memory_vec._rules.summary import ExtractiveSummarizer
from memory_vec._rules.tokens import get_token_counter
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import ScriptedLLM, parts


@pytest.mark.parametrize(
    ("text", "role", "modality"),
    [
        ("The budget is 8000 euros.", "user", Modality.ASSERTED),
        ("The budget used to be 9000.", "user", Modality.PAST),
        ("Last year the budget was 9000.", "user", Modality.PAST),
        ("The budget was 5000 but now it's 8000.", "user", Modality.ASSERTED),
        ("Suppose the budget is 9000.", "user", Modality.HYPOTHETICAL),
        ("Let's say the budget is 9000.", "user", Modality.HYPOTHETICAL),
        ("I wish the budget were 9000.", "user", Modality.HYPOTHETICAL),
        ("He told me the budget is 9000.", "user", Modality.REPORTED),
        ("According to Tom the budget is 9000.", "user", Modality.REPORTED),
        ("Is the budget 9000?", "user", Modality.QUESTION),
        ("Next month we might raise the budget to 9000.", "user", Modality.PLANNED),
        ("Great, so the budget is 9000.", "assistant", Modality.ECHO),
        ("预算调整到8000元了。", "user", Modality.ASSERTED),
        ("去年预算是9000元。", "user", Modality.PAST),
        ("原来是5000，现在改成8000了。", "user", Modality.ASSERTED),
        ("假设预算是9000元。", "user", Modality.HYPOTHETICAL),
        ("如果预算是9000元的话就好了。", "user", Modality.HYPOTHETICAL),
        ("我每个月的话费是8200元。", "user", Modality.ASSERTED),  # 话费, a phone bill, is no 的话 "if"
        ("我们聊的话题是旅行。", "user", Modality.ASSERTED),
        ("Last year we raised the budget to 9000.", "user", Modality.PAST),
        ("I moved to Lyon last weekend.", "user", Modality.ASSERTED),
        ("去年把预算从5000改成9000了。", "user", Modality.PAST),
        ("组里在讨论要不要把站会挪到十点。", "user", Modality.PLANNED),
        ("同事说预算是9000元。", "user", Modality.REPORTED),
        ("老板说预算是9000元。", "user", Modality.REPORTED),
        ("预算是9000元吗？", "user", Modality.QUESTION),
        ("下个月可能把预算提高到9000元。", "user", Modality.PLANNED),
    ],
)
def test_modality(text: str, role: str, modality: Modality) -> None:
    assert assess(text, role).modality is modality


def test_events_and_entities() -> None:
    assert assess("I ran 5 km on Monday.").kind is Kind.EVENT
    assert assess("我周一跑了5公里。").kind is Kind.EVENT
    assert assess("I moved to Lyon.").kind is Kind.STATE  # a change of state, not an event
    assert assess("My budget is 5000.").kind is Kind.STATE
    assert assess("Room 101 has a broken lamp.").entities == {"room 101"}
    assert assess("3号床的病人今天出院。").entities == {"3号床"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I ran 5 km on Monday.", "I ran 10 km on Wednesday."),
        ("Room 101 has a broken lamp.", "Room 205 has a broken lamp."),
        ("The budget is 5000 euros.", "The budget used to be 9000 euros."),
        ("The budget is 5000 euros.", "Last year the budget was 9000 euros."),
        ("The budget is 5000 euros.", "Suppose the budget is 9000 euros."),
        ("The budget is 5000 euros.", "Let's say the budget is 9000 euros."),
        ("The budget is 5000 euros.", "He told me the budget is 9000 euros."),
        ("预算是5000元。", "同事说预算是9000元。"),
        ("预算是5000元。", "老板说预算是9000元。"),
        ("预算是5000元。", "去年预算是9000元。"),
        ("预算是5000元。", "假设预算是9000元。"),
        ("预算是5000元。", "如果预算是9000元的话，我们可以换沙发。"),
    ],
)
def test_not_an_update_is_kept_as_itself(make_core, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", old)
    second = core.add_message("user", new)
    assert second.superseded_ids == [] and second.event is not WriteEvent.UPDATED
    assert second.reason.startswith("kept") or second.reason == ""
    current = {h.text for h in core.recall(old, k=10)}
    assert old in current, f"{old!r} is no longer served after {new!r}"
    assert core.get(first.id).valid_to is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The budget is 5000 euros.", "The budget is now 8000 euros."),
        ("我的预算是5000元。", "预算调整到8000元。"),
        ("I love sushi.", "I don't like sushi anymore."),
    ],
)
def test_an_update_supersedes_and_says_why(make_core, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", old)
    second = core.add_message("user", new)
    assert first.id in second.superseded_ids
    assert second.reason.startswith(("update: rule:", "delete: rule:"))


def test_facts_carry_their_modality_and_recall_filters_on_it(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    core.add_message("user", "My budget is 5000 euros.")
    core.add_message("user", "My boss said the budget is 9000 euros.")
    facts = parts(core).backend.scan(RecordFilter(user_id="u1", kinds=("fact",)))
    assert {f.metadata["modality"] for f in facts} == {"asserted", "reported"}
    assert {f.metadata["statement"] for f in facts} == {"state"}
    asserted = parts(core).backend.scan(RecordFilter(user_id="u1", kinds=("fact",), metadata={"modality": "asserted"}))
    assert [f.text for f in asserted] == ["My budget is 5000 euros."]


def _summary(lines: list[tuple[str, str]]) -> str:
    messages = [StateMessage(i + 1, str(i), role, text, 0.0, 10) for i, (role, text) in enumerate(lines)]
    return ExtractiveSummarizer(counter=get_token_counter()).summarize("", messages, max_tokens=400)


@pytest.mark.parametrize(
    "later",
    [
        ("user", "Suppose the budget is 9000 euros."),
        ("user", "Is the budget 9000 euros?"),
        ("user", "Next month we might raise the budget to 9000 euros."),
        ("assistant", "Great, so the budget is 9000 euros."),
        ("user", "My boss said the budget is 9000 euros."),
    ],
)
def test_the_extractive_summary_keeps_the_users_value(later: tuple[str, str]) -> None:
    assert "5000" in _summary([("user", "My budget is 5000 euros."), later])


@pytest.mark.parametrize(
    "later", ["预算是9000元吗？", "下个月可能把预算提高到9000元。", "假设预算是9000元。", "同事说预算是9000元。"]
)
def test_the_extractive_summary_keeps_the_users_value_zh(later: str) -> None:
    assert "5000" in _summary([("user", "我的预算是5000元。"), ("user", later)])


def test_an_update_still_replaces_the_value_in_the_summary() -> None:
    summary = _summary([("user", "My budget is 5000 euros."), ("user", "My budget is now 8000 euros.")])
    assert "8000" in summary and "5000" not in summary


def test_patch_summary_without_a_new_text_only_removes() -> None:
    summary = "- [user] My budget is 5000 euros.\n- [user] I like tea."
    patched = patch_summary(summary, subject="budget", old_texts=["My budget is 5000 euros."], new_text=None)
    assert patched == "- [user] I like tea."


# --- edits reach every copy ------------------------------------------------------------------


def _budget(core) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.text for h in core.recall("what is my budget", k=5)]


def test_update_of_a_message_reaches_its_facts(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", "My budget is 5000 euros.")
    edited = core.update(first.id, "My budget is 7000 euros.")
    assert set(first.fact_ids) <= set(edited.superseded_ids)
    assert all(core.get(f).valid_to is not None for f in first.fact_ids)
    assert _budget(core)[0] == "My budget is 7000 euros." and not any("5000" in t for t in _budget(core))
    later = core.add_message("user", "My budget is now 9000 euros.")  # the edit's own facts are found
    assert edited.id in later.superseded_ids


def test_update_of_a_fact_makes_the_new_text_current_and_first(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", "My budget is 5000 euros.")
    edited = core.update(first.fact_ids[0], "My budget is 6500 euros.")
    assert first.id in edited.superseded_ids  # the source message said the old value
    assert _budget(core)[0] == "My budget is 6500 euros."
    assert not any("5000" in t for t in _budget(core))


def test_delete_of_a_message_takes_its_facts_and_summary_lines(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(max_token_limit=150, summary_max_tokens=60, keep_recent_turns=2)
    first = core.add_message("user", "The budget is 5000 dollars.")
    for i in range(12):
        core.add_message("user", f"chatting about hobby number {i} and other things")
    assert "5000" in core.working_state().summary
    result = core.delete(first.id)
    assert set(result.deleted_ids) == {first.id, *first.fact_ids}
    assert "5000" not in core.working_state().summary
    assert not any("5000" in h.text for h in core.recall("what is the budget", k=10))
    assert not any("5000" in r["text"] for r in core.export_memories()["records"])


def test_delete_of_the_newer_value_makes_the_older_current(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    old = core.add_message("user", "My budget is 5000 euros.")
    new = core.add_message("user", "My budget is now 8000 euros.")
    result = core.delete(new.id)
    assert old.id in result.restored_ids and core.get(old.id).valid_to is None
    assert _budget(core)[0] == "My budget is 5000 euros."


def test_delete_of_the_middle_of_a_chain_keeps_it_whole(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    a = core.add_message("user", "My budget is 5000 euros.")
    b = core.add_message("user", "My budget is now 8000 euros.")
    c = core.add_message("user", "My budget is now 9000 euros.")
    result = core.delete(b.fact_ids[0])  # superseded: allowed, and said so in the result
    assert result.restored_ids == [] and a.fact_ids[0] in result.relinked_ids
    assert core.get(a.fact_ids[0]).superseded_by == c.fact_ids[0]
    assert _budget(core)[0] == "My budget is now 9000 euros."
    assert [r.id for r in core.history(c.fact_ids[0])] == [a.fact_ids[0], c.fact_ids[0]]


# --- repair of stores written by the old rules ------------------------------------------------


later_ts = 1_900_000_000.0  # when the old rules' wrong supersede happened


def test_recheck_restores_what_the_old_rules_superseded(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    kept = core.add_message("user", "I ran 5 km on Monday.")
    later = core.add_message("user", "I ran 10 km on Wednesday.")
    budget = core.add_message("user", "My budget is 5000 euros.")
    update = core.add_message("user", "My budget is now 8000 euros.")
    # What 0.1's rules wrote: the second run superseded the first.
    wrong = [core.get(i).copy(valid_to=later_ts, superseded_by=later.fact_ids[0]) for i in (kept.id, *kept.fact_ids)]
    parts(core).backend.update(wrong)
    found = core.recheck_superseded()
    assert {x.record_id for x in found} == {kept.id, *kept.fact_ids}
    assert all("event" in x.reason for x in found)
    assert core.get(kept.id).valid_to is not None  # a dry run changes nothing
    core.recheck_superseded(apply=True)
    assert core.get(kept.id).valid_to is None and core.get(budget.id).valid_to is not None  # a real update stays
    assert core.recheck_superseded() == [] and update.superseded_ids


# --- the LLM judge sees what the offline path proposes ----------------------------------------


def _judged(answer: object, **settings: object) -> tuple[object, ScriptedLLM]:
    judge = ScriptedLLM([answer])
    resolver = ConflictResolver(threshold=0.9, judge=judge, **settings)  # type: ignore[arg-type]
    fact = RuleExtractor().extract("user", "My budget is now 8000 euros.")[0]
    old = ExistingFact("x1", "My budget is 5000 euros.", "budget", 0.95)
    return resolver.decide(fact, [old]), judge


def test_the_judge_confirms_or_vetoes_a_proposed_supersede() -> None:
    decision, judge = _judged("UPDATE 0")
    assert decision.action is ConflictAction.UPDATE and decision.judged and "5000" in judge.prompts[0]
    decision, _ = _judged("ADD")
    assert decision.action is ConflictAction.ADD and decision.judged


def test_a_slow_or_failing_judge_keeps_both_and_says_why() -> None:
    decision, _ = _judged((0.5, "UPDATE 0"), judge_timeout=0.05)
    assert (
        decision.action is ConflictAction.ADD and "within 0.05s" in decision.reason and "both kept" in decision.reason
    )
    decision, _ = _judged(RuntimeError("rate limited"))
    assert decision.action is ConflictAction.ADD and "rate limited" in decision.reason


def test_past_its_budget_the_offline_decision_stands() -> None:
    decision, judge = _judged("ADD", judge_budget=0)
    assert decision.action is ConflictAction.UPDATE and not decision.judged and "budget" in decision.reason
    assert judge.calls == 0


def test_update_of_a_message_reaches_the_recent_window_and_the_next_fold(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(max_token_limit=150, summary_max_tokens=60, keep_recent_turns=2)
    first = core.add_message("user", "The budget is 5000 dollars.")
    edited = core.update(first.id, "The budget is 7000 dollars.")
    window = core.working_state().messages
    assert [m.content for m in window] == ["The budget is 7000 dollars."] and window[0].id == edited.id
    for i in range(12):  # fold the window: the edit is what the summary keeps
        core.add_message("user", f"chatting about hobby number {i} and other things")
    summary = core.working_state().summary
    assert "7000" in summary and "5000" not in summary


def test_forget_leaves_nothing_of_the_user_in_the_working_state(make_core) -> None:  # type: ignore[no-untyped-def]
    state = InMemoryStateStore()
    core = make_core(state=state)
    core.add_message("user", "My budget is 5000 euros.")
    core.add_message("user", "My budget is 6000 euros.", session_id="s2")
    core.delete(core.add_message("user", "I ran 5 km on Monday.").id)  # a deletion makes a keyword version
    core.forget()
    core.recall("budget")  # a read after the forget leaves no version naming the user
    assert state.sessions("u1") == [] and state.keyword_version("u1") is None


# --- explicit changes: what the user says changed, from which value, to which ------------------

# Each issue example, as an update that supersedes (old, new).
STATED_UPDATES = [
    ("Our budget is 5000 euros.", "We raised the budget to 8000 euros."),
    ("My flight to Denver leaves at 9am.", "My flight to Denver now leaves at 9pm."),
    ("The budget is 5000 euros.", "It's 8000 now, not 5000."),
    ("预算是5000元。", "把预算从5000改成8000了。"),
    ("预算是5000元。", "预算由5000调整为8000。"),
    ("我的预算是5000元。", "预算调整到8000元。"),
    ("我家狗叫豆豆。", "我家狗改名叫旺财了。"),
    ("我们的例会定在周三。", "例会改到周四了。"),
    ("旅行预算定的是两万。", "旅行预算由两万调整为一万五。"),
    ("I'm vegetarian.", "I'm not vegetarian anymore."),
    ("I smoke about half a pack a day.", "I don't smoke anymore!"),
    ("我每天早上喝咖啡。", "我已经不喝咖啡了。"),
    ("我抽烟，一天半包。", "烟戒了，半年没抽了。"),
    ("The train is at 6:40.", "Sorry, I meant 7:40."),
    ("航班9点15起飞。", "说错了，是7点15。"),
    (
        "The budget for the birthday party is 6000 dollars.",
        "We raised the budget for the birthday party to 8500 dollars.",
    ),
    ("My flight to Denver leaves at 9am.", "The airline rescheduled my Denver flight to 9pm."),
]

# Look-alikes of each: past, hypothetical, reported, question, plan, another entity or thing.
STATED_LOOK_ALIKES = [
    ("Our budget is 5000 euros.", "Last year we raised the budget to 8000 euros."),
    ("Our budget is 5000 euros.", "Suppose we raised the budget to 8000 euros."),
    ("Our budget is 5000 euros.", "My boss said they raised the budget to 8000 euros."),
    ("Our budget is 5000 euros.", "Did you raise the budget to 8000 euros?"),
    ("Our budget is 5000 euros.", "We might raise the budget to 8000 euros."),
    ("Our kitchen budget is 5000 euros.", "We raised the wedding budget to 8000 euros."),
    ("My flight to Denver leaves at 9am.", "My flight to Denver used to leave at 9pm."),
    ("My flight to Denver leaves at 9am.", "Is my flight to Denver now leaving at 9pm?"),
    ("My flight to Denver leaves at 9am.", "My wife's flight to Denver now leaves at 9pm."),
    ("The budget is 5000 euros.", "He told me it's 8000 now, not 5000."),
    ("The budget is 5000 euros.", "Suppose it's 8000, not 5000."),
    ("预算是5000元。", "去年把预算从5000改成8000了。"),
    ("预算是5000元。", "如果把预算从5000改成8000的话。"),
    ("预算是5000元。", "同事说把预算从5000改成8000了。"),
    ("预算是5000元。", "把预算从5000改成8000了吗？"),
    ("预算是5000元。", "下个月可能把预算从5000改成8000。"),
    ("装修预算是5000元。", "把婚礼预算从5000改成8000了。"),
    ("预算是5000元。", "老板说预算由5000调整为8000。"),
    ("预算是5000元。", "假设预算调整到8000元。"),
    ("我家狗叫豆豆。", "邻居家的狗改名叫旺财了。"),
    ("我们的例会定在周三。", "例会要不要改到周四？"),
    ("我们的例会定在周三。", "组里在讨论要不要把例会改到周四。"),
    ("I'm vegetarian.", "My sister is not vegetarian anymore."),
    ("I'm vegetarian.", "I won't quit on my dreams."),
    ("我每天早上喝咖啡。", "同事说他已经不喝咖啡了。"),
    ("我每天早上喝咖啡。", "我已经不那么焦虑了。"),
    ("I have 3 cats.", "I like dogs, not cats."),
    # Found by the conflict benchmark: another budget, a thing only its last word shares, a liking.
    (
        "The budget for the trip to Japan is 4000 dollars.",
        "Update: the home office budget was changed to 11000 dollars.",
    ),
    ("We invited 165 guests to the party.", "We raised the budget for the birthday party to 8500 dollars."),
    ("I feel like I've chosen a good company.", "I stopped eating burgers, I don't like it anymore."),
    # Found on LoCoMo: leaving to do something is no retraction of doing it, a negated verb no correction.
    ("I do some taekwondo every Saturday.", "I'm off to do some taekwondo!"),
    ("I spend some time with my kids on weekends.", "I'm off to spend some time with them now."),
    ("I'm giving up on the novel.", "I'm not giving up."),
]


@pytest.mark.parametrize(("old", "new"), STATED_UPDATES)
def test_a_stated_change_supersedes_the_value_it_changes(make_core, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", old)
    second = core.add_message("user", new)
    assert first.id in second.superseded_ids, second.reason
    assert second.reason.startswith(("update: rule:", "delete: rule:"))
    assert core.get(first.id).valid_to is not None


@pytest.mark.parametrize(("old", "new"), STATED_LOOK_ALIKES)
def test_a_look_alike_of_a_stated_change_keeps_the_value(make_core, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    first = core.add_message("user", old)
    second = core.add_message("user", new)
    assert second.superseded_ids == [], second.reason
    assert core.get(first.id).valid_to is None


@pytest.mark.parametrize(
    ("text", "thing", "old", "new"),
    [
        ("We bumped the kitchen budget up to 8k.", "kitchen budget", None, "8k"),
        ("My car's service appointment got moved to the 8th.", "car's service appointment", None, "8th"),
        ("把预算从5000改成8000了。", "预算", "5000", "8000"),
        ("旅行预算由两万调整为一万五。", "旅行预算", "两万", "一万五"),
        ("It's 8000 now, not 5000.", None, "5000", "8000"),
        ("是24路，不是42路。", None, "42路", "24路"),
    ],
)
def test_stated_change_reads_what_changed(text: str, thing: str | None, old: str | None, new: str) -> None:
    change = stated_change(text)
    assert change is not None and (change.thing, change.old, change.new) == (thing, old, new)


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Lyon to be closer to family.",
        "I brought my kids to the park.",
        "It's not much, but I love it.",
        # "not" after a verb negates the verb: no value comes before it (LoCoMo).
        "I'm not giving up.",
        "It gives us hope and reminds us we're not alone.",
    ],
)
def test_no_stated_change_in_ordinary_sentences(text: str) -> None:
    assert stated_change(text) is None


def test_a_correction_without_a_comma_still_reads() -> None:
    change = stated_change("It's 8000 not 5000.")
    assert change is not None and (change.old, change.new) == ("5000", "8000")


def test_numbers_read_chinese_numerals_and_thousands() -> None:
    assert numbers("两万 一万五 十二万 四千五 八百") == {20000, 15000, 120000, 4500, 800}
    assert numbers("8k, $12,000") == {8000, 12000}
    assert numbers("我们一起去吧") == set()  # the 一 of 一起 is no number


@pytest.mark.parametrize(
    ("text", "thing"),
    [
        ("I'm not vegetarian anymore.", "vegetarian"),
        ("I stopped going to pottery — the studio closed.", "pottery"),
        ("我现在不吃素了。", "吃素"),
        ("腾讯视频会员我取消了。", "腾讯视频会员"),
        ("I don't know anymore.", None),
        ("我已经不那么焦虑了。", None),
        ("I'm off metformin now.", "metformin"),
        # Leaving to do something, a negated intention or ending: nothing stops holding (LoCoMo).
        ("Well, I'm off to go do some research.", None),
        ("I'm off to do some taekwondo!", None),
        ("I'm not gonna let anything or anyone stop me.", None),
        ("Tomorrow's gonna be an awesome night and I'm not gonna forget a second of it.", None),
        ("I'm not giving up.", None),
    ],
)
def test_retraction_reads_what_no_longer_holds(text: str, thing: str | None) -> None:
    assert retraction(text) == thing


@pytest.mark.parametrize(
    "text",
    [
        "Well, I'm off to go do some research.",
        "I'm not giving up.",
        "I'm not gonna let anything or anyone stop me.",
        "It gives us hope and reminds us we're not alone.",
        "I'm off to spend some time with them now.",
    ],
)
def test_chat_that_only_looks_like_a_change_is_no_fact(text: str) -> None:
    """These lines of LoCoMo were stored as facts (a retraction or a change without a value) and
    pushed the evidence of a neighbouring turn out of recall's top 10."""
    assert RuleExtractor().extract("user", text) == []


def test_a_retraction_replaces_a_plain_message_but_nothing_else_does(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    plain = core.add_message("user", "I bike to work.")
    assert plain.fact_ids == []  # the rules extract no fact from it
    other = core.add_message("user", "I bike to work on sunny days, 12 km each way.")
    assert other.superseded_ids == []
    retracted = core.add_message("user", "I don't bike to work anymore since the accident.")
    assert plain.id in retracted.superseded_ids and "retraction" in retracted.reason
