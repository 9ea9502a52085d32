from __future__ import annotations

import json

import pytest

from memory_vec import MemoryConfig, MemoryCore, MemoryNotFoundError, WriteEvent
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.conflict import ConflictAction, ConflictResolver, ExistingFact, ExtractedFact, LLMExtractor, RuleExtractor
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import ScriptedLLM


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
    assert core.backend.count(RecordFilter(include_superseded=True)) == core.backend.count(RecordFilter()) + 2


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
    facts = core.backend.scan(RecordFilter(user_id="u1", kinds=("fact",)))
    assert len(facts) == 1 and facts[0].id == a.fact_ids[0]
    assert core.backend.count(RecordFilter(kinds=("message",))) == 2


def test_transient_instruction_is_skipped_as_low_value(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    result = core.add_message("user", "Please convert this file to PDF now")
    assert result.event is WriteEvent.SKIPPED_LOW_VALUE and result.fact_ids == []
    assert core.backend.get([result.id])  # the raw message is stored


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
    assert core.remember("Remember that I prefer aisle seats").event is WriteEvent.ADDED  # old one superseded


def test_llm_extractor_bad_json_is_skipped_with_reason(make_core, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    llm = ScriptedLLM(["not json at all", json.dumps([{"fact": "budget is 5000", "subject": ""}]),
                       json.dumps([{"fact": "The user's budget is 5000", "subject": "budget", "importance": 0.9,
                                    "type": "constraint"}])])
    core = MemoryCore(MemoryConfig(user_id="u", fact_extractor="llm", score_threshold=0.0), llm=llm,
                      embedder=hash_embedder, backend=InMemoryBackend(), state_store=InMemoryStateStore())
    r1 = core.add_message("user", "my budget is 5000")
    assert r1.fact_ids == [] and any("malformed JSON" in e for e in core.last_trace.events)  # type: ignore[union-attr]
    r2 = core.add_message("user", "my budget is 5000 ok")
    assert r2.fact_ids == [] and any("without subject" in e for e in core.last_trace.events)  # type: ignore[union-attr]
    r3 = core.add_message("user", "the budget: 5000")
    assert len(r3.fact_ids) == 1 and core.get(r3.fact_ids[0]).subject == "budget"
    assert core.backend.get([r1.id, r2.id, r3.id])  # raw messages always stored


def test_llm_extractor_raising_keeps_message(make_core, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    core = MemoryCore(MemoryConfig(user_id="u", fact_extractor="llm"), llm=ScriptedLLM([TimeoutError("slow")]),
                      embedder=hash_embedder, backend=InMemoryBackend(), state_store=InMemoryStateStore())
    r = core.add_message("user", "my budget is 5000")
    assert core.backend.get([r.id]) and any("failed" in e for e in core.last_trace.events)  # type: ignore[union-attr]


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
    facts = LLMExtractor(lambda p: '```json\n[{"fact": "Likes tea", "subject": "drink", "importance": 2}]\n```').extract(
        "user", "I like tea")
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
