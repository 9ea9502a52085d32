from __future__ import annotations

import time

from memory_vec._model.records import MemoryRecord
from memory_vec._rules.lifecycle import LifecyclePolicy, memory_value, plan_consolidation, plan_lifecycle
from memory_vec.backends import RecordFilter
from memory_vec.testing import parts

DAY = 86400.0
NOW = 1_700_000_000.0


def rec(i: str, *, age_days: float = 0, importance: float = 0.5, **kw) -> MemoryRecord:  # type: ignore[no-untyped-def]
    kw.setdefault("session_id", "s")
    return MemoryRecord(
        id=i,
        text=kw.pop("text", f"text {i}"),
        role="user",
        user_id="u",
        timestamp=NOW - age_days * DAY,
        importance=importance,
        **kw,
    )


def test_value_uses_the_ranking_decay_with_importance_floor_and_reinforcement() -> None:
    p = LifecyclePolicy(half_life_days=10)
    assert memory_value(rec("a", age_days=10), now=NOW, policy=p) == 0.25  # 0.5 importance x 0.5 decay
    important = memory_value(rec("b", age_days=100, importance=0.9), now=NOW, policy=p)
    assert important >= 0.9 * 0.9 - 1e-9  # floor: does not decay away
    recalled = rec("c", age_days=10, recall_count=2, last_recalled_at=NOW)
    assert memory_value(recalled, now=NOW, policy=p) > memory_value(rec("c", age_days=10), now=NOW, policy=p)


def test_ttl_expire_at_and_grace() -> None:
    p = LifecyclePolicy(ttl_days_by_kind={"message": 30})
    plan = plan_lifecycle(
        [
            rec("old", age_days=31),
            rec("new", age_days=1),
            rec("pinned", age_days=99, pinned=True),
            rec("exp", expire_at=NOW - 1),
            rec("arch", archived=True, expire_at=NOW - 1),
            rec("arch-waiting", archived=True, expire_at=NOW + DAY),
        ],
        now=NOW,
        policy=p,
    )
    assert sorted(plan.expire) == ["arch", "exp", "old"] and plan.evict == [] and plan.archive == []


def test_caps_evict_lowest_value_oldest_never_pinned() -> None:
    p = LifecyclePolicy(max_per_user=2)
    records = [
        rec("pinned-low", importance=0.1, pinned=True),
        rec("low-old", importance=0.2, age_days=5),
        rec("low-new", importance=0.2),
        rec("high", importance=0.9),
    ]
    plan = plan_lifecycle(records, now=NOW, policy=p)
    assert plan.evict == ["low-old", "low-new"]
    per_session = plan_lifecycle(
        [rec("a", session_id="x"), rec("b", session_id="x", importance=0.9), rec("c", session_id="y")],
        now=NOW,
        policy=LifecyclePolicy(max_per_session=1),
    )
    assert per_session.evict == ["a"]


def test_forgetting_archives_decayed_memories() -> None:
    p = LifecyclePolicy(half_life_days=7, forget_below=0.1)
    plan = plan_lifecycle(
        [rec("stale", age_days=60), rec("fresh"), rec("stale-pinned", age_days=60, pinned=True)], now=NOW, policy=p
    )
    assert plan.archive == ["stale"]


def test_superseded_history_counts_against_no_cap_and_is_not_archived() -> None:
    # Six current memories at a cap of six, plus six old values: nothing is over the cap.
    current = [rec(f"c{i}", importance=0.5 + i / 100) for i in range(6)]
    history = [rec(f"h{i}", valid_to=NOW - 1, superseded_by="c0", age_days=60) for i in range(6)]
    assert plan_lifecycle([*current, *history], now=NOW, policy=LifecyclePolicy(max_per_user=6)).evict == []
    per_session = plan_lifecycle([*current, *history], now=NOW, policy=LifecyclePolicy(max_per_session=6))
    assert per_session.evict == []
    over = plan_lifecycle([*current, *history], now=NOW, policy=LifecyclePolicy(max_per_user=5))
    assert over.evict == ["c0"]  # one over: the lowest current one
    decayed = plan_lifecycle(history, now=NOW, policy=LifecyclePolicy(half_life_days=7, forget_below=0.1))
    assert decayed.archive == []  # history is left alone
    ttl = plan_lifecycle(history, now=NOW, policy=LifecyclePolicy(ttl_days_by_kind={"message": 30}))
    assert sorted(ttl.expire) == [f"h{i}" for i in range(6)]  # a TTL still removes it


def test_consolidation_keeps_one_survivor_and_provenance() -> None:
    a = rec("a", text="I prefer window seats.", kind="fact", source_ids=["m1"], importance=0.6)
    b = rec("b", text="i prefer  WINDOW seats", kind="fact", source_ids=["m2"], importance=0.9)
    c = rec("c", text="I like tea", kind="fact")
    merges = plan_consolidation([a, b, c])
    assert len(merges) == 1 and merges[0].survivor == "b" and merges[0].merged == ["a"]
    assert set(merges[0].source_ids) == {"m1", "m2", "a"}


def test_maintain_applies_the_plan(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(ttl_days_by_kind={"message": 1}, fact_extractor="none")
    old = core.add_message("user", "an old note about lamps", timestamp=time.time() - 3 * DAY)
    new = core.add_message("user", "a new note about lamps")
    kept = core.remember("Remember I am allergic to cats")
    report = core.maintain()
    assert report.expired == [old.id]
    assert parts(core).backend.get([old.id]) == [] and parts(core).backend.get([new.id]) and core.get(kept.id)
    assert any("TTL" in e for e in core.last_trace.events)  # type: ignore[union-attr]


def test_compact_merges_duplicates_via_supersede(make_core) -> None:  # type: ignore[no-untyped-def]
    from memory_vec._model.records import MemoryRecord as R

    core = make_core()
    vec = parts(core).embedder.embed_documents(["I prefer window seats"] * 2)
    parts(core).backend.upsert(
        [
            R(
                id="f1",
                text="I prefer window seats",
                role="user",
                user_id="u1",
                session_id="s1",
                timestamp=1.0,
                kind="fact",
                source_ids=["m1"],
            ),
            R(
                id="f2",
                text="I prefer window seats!",
                role="user",
                user_id="u1",
                session_id="s1",
                timestamp=2.0,
                kind="fact",
                source_ids=["m2"],
            ),
        ],
        vec,
    )
    merged = core.compact()
    assert merged == {"f2": ["f1"]}
    assert core.get("f1").superseded_by == "f2" and set(core.get("f2").source_ids) == {"m1", "m2", "f1"}
    assert parts(core).backend.count(RecordFilter(kinds=("fact",))) == 1


def test_recall_reinforces_memories_in_batches(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    r = core.add_message("user", "the gate code is 4711", session_id="old")
    core.build_context("gate code", session_id="new")
    core.close()
    assert core.get(r.id).recall_count == 1 and core.get(r.id).last_recalled_at is not None


def test_expired_memories_are_not_recalled_before_maintain(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core()
    gone = core.remember("Remember the temporary door code is 1234", expire_at=time.time() - 1)
    assert gone.id not in {h.id for h in core.recall("door code", k=10)}
