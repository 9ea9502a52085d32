"""Facts, conflicts and single-memory management for :class:`MemoryCore`.

Kept apart from ``core.py`` so each file stays readable. The decisions are
in :mod:`memory_vec.conflict`; this mixin fetches neighbours, applies the
decisions to records, and exposes remember / get / update / delete / pin /
history / restore / export / import.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _validate as v
from .backends import RecordFilter
from .conflict import ConflictAction, ExistingFact, ExtractedFact, patch_summary
from .errors import BackendError, InvalidInputError, MemoryNotFoundError
from .facts import extract_values, subject_key
from .records import MemoryRecord, WriteEvent, WriteResult
from .state import StateMessage, WorkingState
from .trace import TurnTrace

if TYPE_CHECKING:
    from .core import MemoryCore

__all__ = ["MemoryManagement", "FactOutcome"]

EXPORT_FORMAT = "memory-vec/1"
_NEIGHBOURS = 5
_REINFORCE_BATCH = 32


@dataclass
class FactOutcome:
    """What fact extraction and conflict checks did for one batch."""

    fact_records: list[MemoryRecord] = field(default_factory=list)
    fact_vectors: list[np.ndarray] = field(default_factory=list)
    updates: list[MemoryRecord] = field(default_factory=list)
    events: dict[str, WriteEvent] = field(default_factory=dict)  # message id -> event
    fact_ids: dict[str, list[str]] = field(default_factory=dict)
    superseded: dict[str, list[str]] = field(default_factory=dict)
    duplicate_of: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


class MemoryManagement:
    """Mixin: every method runs on a :class:`MemoryCore`."""

    # ------------------------------------------------------------- extraction
    def _extract_facts(self: MemoryCore, role: str, content: str, trace: TurnTrace) -> list[ExtractedFact]:
        if self.extractor is None:
            if role != "user":
                return []
            # No extractor: the user message itself is checked for conflicts.
            return [ExtractedFact(content, subject_key(content), self._importance(role, content))]
        try:
            facts = self.extractor.extract(role, content)
        except Exception as exc:  # the raw message is stored regardless
            trace.event(f"fact extraction skipped: {exc}")
            return []
        error = getattr(self.extractor, "last_error", "")
        if error:
            trace.event(f"fact extraction: {error}")
        return facts

    def _nearest_current(
        self: MemoryCore, user: str, vector: np.ndarray, kinds: tuple[str, ...], local: Sequence[tuple[MemoryRecord, np.ndarray]]
    ) -> list[ExistingFact]:
        where = RecordFilter(user_id=user, kinds=kinds, roles=("user",) if kinds == ("message",) else None)
        found = {h.record.id: h for h in self.backend.query(vector, k=_NEIGHBOURS, where=where)}
        for h in self.writer.pending_matches(vector, where):
            found[h.record.id] = h
        records = {r.id: r for r in self.writer.overlay([h.record for h in found.values()]) if where.matches(r)}
        out = [
            ExistingFact(r.id, r.text, r.subject, found[r.id].similarity, tuple(r.source_ids))
            for r in records.values()
        ]
        for record, vec in local:  # facts decided earlier in this batch
            if where.matches(record):
                out.append(ExistingFact(record.id, record.text, record.subject, float(vec @ vector),
                                        tuple(record.source_ids)))
        out.sort(key=lambda f: -f.similarity)
        return out[:_NEIGHBOURS]

    def _resolve_facts(
        self: MemoryCore,
        user: str,
        session: str,
        messages: Sequence[MemoryRecord],
        message_vectors: np.ndarray,
        extracted: Sequence[list[ExtractedFact]],
        fact_vectors: np.ndarray,
        trace: TurnTrace,
    ) -> FactOutcome:
        out = FactOutcome()
        vec_iter = iter(fact_vectors)
        kinds = ("fact",) if self.extractor is not None else ("message",)
        local: list[tuple[MemoryRecord, np.ndarray]] = []
        for message, vector, facts in zip(messages, message_vectors, extracted):
            out.events[message.id] = WriteEvent.ADDED
            if facts and all(f.transient for f in facts) and self.config.skip_transient:
                out.events[message.id] = WriteEvent.SKIPPED_LOW_VALUE
                out.reasons[message.id] = "transient instruction: not kept as a fact"
                trace.event(f"value filter skipped a transient instruction in {message.id}")
            for fact in facts:
                if fact.transient and self.config.skip_transient:
                    continue
                if self.extractor is None:
                    fact_vector = vector
                else:
                    fact_vector = next(vec_iter)
                try:
                    neighbours = self._nearest_current(user, fact_vector, kinds, local)
                except BackendError as exc:
                    # The write must not fail because the check cannot run:
                    # store the fact; a later maintain()/update can reconcile.
                    neighbours = []
                    trace.degraded = True
                    trace.event(f"conflict check skipped, backend unavailable: {exc}")
                # A fact never overwrites another fact of its own message
                # ("I don't work at X anymore; I joined Y.").
                neighbours = [n for n in neighbours if n.id != message.id and message.id not in n.source_ids]
                decision = self.resolver.decide(fact, neighbours, subject_only=self.extractor is None)
                trace.event(f"conflict: {decision.action.value} ({decision.reason})")
                if decision.action is ConflictAction.NOOP:
                    if self.extractor is not None:  # a duplicate fact is not stored twice
                        out.events[message.id] = WriteEvent.SKIPPED_DUPLICATE
                        out.duplicate_of[message.id] = decision.duplicate_of or ""
                    continue
                if self.extractor is None:
                    new_record = message
                    message.subject = fact.subject
                else:
                    new_record = MemoryRecord(
                        id=uuid.uuid4().hex, text=fact.text, role=message.role, user_id=user, session_id=session,
                        timestamp=message.timestamp, kind="fact", seq=message.seq, agent_id=message.agent_id,
                        importance=fact.importance, metadata={"type": fact.type, **message.metadata},
                        subject=fact.subject, source_ids=[message.id],
                    )
                    out.fact_records.append(new_record)
                    out.fact_vectors.append(fact_vector)
                    out.fact_ids.setdefault(message.id, []).append(new_record.id)
                    local.append((new_record, fact_vector))
                if decision.action in (ConflictAction.UPDATE, ConflictAction.DELETE) and decision.superseded:
                    superseded = self._supersede(decision.superseded, by=new_record, out=out, local=local)
                    out.superseded.setdefault(message.id, []).extend(superseded)
                    out.events[message.id] = WriteEvent.UPDATED
                    self._patch_summary(user, session, fact, superseded)
        return out

    def _supersede(
        self: MemoryCore, ids: Sequence[str], *, by: MemoryRecord, out: FactOutcome,
        local: list[tuple[MemoryRecord, np.ndarray]],
    ) -> list[str]:
        """Mark records (and their source messages) as no longer current."""
        targets = {r.id: r for r in self.writer.overlay(self.backend.get(list(ids)))}
        for record, _ in local:
            if record.id in ids:
                targets[record.id] = record
        source_ids = [s for r in targets.values() for s in r.source_ids if s not in targets]
        if source_ids:
            for r in self.writer.overlay(self.backend.get(source_ids)):
                targets.setdefault(r.id, r)
        for echo in self._echoes(list(targets.values()), new_text=by.text):
            targets.setdefault(echo.id, echo)
        done = []
        for record in targets.values():
            if record.user_id != by.user_id or record.valid_to is not None:
                continue  # never touch another user's record
            record.valid_to = by.timestamp
            record.superseded_by = by.id
            out.updates.append(record)
            done.append(record.id)
        return done

    def _echoes(self: MemoryCore, superseded: Sequence[MemoryRecord], *, new_text: str) -> list[MemoryRecord]:
        """Replies that repeat a superseded value ("Got it, a budget of 5000").

        The reply right after a superseded user message, when it carries one
        of the old values that the new statement does not, would otherwise
        keep serving the old value.
        """
        new_values = extract_values(new_text)
        echoes = []
        for old in superseded:
            if old.kind != "message" or old.role != "user":
                continue
            stale = extract_values(old.text) - new_values
            if not stale:
                continue
            where = RecordFilter(user_id=old.user_id, session_id=old.session_id, kinds=("message",),
                                 roles=("assistant",), seq_min=old.seq + 1, seq_max=old.seq + 1)
            for reply in self.writer.overlay(self.backend.scan(where)):
                if extract_values(reply.text) & stale:
                    echoes.append(reply)
        return echoes

    def _patch_summary(self: MemoryCore, user: str, session: str, fact: ExtractedFact, superseded: list[str]) -> None:
        state = self.state.load(user, session)
        if not state.summary:
            return
        old_texts = [r.text for r in self.backend.get(superseded)]
        patched = patch_summary(state.summary, subject=fact.subject, old_texts=old_texts, new_text=fact.text)
        tokens = self.counter.count(patched)
        if patched != state.summary and tokens <= self.config.summary_max_tokens:
            self.state.set_summary(user, session, patched, tokens)

    # ------------------------------------------------------------- single memories
    def _own(self: MemoryCore, memory_id: str, user_id: str | None) -> MemoryRecord:
        v.check_id(memory_id, "memory_id")
        user = self.config.user_id if user_id is None else v.check_id(user_id, "user_id")
        found = self.writer.overlay(self.backend.get([memory_id]))
        found += [r for r in self.writer.pending_records(RecordFilter(ids=(memory_id,), include_superseded=True,
                                                                      include_archived=True))
                  if not found]
        if not found or found[0].user_id != user:
            # Another user's memory is reported exactly like a missing one.
            raise MemoryNotFoundError(f"no memory {memory_id!r} for user {user!r}")
        return found[0]

    def remember(
        self: MemoryCore, text: str, *, importance: float = 1.0, metadata: dict[str, Any] | None = None,
        subject: str | None = None, session_id: str | None = None, user_id: str | None = None,
        visibility: str = "private", expire_at: Any = None,
    ) -> WriteResult:
        """Store an explicit memory ("remember that I prefer window seats") as a pinned fact.

        It goes through the conflict check like any fact: an older fact on
        the same subject is superseded; an exact duplicate is a no-op.
        """
        user, session = self._scope(user_id, session_id)
        text = self._redact(v.check_content(text, max_bytes=self.config.max_content_bytes))
        meta = v.check_metadata(metadata, max_bytes=self.config.max_metadata_bytes)
        if visibility not in ("private", "agent", "global"):
            raise InvalidInputError(f"visibility must be private, agent or global; got {visibility!r}")
        if not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
            raise InvalidInputError(f"importance must be a number in [0, 1], got {importance!r}")
        expires = v.check_timestamp(expire_at, field="expire_at")
        trace = self._start("remember", user, session)
        vector = self._embed_documents([text])[0]
        fact = ExtractedFact(text, subject or subject_key(text), float(importance), "profile")
        neighbours = self._nearest_current(user, vector, ("fact",), [])
        decision = self.resolver.decide(fact, neighbours)
        if decision.action is ConflictAction.NOOP and decision.duplicate_of:
            return WriteResult(WriteEvent.SKIPPED_DUPLICATE, decision.duplicate_of, duplicate_of=decision.duplicate_of,
                               reason=decision.reason)
        record = MemoryRecord(
            id=uuid.uuid4().hex, text=text, role="user", user_id=user, session_id=session, timestamp=time.time(),
            kind="fact", agent_id=self.config.agent_id, importance=float(importance), metadata=meta,
            subject=fact.subject, pinned=True, visibility=visibility, expire_at=expires,
        )
        out = FactOutcome()
        superseded: list[str] = []
        if decision.action in (ConflictAction.UPDATE, ConflictAction.DELETE) and decision.superseded:
            superseded = self._supersede(decision.superseded, by=record, out=out, local=[])
        durable = self.writer.write([record], vector[None, :])
        if out.updates:
            self.writer.update(out.updates)
        self._after_write(user, [record])
        trace.emit()
        event = WriteEvent.UPDATED if superseded else WriteEvent.ADDED
        return WriteResult(event, record.id, superseded_ids=superseded, pending=not durable, reason=decision.reason)

    def get(self: MemoryCore, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """One memory of the caller's user (current or not); MemoryNotFoundError otherwise."""
        return self._own(memory_id, user_id)

    def update(self: MemoryCore, memory_id: str, text: str, *, user_id: str | None = None) -> WriteResult:
        """Replace a memory's text: the old version is superseded, kept as history."""
        old = self._own(memory_id, user_id)
        text = self._redact(v.check_content(text, max_bytes=self.config.max_content_bytes))
        vector = self._embed_documents([text])[0]
        new = old.copy(id=uuid.uuid4().hex, text=text, timestamp=time.time(), valid_to=None, superseded_by=None,
                       source_ids=list(old.source_ids), metadata=dict(old.metadata))
        self.writer.write([new], vector[None, :])
        self.writer.update([old.copy(valid_to=new.timestamp, superseded_by=new.id)])
        self._after_write(old.user_id, [new])
        return WriteResult(WriteEvent.UPDATED, new.id, superseded_ids=[old.id])

    def delete(self: MemoryCore, memory_id: str, *, user_id: str | None = None) -> bool:
        """Physically delete one memory of the caller's user."""
        record = self._own(memory_id, user_id)
        self.writer.forget([record.id])
        self.backend.delete(ids=[record.id])
        self._after_delete(record.user_id)
        return True

    def pin(self: MemoryCore, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """Pinned memories are never evicted, archived or decayed away."""
        record = self._own(memory_id, user_id).copy(pinned=True)
        self.writer.update([record])
        return record

    def unpin(self: MemoryCore, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        record = self._own(memory_id, user_id).copy(pinned=False)
        self.writer.update([record])
        return record

    def history(self: MemoryCore, memory_id: str, *, user_id: str | None = None) -> list[MemoryRecord]:
        """The supersede chain through this memory, oldest first."""
        start = self._own(memory_id, user_id)
        where = RecordFilter(user_id=start.user_id, kinds=(start.kind,), include_superseded=True, include_archived=True)
        by_id = {r.id: r for r in self.writer.overlay(self.backend.scan(where))}
        by_id.update({r.id: r for r in self.writer.pending_records(where)})
        predecessors = {r.superseded_by: r for r in by_id.values() if r.superseded_by}
        chain = [start]
        current = start
        while current.id in predecessors and predecessors[current.id] not in chain:
            current = predecessors[current.id]
            chain.insert(0, current)
        current = start
        while current.superseded_by and current.superseded_by in by_id and by_id[current.superseded_by] not in chain:
            current = by_id[current.superseded_by]
            chain.append(current)
        return chain

    def restore(self: MemoryCore, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """Undo a supersede: this memory is current again, its successor is not."""
        old = self._own(memory_id, user_id)
        if old.valid_to is None:
            return old
        changes: list[MemoryRecord] = [old.copy(valid_to=None, superseded_by=None)]
        if old.superseded_by:
            for successor in self.writer.overlay(self.backend.get([old.superseded_by])):
                if successor.user_id == old.user_id and successor.valid_to is None:
                    now = time.time()
                    changes.append(successor.copy(valid_to=now, superseded_by=old.id))
                    # the message that stated the newer value stops being served too
                    for src in self.writer.overlay(self.backend.get(list(successor.source_ids))):
                        if src.user_id == old.user_id and src.valid_to is None:
                            changes.append(src.copy(valid_to=now, superseded_by=old.id))
        sources = self.writer.overlay(self.backend.get(list(old.source_ids)))
        changes += [s.copy(valid_to=None, superseded_by=None) for s in sources if s.superseded_by == old.superseded_by]
        self.writer.update(changes)
        return changes[0]

    # ------------------------------------------------------------- export / import
    def export_memories(self: MemoryCore, *, user_id: str | None = None) -> dict[str, Any]:
        """Everything of one user as a JSON-serializable dict (records with their
        history and vectors, working state of every session)."""
        user = self.config.user_id if user_id is None else v.check_id(user_id, "user_id")
        self.writer.flush()
        where = RecordFilter(user_id=user, include_superseded=True, include_archived=True)
        records = self.backend.scan(where)
        sessions = {s: self.state.load(user, s) for s in self.state.sessions(user)}
        return {
            "format": EXPORT_FORMAT,
            "user_id": user,
            "embedding_model": self.embedder.model_id,
            "records": [_record_to_dict(r) for r in records],
            "sessions": {s: _state_to_dict(st) for s, st in sessions.items()},
        }

    def import_memories(self: MemoryCore, data: dict[str, Any]) -> int:
        """Restore an export exactly (same ids, texts, times, validity, working state)."""
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise InvalidInputError(f"not a memory-vec export (expected format {EXPORT_FORMAT!r})")
        user = v.check_id(data.get("user_id"), "user_id")
        try:
            records = [_record_from_dict(d) for d in data["records"]]
            states = [_state_from_dict(user, s, d) for s, d in data["sessions"].items()]
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"malformed memory-vec export: {exc}") from exc
        for r in records:
            if r.user_id != user:
                raise InvalidInputError(f"record {r.id!r} belongs to {r.user_id!r}, not {user!r}")
        if records:
            vectors = self.embedder.embed_documents([r.text for r in records])
            for i in range(0, len(records), 256):
                self.writer.write(records[i:i + 256], vectors[i:i + 256])
            self.writer.flush()
        for state in states:
            self.state.replace(state)
        self._after_write(user, records)
        return len(records)

    async def aremember(self: MemoryCore, text: str, **kwargs: Any) -> WriteResult:
        return await asyncio.to_thread(self.remember, text, **kwargs)

    async def aexport_memories(self: MemoryCore, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.export_memories, **kwargs)

    async def aimport_memories(self: MemoryCore, data: dict[str, Any]) -> int:
        return await asyncio.to_thread(self.import_memories, data)


def _record_to_dict(r: MemoryRecord) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(r)


def _record_from_dict(d: dict[str, Any]) -> MemoryRecord:
    return MemoryRecord(**d)


def _state_to_dict(state: WorkingState) -> dict[str, Any]:
    from dataclasses import asdict

    return {k: val for k, val in asdict(state).items() if k not in ("user_id", "session_id")}


def _state_from_dict(user: str, session: str, d: dict[str, Any]) -> WorkingState:
    messages = [StateMessage(**m) for m in d.get("messages", [])]
    return WorkingState(user, session, d.get("summary", ""), int(d.get("summary_tokens", 0)), messages,
                        int(d.get("next_seq", 1)), int(d.get("folded_through", 0)), float(d.get("updated_at", 0.0)))


@dataclass
class MaintenanceReport:
    """What ``maintain()`` did; every id is also in the trace with its reason."""

    user_id: str
    expired: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    merged: dict[str, list[str]] = field(default_factory=dict)  # survivor -> merged ids
    reinforced: int = 0


class MemoryLifecycle:
    """Mixin: TTL, caps, forgetting, consolidation and recall reinforcement."""

    def _lifecycle_policy(self: MemoryCore) -> Any:
        from .lifecycle import LifecyclePolicy

        c = self.config
        return LifecyclePolicy(
            half_life_days=c.decay_half_life_days, ttl_days_by_kind=dict(c.ttl_days_by_kind),
            max_per_user=c.max_memories_per_user, max_per_session=c.max_memories_per_session,
            forget_below=c.forget_below, grace_days=c.forget_grace_days,
        )

    def _note_recalled(self: MemoryCore, ids: Sequence[str]) -> None:
        """Remember which memories were served. Written in batches (with a
        later write, on maintain() or close()) to keep the chat turn fast."""
        if not self.config.reinforce_on_recall:
            return
        now = time.time()
        with self._reinforce_lock:
            for memory_id in ids:
                count, _ = self._reinforce.get(memory_id, (0, now))
                self._reinforce[memory_id] = (count + 1, now)
            due = len(self._reinforce) >= _REINFORCE_BATCH
        if due:
            self._flush_reinforcement()

    def _flush_reinforcement(self: MemoryCore) -> int:
        with self._reinforce_lock:
            pending, self._reinforce = self._reinforce, {}
        if not pending:
            return 0
        records = self.writer.overlay(self.backend.get(list(pending)))
        updated = [r.copy(recall_count=r.recall_count + pending[r.id][0], last_recalled_at=pending[r.id][1])
                   for r in records]
        if updated:
            self.writer.update(updated)
        return len(updated)

    def maintain(self: MemoryCore, *, user_id: str | None = None, now: float | None = None,
                 lifecycle: bool = True, consolidate: bool = True) -> MaintenanceReport:
        """Apply TTLs, caps, forgetting and consolidation to one user's memories.

        Explicit: nothing of this runs on its own. Superseded records are
        history and are left alone unless a TTL or expire_at says otherwise.
        """
        from .lifecycle import plan_consolidation, plan_lifecycle

        user = self.config.user_id if user_id is None else v.check_id(user_id, "user_id")
        now = time.time() if now is None else float(now)
        trace = self._start("maintain", user, self.config.session_id)
        report = MaintenanceReport(user, reinforced=self._flush_reinforcement())
        self.writer.flush()
        where = RecordFilter(user_id=user, include_superseded=True, include_archived=True)
        records = [r for r in self.backend.scan(where) if r.user_id == user]
        current = [r for r in records if r.valid_to is None]
        policy = self._lifecycle_policy()
        plan = plan_lifecycle(records if lifecycle else [], now=now, policy=policy)
        plan.evict = [i for i in plan.evict if any(r.id == i and r.valid_to is None for r in current)]
        doomed = plan.deletions
        if doomed:
            self.backend.delete(ids=doomed)
        by_id = {r.id: r for r in records}
        if plan.archive:
            self.writer.update([by_id[i].copy(archived=True, expire_at=now + policy.grace_days * 86400.0)
                                for i in plan.archive])
        for record_id in [*doomed, *plan.archive]:
            trace.event(f"lifecycle {record_id}: {plan.reasons.get(record_id, '')}")
        report.expired, report.archived, report.evicted = plan.expire, plan.archive, plan.evict
        if consolidate:
            alive = [r for r in current if r.id not in doomed and r.id not in plan.archive]
            for merge in plan_consolidation(alive):
                survivor = by_id[merge.survivor]
                changes = [survivor.copy(source_ids=merge.source_ids)]
                changes += [by_id[i].copy(valid_to=now, superseded_by=survivor.id) for i in merge.merged]
                self.writer.update(changes)
                report.merged[survivor.id] = merge.merged
                trace.event(f"consolidated {merge.merged} into {survivor.id}")
        self.writer.flush()
        self._after_delete(user)
        trace.emit()
        return report

    def compact(self: MemoryCore, *, user_id: str | None = None) -> dict[str, list[str]]:
        """Merge a user's near-duplicate facts into one each (provenance kept)."""
        return self.maintain(user_id=user_id, lifecycle=False).merged

    async def amaintain(self: MemoryCore, **kwargs: Any) -> MaintenanceReport:
        return await asyncio.to_thread(self.maintain, **kwargs)
