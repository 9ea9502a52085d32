"""Upkeep of stored memories: TTLs, caps, forgetting, consolidation (all
explicit, through ``maintain()``), and recall reinforcement written in
batches off the turn's path. The plans are pure functions in
:mod:`memory_vec._rules.lifecycle`; this module applies them."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_vec._model import validate as v
from memory_vec._model.records import MEMORY_KINDS
from memory_vec._model.scope import Scope
from memory_vec._pipelines.engine import Engine
from memory_vec._rules.lifecycle import LifecyclePolicy, plan_consolidation, plan_lifecycle
from memory_vec.backends.base import RecordFilter

__all__ = ["MaintenanceReport", "Upkeep"]

_REINFORCE_BATCH = 32


@dataclass
class MaintenanceReport:
    """What ``maintain()`` did; every id is also in the trace with its reason."""

    user_id: str
    expired: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    merged: dict[str, list[str]] = field(default_factory=dict)  # survivor -> merged ids
    reinforced: int = 0
    restored: int = 0  # messages found only in the working state, re-stored with their facts


class Upkeep:
    """TTL, caps, forgetting, consolidation and recall reinforcement for one engine."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self._reinforce: dict[str, tuple[int, float]] = {}
        self._reinforce_lock = threading.Lock()

    def _lifecycle_policy(self) -> LifecyclePolicy:
        c = self.e.config
        return LifecyclePolicy(
            half_life_days=c.decay_half_life_days,
            ttl_days_by_kind=dict(c.ttl_days_by_kind),
            max_per_user=c.max_memories_per_user,
            max_per_session=c.max_memories_per_session,
            forget_below=c.forget_below,
            grace_days=c.forget_grace_days,
        )

    def note_recalled(self, ids: Sequence[str]) -> None:
        """Remember which memories were served. Written in batches (with a
        later write, on maintain() or close()) to keep the chat turn fast."""
        if not self.e.config.reinforce_on_recall:
            return
        now = time.time()
        with self._reinforce_lock:
            for memory_id in ids:
                count, _ = self._reinforce.get(memory_id, (0, now))
                self._reinforce[memory_id] = (count + 1, now)
            due = len(self._reinforce) >= _REINFORCE_BATCH
        if due:
            self.flush_reinforcement()

    def flush_reinforcement(self) -> int:
        """Hand the counts to the writer (merged into the rows as stored,
        see ``RecordWriter.count_recalls``); returns how many memories."""
        with self._reinforce_lock:
            pending, self._reinforce = self._reinforce, {}
        if pending:
            self.e.writer.count_recalls(pending)
        return len(pending)

    def maintain(
        self, *, user_id: str | None = None, now: float | None = None, lifecycle: bool = True, consolidate: bool = True
    ) -> MaintenanceReport:
        """Apply TTLs, caps, forgetting and consolidation to one user's memories.

        Explicit: nothing of this runs on its own. Superseded records are
        history and are left alone unless a TTL or expire_at says otherwise.
        """
        user = self.e.scope(user_id).user_id
        checked = v.check_timestamp(now, field="now")
        now = time.time() if checked is None else checked
        trace = self.e.start_trace("maintain", Scope(user, self.e.config.session_id))
        report = MaintenanceReport(user, reinforced=self.flush_reinforcement())
        self.e.writer.flush()
        where = RecordFilter(user_id=user, kinds=MEMORY_KINDS, include_superseded=True, include_archived=True)
        records = [r for r in self.e.backend.scan(where) if r.user_id == user]
        current = [r for r in records if r.valid_to is None]
        policy = self._lifecycle_policy()
        plan = plan_lifecycle(records if lifecycle else [], now=now, policy=policy)  # evicts current ones only
        doomed = plan.deletions
        by_id = {r.id: r for r in records}
        if doomed:
            self.e.drop_from_state([by_id[i] for i in doomed])
            self.e.writer.delete(user, ids=doomed)
        if plan.archive:
            self.e.writer.update(
                [by_id[i].copy(archived=True, expire_at=now + policy.grace_days * 86400.0) for i in plan.archive]
            )
        for record_id in [*doomed, *plan.archive]:
            trace.event(f"lifecycle {record_id}: {plan.reasons.get(record_id, '')}")
        report.expired, report.archived, report.evicted = plan.expire, plan.archive, plan.evict
        if consolidate:
            alive = [r for r in current if r.id not in doomed and r.id not in plan.archive]
            for merge in plan_consolidation(alive):
                survivor = by_id[merge.survivor]
                changes = [survivor.copy(source_ids=merge.source_ids)]
                changes += [by_id[i].copy(valid_to=now, superseded_by=survivor.id) for i in merge.merged]
                self.e.writer.update(changes)
                report.merged[survivor.id] = merge.merged
                trace.event(f"consolidated {merge.merged} into {survivor.id}")
        self.e.writer.flush()
        trace.emit()
        return report

    def compact(self, *, user_id: str | None = None) -> dict[str, list[str]]:
        """Merge a user's near-duplicate facts into one each (provenance kept)."""
        return self.maintain(user_id=user_id, lifecycle=False).merged
