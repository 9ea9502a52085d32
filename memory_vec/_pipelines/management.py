"""Single memories: remember / get / update / delete / pin / history /
restore, for one engine. Every write goes through the store's writer, so
the validation hook sees it."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Any

from memory_vec._model import validate as v
from memory_vec._model.errors import InvalidInputError, MemoryNotFoundError, SupersededMemoryError
from memory_vec._model.records import DeleteResult, MemoryRecord, RecheckedSupersede, WriteEvent, WriteResult
from memory_vec._model.scope import Scope
from memory_vec._pipelines.engine import Engine
from memory_vec._pipelines.resolution import FactOutcome, FactResolution, fact_record, statement_fields
from memory_vec._rules.conflict import ConflictAction, ExtractedFact, why_restore
from memory_vec._rules.facts import subject_key
from memory_vec.backends.base import RecordFilter

__all__ = ["Management"]

_EDIT_ATTEMPTS = 5


class Management:
    def __init__(self, engine: Engine, resolution: FactResolution) -> None:
        self.e = engine
        self.resolution = resolution

    def own(self, memory_id: str, user_id: str | None) -> MemoryRecord:
        """The memory if it belongs to the user; MemoryNotFoundError otherwise."""
        e = self.e
        v.check_id(memory_id, "memory_id")
        user = e.scope(user_id).user_id
        found = e.writer.get([memory_id])
        if not found or found[0].user_id != user:
            # Another user's memory is reported exactly like a missing one.
            raise MemoryNotFoundError(f"no memory {memory_id!r} for user {user!r}")
        return found[0]

    def own_current(self, memory_id: str, user_id: str | None, action: str) -> MemoryRecord:
        """The memory if it is the user's and current; a superseded one raises
        :class:`SupersededMemoryError` naming the current id."""
        record = self.own(memory_id, user_id)
        if record.valid_to is None:
            return record
        current, seen = record, {record.id}
        while current.superseded_by and current.superseded_by not in seen:
            seen.add(current.superseded_by)
            found = self.e.writer.get([current.superseded_by])
            if not found or found[0].user_id != record.user_id:
                break
            current = found[0]
        current_id = current.id if current is not record and current.valid_to is None else None
        hint = f"the current memory is {current_id!r}" if current_id else "no current successor was found"
        raise SupersededMemoryError(
            f"cannot {action} memory {memory_id!r}: it was superseded ({hint}); use that id, "
            f"or restore({memory_id!r}) first to make this one current again",
            memory_id=memory_id,
            current_id=current_id,
        )

    def remember(
        self,
        text: str,
        scope: Scope,
        *,
        importance: float = 1.0,
        metadata: dict[str, Any] | None = None,
        subject: str | None = None,
        visibility: str = "private",
        expire_at: Any = None,
    ) -> WriteResult:
        e = self.e
        text = e.redact(v.check_content(text, max_bytes=e.config.max_content_bytes))
        meta = v.check_metadata(metadata, max_bytes=e.config.max_metadata_bytes)
        if visibility not in ("private", "agent", "global"):
            raise InvalidInputError(f"visibility must be private, agent or global; got {visibility!r}")
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
            raise InvalidInputError(f"importance must be a number in [0, 1], got {importance!r}")
        if subject is not None:
            v.check_content(subject, max_bytes=512, field="subject")
        expires = v.check_timestamp(expire_at, field="expire_at")
        record = MemoryRecord(
            id=uuid.uuid4().hex,
            text=text,
            role="user",
            user_id=scope.user_id,
            session_id=scope.session_id,
            timestamp=time.time(),
            kind="fact",
            agent_id=e.config.agent_id,
            importance=float(importance),
            metadata=meta,
            subject=subject or subject_key(text),
            pinned=True,
            visibility=visibility,
            expire_at=expires,
        )
        e.store.validate([record])
        trace = e.start_trace("remember", scope)
        vector = e.embed_documents([text], scope.user_id)[0]
        fact = ExtractedFact(text, record.subject, float(importance), "profile")
        neighbours = self.resolution.nearest_current(scope.user_id, vector, ("fact",))
        decision = e.resolver.decide(fact, neighbours)
        if decision.action is ConflictAction.NOOP and decision.duplicate_of:
            return WriteResult(
                WriteEvent.SKIPPED_DUPLICATE,
                decision.duplicate_of,
                duplicate_of=decision.duplicate_of,
                reason=decision.reason,
            )
        out = FactOutcome()
        superseded: list[str] = []
        if decision.action in (ConflictAction.UPDATE, ConflictAction.DELETE) and decision.superseded:
            superseded = self.resolution.supersede(decision.superseded, by=record, out=out)
        e.writer.write([record], vector[None, :])
        if out.updates:
            e.writer.update(out.updates)
        trace.emit()
        event = WriteEvent.UPDATED if superseded else WriteEvent.ADDED
        return WriteResult(event, record.id, superseded_ids=superseded, reason=decision.reason)

    def update(self, memory_id: str, text: str, *, user_id: str | None = None) -> WriteResult:
        """Replace a memory's text: the old version is superseded, kept as history.

        The copies of the old text go with it: a message's extracted facts, a
        fact's source message (so the new text is what recall ranks first), and
        the summary's lines that repeat it (patched to the new text).
        """
        e = self.e
        old = self.own_current(memory_id, user_id, "update")
        text = e.redact(v.check_content(text, max_bytes=e.config.max_content_bytes))
        metadata = dict(old.metadata)
        if old.kind == "fact":
            metadata.update(statement_fields(text))
        new = old.copy(
            id=uuid.uuid4().hex,
            text=text,
            timestamp=time.time(),
            valid_to=None,
            superseded_by=None,
            source_ids=list(old.source_ids),
            metadata=metadata,
        )
        facts = self._facts_of(new) if old.kind == "message" else []
        e.store.validate([new, *facts])
        vectors = e.embed_documents([r.text for r in (new, *facts)], old.user_id)
        e.writer.write([new, *facts], vectors)
        copies = [c for c in self._copies(old) if c.valid_to is None]  # the new facts name the new id: not copies
        e.writer.update([r.copy(valid_to=new.timestamp, superseded_by=new.id) for r in (old, *copies)])
        scope = e.scope(old.user_id, old.session_id)
        if old.kind == "message":
            self._edit_window(old, new)
        self.resolution.patch_summary(scope, old.subject, [old.text, *(c.text for c in copies)], new.text)
        return WriteResult(
            WriteEvent.UPDATED,
            new.id,
            fact_ids=[f.id for f in facts],
            superseded_ids=[old.id, *(c.id for c in copies)],
            reason="update: the caller's new text",
        )

    def delete(self, memory_id: str, *, user_id: str | None = None) -> DeleteResult:
        """Physically delete one memory of the caller's user, with its copies.

        A message's extracted facts are deleted with it, and its lines leave the
        summary. What it had superseded becomes current again; deleting the middle
        of a chain (5000 -> 8000 -> 9000: delete 8000) links its predecessors to
        its successor instead, so 9000 stays current and the chain stays whole.
        """
        e = self.e
        record = self.own(memory_id, user_id)
        targets = [record, *(c for c in self._copies(record) if c.kind == "fact")]
        ids = {t.id for t in targets}
        predecessors = self._superseded_by(record.user_id, ids)
        successor = record.superseded_by
        if successor:
            changed = [p.copy(superseded_by=successor) for p in predecessors]
        else:
            changed = [p.copy(valid_to=None, superseded_by=None) for p in predecessors]
        e.drop_from_state(targets)
        e.writer.delete(record.user_id, ids=list(ids))
        if changed:
            e.writer.update(changed)
        restored = [] if successor else changed
        scope = e.scope(record.user_id, record.session_id)
        newest = max(restored, key=lambda r: r.timestamp, default=None)
        self.resolution.patch_summary(scope, record.subject, [t.text for t in targets], newest.text if newest else None)
        return DeleteResult(
            deleted_ids=[t.id for t in targets],
            restored_ids=[p.id for p in restored],
            relinked_ids=[p.id for p in changed] if successor else [],
        )

    def recheck_superseded(self, user_id: str | None = None, *, apply: bool = False) -> list[RecheckedSupersede]:
        """The user's superseded memories that the statement model would keep current today
        (an event, a past, reported or hypothetical value taken for an update by 0.1's rules);
        with ``apply``, they are restored. Edits by ``update`` and assistant echoes are left alone."""
        e = self.e
        user = e.scope(user_id).user_id
        records = {r.id: r for r in e.writer.scan(RecordFilter(user_id=user, include_superseded=True))}
        found = []
        for r in records.values():
            by = records.get(r.superseded_by or "")
            if r.valid_to is None or by is None or r.role != "user" or r.kind not in ("message", "fact"):
                continue
            if by.seq == r.seq and by.session_id == r.session_id:
                continue  # an edit keeps its seq: the caller's word, not a rule's
            if why := why_restore(r.text, by.text):
                found.append(RecheckedSupersede(r.id, by.id, why, r.text, by.text))
        if apply and found:
            e.writer.update([records[x.record_id].copy(valid_to=None, superseded_by=None) for x in found])
        return found

    def _edit_window(self, old: MemoryRecord, new: MemoryRecord) -> None:
        """The session's recent window says what the edit says (a later fold must not bring the old text back)."""
        e = self.e
        for _ in range(_EDIT_ATTEMPTS):  # compare-and-set: a concurrent append or fold means read again
            window = e.state.load(old.user_id, old.session_id).messages
            shown = next((m for m in window if m.id == old.id), None)
            if shown is None:
                return  # folded already: the summary patch reaches it
            edited = replace(shown, id=new.id, content=new.text, tokens=e.counter.count(new.text))
            if e.state.edit_message(old.user_id, old.session_id, shown, edited):
                return

    def _facts_of(self, message: MemoryRecord) -> list[MemoryRecord]:
        """The facts of an edited message, extracted again from its new text, so a
        later update of the same value finds them (no conflict check: the edit is the caller's word)."""
        e = self.e
        trace = e.start_trace("update", e.scope(message.user_id, message.session_id))
        return [
            fact_record(message, index, fact)
            for index, fact in enumerate(self.resolution.extract(message.role, message.text, trace))
            if not (fact.transient and e.config.skip_transient)
        ]

    def _copies(self, record: MemoryRecord) -> list[MemoryRecord]:
        """The records that carry ``record``'s text: a message's facts, or a fact's source messages."""
        e = self.e
        if record.kind == "fact":
            return [s for s in e.writer.get(record.source_ids) if s.user_id == record.user_id]
        if record.kind != "message":
            return []
        where = RecordFilter(
            user_id=record.user_id,
            session_id=record.session_id,
            kinds=("fact",),
            seq_min=record.seq,
            seq_max=record.seq,
            include_superseded=True,
        )
        return [f for f in e.writer.scan(where) if record.id in f.source_ids]

    def _superseded_by(self, user_id: str, ids: set[str]) -> list[MemoryRecord]:
        where = RecordFilter(user_id=user_id, include_superseded=True)
        return [r for r in self.e.writer.scan(where) if r.superseded_by in ids and r.id not in ids]

    def set_pinned(self, memory_id: str, pinned: bool, *, user_id: str | None = None) -> MemoryRecord:
        record = self.own_current(memory_id, user_id, "pin" if pinned else "unpin").copy(pinned=pinned)
        self.e.writer.update([record])
        return record

    def history(self, memory_id: str, *, user_id: str | None = None) -> list[MemoryRecord]:
        """The supersede chain through this memory, oldest first."""
        e = self.e
        start = self.own(memory_id, user_id)
        where = RecordFilter(user_id=start.user_id, kinds=(start.kind,), include_superseded=True, include_archived=True)
        by_id = {r.id: r for r in e.writer.scan(where)}
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

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """Undo a supersede: this memory is current again, its successor is not."""
        e = self.e
        old = self.own(memory_id, user_id)
        if old.valid_to is None:
            return old
        changes: list[MemoryRecord] = [old.copy(valid_to=None, superseded_by=None)]
        displaced: list[MemoryRecord] = []  # what stated the newer value: it leaves the summary too
        if old.superseded_by:
            for successor in e.writer.get([old.superseded_by]):
                if successor.user_id == old.user_id and successor.valid_to is None:
                    now = time.time()
                    changes.append(successor.copy(valid_to=now, superseded_by=old.id))
                    displaced.append(successor)
                    # the message that stated the newer value stops being served too
                    for src in e.writer.get(successor.source_ids):
                        if src.user_id == old.user_id and src.valid_to is None:
                            changes.append(src.copy(valid_to=now, superseded_by=old.id))
                            displaced.append(src)
        sources = e.writer.get(old.source_ids)  # ids an import may have set: never another user's record
        changes += [
            s.copy(valid_to=None, superseded_by=None)
            for s in sources
            if s.user_id == old.user_id and s.superseded_by == old.superseded_by
        ]
        e.writer.update(changes)
        for session_id in dict.fromkeys(r.session_id for r in displaced):
            scope = e.scope(old.user_id, session_id)
            self.resolution.patch_summary(scope, old.subject, [r.text for r in displaced], old.text)
        return changes[0]
