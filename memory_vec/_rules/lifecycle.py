"""Lifecycle decisions: expiry, caps, forgetting, consolidation. Pure.

Each function takes records and a policy and returns what to do; the core's
``maintain()`` applies the plan through the backend and reports it in the
trace. One decay model is used everywhere: :func:`memory_vec._rules.ranking.decay`
with ``decay_half_life_days`` and the importance floor, so a memory that ranks
low for recall is the same one that is forgotten first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_vec._model.records import MemoryRecord
from memory_vec._rules.ranking import decay, dedupe_key

__all__ = ["LifecyclePlan", "LifecyclePolicy", "memory_value", "plan_consolidation", "plan_lifecycle"]

_DAY = 86400.0


@dataclass(frozen=True)
class LifecyclePolicy:
    half_life_days: float | None = None
    importance_floor: float = 0.8
    ttl_days_by_kind: dict[str, float] = field(default_factory=dict)
    max_per_user: int | None = None
    max_per_session: int | None = None
    forget_below: float | None = None  # decayed value under which a record is archived
    grace_days: float = 30.0  # archived records are removed after this


@dataclass
class LifecyclePlan:
    expire: list[str] = field(default_factory=list)  # delete now (TTL passed / archived grace over)
    archive: list[str] = field(default_factory=list)  # archive now, delete after the grace period
    evict: list[str] = field(default_factory=list)  # over a cap: delete now
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def deletions(self) -> list[str]:
        return [*self.expire, *self.evict]


def memory_value(record: MemoryRecord, *, now: float, policy: LifecyclePolicy) -> float:
    """Importance decayed by age since the memory was last written or recalled,
    reinforced by how often it was recalled; in [0, 1]."""
    anchor = max(record.timestamp, record.last_recalled_at or 0.0)
    d = decay(
        now - anchor,
        half_life_days=policy.half_life_days,
        importance=record.importance,
        importance_floor=policy.importance_floor,
    )
    reinforcement = min(0.3, 0.05 * record.recall_count)
    return min(1.0, record.importance * d + reinforcement)


def plan_lifecycle(records: Sequence[MemoryRecord], *, now: float, policy: LifecyclePolicy) -> LifecyclePlan:
    """Expiry, archiving and cap eviction for one user's records. Pinned
    records are never archived or evicted (an explicit expire_at still holds).
    Superseded records are history: only a TTL or expire_at removes them;
    they are neither archived nor counted against a cap (so a cap never
    evicts a current memory to keep an old value's history)."""
    plan = LifecyclePlan()
    alive = _expire(records, plan, now=now, policy=policy)
    if policy.forget_below is not None and policy.half_life_days is not None:
        for r in list(alive):
            if not r.pinned and memory_value(r, now=now, policy=policy) < policy.forget_below:
                plan.archive.append(r.id)
                plan.reasons[r.id] = f"decayed value under {policy.forget_below}"
                alive.remove(r)
    if policy.max_per_session is not None:
        by_session: dict[str, list[MemoryRecord]] = {}
        for r in alive:
            by_session.setdefault(r.session_id, []).append(r)
        for group in by_session.values():
            _evict_over(group, policy.max_per_session, "per-session", plan, now=now, policy=policy)
    if policy.max_per_user is not None:
        _evict_over(alive, policy.max_per_user, "per-user", plan, now=now, policy=policy)
    return plan


def _expire(
    records: Sequence[MemoryRecord], plan: LifecyclePlan, *, now: float, policy: LifecyclePolicy
) -> list[MemoryRecord]:
    """Plan the records past their expire_at or their kind's TTL; return the current,
    unarchived rest (what archiving and the caps consider)."""
    alive: list[MemoryRecord] = []
    for r in records:
        ttl = policy.ttl_days_by_kind.get(r.kind)
        if r.expire_at is not None and r.expire_at <= now:
            plan.expire.append(r.id)
            plan.reasons[r.id] = "archived, grace period over" if r.archived else "expire_at passed"
        elif ttl is not None and not r.pinned and now - r.timestamp > ttl * _DAY:
            plan.expire.append(r.id)
            plan.reasons[r.id] = f"older than the {r.kind} TTL of {ttl:g} days"
        elif not r.archived and r.valid_to is None:
            alive.append(r)
    return alive


def _evict_over(
    group: list[MemoryRecord], cap: int, label: str, plan: LifecyclePlan, *, now: float, policy: LifecyclePolicy
) -> None:
    current = [r for r in group if r.id not in plan.evict]
    excess = len(current) - cap
    if excess <= 0:
        return
    # Lowest value first, then oldest; never pinned ones.
    candidates = sorted(
        (r for r in current if not r.pinned), key=lambda r: (memory_value(r, now=now, policy=policy), r.timestamp)
    )
    for r in candidates[:excess]:
        plan.evict.append(r.id)
        plan.reasons[r.id] = f"over the {label} cap of {cap}"


@dataclass
class Merge:
    survivor: str
    merged: list[str]
    source_ids: list[str]


def plan_consolidation(records: Sequence[MemoryRecord]) -> list[Merge]:
    """Group a user's current near-duplicate facts (same text up to case,
    spacing and punctuation) into one survivor — the pinned, then the most
    important, then the newest — that keeps everybody's sources."""
    groups: dict[str, list[MemoryRecord]] = {}
    for r in records:
        if r.kind == "fact" and r.valid_to is None and not r.archived:
            groups.setdefault(dedupe_key(r.text), []).append(r)
    merges = []
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda r: (r.pinned, r.importance, r.timestamp), reverse=True)
        survivor, rest = group[0], group[1:]
        sources = list(dict.fromkeys([*survivor.source_ids, *(s for r in rest for s in (*r.source_ids, r.id))]))
        merges.append(Merge(survivor.id, [r.id for r in rest], sources))
    return merges
