"""Facts and conflicts on write: extract, find the nearest current facts,
let :class:`~memory_vec._rules.conflict.ConflictResolver` decide, and apply the
decision (supersede old records, patch the running summary).

The decisions live in :mod:`memory_vec._rules.conflict` (no I/O); this module
feeds them from the backend and the pending writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from memory_vec._model.errors import BackendError
from memory_vec._model.records import MemoryRecord, WriteEvent
from memory_vec._model.scope import Scope
from memory_vec._model.trace import TurnTrace
from memory_vec._pipelines.engine import Engine
from memory_vec._rules.assertion import assess
from memory_vec._rules.conflict import ConflictAction, ConflictDecision, ExistingFact, ExtractedFact, patch_summary
from memory_vec._rules.facts import extract_values, is_chinese, is_question, split_sentences, subject_key
from memory_vec.backends.base import RecordFilter

__all__ = [
    "MAX_FACTS_PER_MESSAGE",
    "BatchFacts",
    "FactOutcome",
    "FactResolution",
    "fact_id",
    "fact_record",
    "statement_fields",
]

_NEIGHBOURS = 5
# One query serves a user message's facts and plain messages: this many times _NEIGHBOURS of both
# kinds, so that messages (the assistant's are dropped after) rarely crowd the facts out (at 4 the
# conflict benchmark's stale@5 rose 0.108 -> 0.113 in English; at 8 it is 0.108, as with two queries).
_MIXED_QUERY = 8
# Facts kept per message: a pasted document is not a thousand facts, each an
# embedding and a conflict check (1,880 took 9 s on the hashing embedder).
MAX_FACTS_PER_MESSAGE = 32
_PATCH_ATTEMPTS = 5
_FACT_IDS = uuid.UUID("6f1d3c2e-54a7-4c1b-9a57-7e0b3f6d8a21")


def _existing(record: MemoryRecord, similarity: float) -> ExistingFact:
    return ExistingFact(record.id, record.text, record.subject, similarity, tuple(record.source_ids))


def _short(text: str, sentences: Sequence[str]) -> bool:
    """At most two sentences and about forty words: what a restated value looks like."""
    return len(sentences) <= 2 and (len(text.split()) <= 40 if not is_chinese(text) else len(text) <= 80)


def statement_fields(text: str) -> dict[str, str]:
    """The statement model of a fact, as the documented metadata fields ``modality`` and ``statement``."""
    assertion = assess(text)
    return {"modality": assertion.modality.value, "statement": assertion.kind.value}


def fact_record(message: MemoryRecord, index: int, fact: ExtractedFact) -> MemoryRecord:
    """The record of a message's ``index``-th fact: the message's scope, seq and metadata, the
    fact's type and statement model, a derived id (:func:`fact_id`) and the message as its source."""
    return MemoryRecord(
        id=fact_id(message.id, index),
        text=fact.text,
        role=message.role,
        user_id=message.user_id,
        session_id=message.session_id,
        timestamp=message.timestamp,
        kind="fact",
        seq=message.seq,
        agent_id=message.agent_id,
        importance=fact.importance,
        metadata={"type": fact.type, **statement_fields(fact.text), **message.metadata},
        subject=fact.subject,
        source_ids=[message.id],
    )


def fact_id(message_id: str, index: int) -> str:
    """The id of a message's ``index``-th extracted fact. Derived, not random:
    a message re-stored after a crash (``WritePath.heal``) re-derives its facts
    under the same ids, so a fact that did reach the store is not stored twice."""
    return uuid.uuid5(_FACT_IDS, f"{message_id}:{index}").hex


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
    #: (subject, old texts, new text) to patch into the summary once written.
    summary_patches: list[tuple[str | None, list[str], str]] = field(default_factory=list)


class BatchFacts:
    """The facts decided earlier in one batch (not stored yet), their vectors
    in one array: a lookup is one product, not a scan per fact."""

    def __init__(self) -> None:
        self.records: list[MemoryRecord] = []
        self._vectors: np.ndarray | None = None

    def append(self, record: MemoryRecord, vector: np.ndarray) -> None:
        v = np.asarray(vector, dtype=np.float32)
        if self._vectors is None:
            self._vectors = np.empty((16, len(v)), dtype=np.float32)
        elif len(self.records) == len(self._vectors):  # doubled: appends stay linear in all
            self._vectors = np.concatenate([self._vectors, np.empty_like(self._vectors)])
        self._vectors[len(self.records)] = v
        self.records.append(record)

    def nearest(self, vector: np.ndarray, where: RecordFilter, k: int) -> list[tuple[MemoryRecord, float]]:
        """The ``k`` most similar that ``where`` matches, best first (ties in the order added)."""
        if self._vectors is None:
            return []
        similarities = self._vectors[: len(self.records)] @ np.asarray(vector, dtype=np.float32)
        out: list[tuple[MemoryRecord, float]] = []
        for j in np.argsort(-similarities, kind="stable"):
            if where.matches(self.records[j]):
                out.append((self.records[j], float(similarities[j])))
                if len(out) == k:
                    break
        return out


class FactResolution:
    """Conflict-overwrite on write, for one engine."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine

    # ------------------------------------------------------------- extraction
    def extract(self, role: str, content: str, trace: TurnTrace) -> list[ExtractedFact]:
        """A message's facts, each text once, at most :data:`MAX_FACTS_PER_MESSAGE`
        (the first ones; the message itself is stored whole)."""
        seen: set[str] = set()
        facts = []
        for fact in self._extract(role, content, trace):
            key = " ".join(str(fact.text).casefold().split())
            if key not in seen:  # "my colour is blue. " * 50: one fact, not 50 current copies
                seen.add(key)
                facts.append(fact)
        if len(facts) > MAX_FACTS_PER_MESSAGE:
            trace.event(f"fact extraction: {len(facts)} facts in one message, the first {MAX_FACTS_PER_MESSAGE} kept")
            del facts[MAX_FACTS_PER_MESSAGE:]
        return facts

    def _extract(self, role: str, content: str, trace: TurnTrace) -> list[ExtractedFact]:
        e = self.e
        if e.extractor is None:
            if role != "user" or all(is_question(s) for s in split_sentences(content)):
                return []  # a question sets no value ("what is my budget?")
            # No extractor: the user message itself is checked for conflicts.
            return [ExtractedFact(content, subject_key(content), e.importance(role, content))]
        try:
            facts = e.extractor.extract(role, content)
        except Exception as exc:  # noqa: BLE001  # an extractor (often an LLM) failing never loses the message
            trace.event(f"fact extraction skipped: {exc}")
            return []
        error = getattr(e.extractor, "last_error", "")
        if error:
            trace.event(f"fact extraction: {error}")
        return facts

    def nearest_current(
        self,
        user: str,
        vector: np.ndarray,
        kinds: tuple[str, ...],
        local: BatchFacts | None = None,
    ) -> list[ExistingFact]:
        where = RecordFilter(user_id=user, kinds=kinds, roles=("user",) if kinds == ("message",) else None)
        return [_existing(r, sim) for r, sim in self._nearest(vector, where, _NEIGHBOURS, local)[:_NEIGHBOURS]]

    def _nearest(
        self, vector: np.ndarray, where: RecordFilter, k: int, local: BatchFacts | None
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``k`` current records nearest ``vector`` that ``where`` matches, stored or earlier in
        this batch, best first."""
        out = [(h.record, h.similarity) for h in self.e.writer.query(vector, k=k, where=where)]
        out += local.nearest(vector, where, k) if local is not None else []
        out.sort(key=lambda pair: -pair[1])
        return out

    def _facts_and_plain_messages(self, user: str, vector: np.ndarray, local: BatchFacts) -> list[ExistingFact]:
        """The user's nearest facts and nearest plain user messages, in one query: "I smoke" sets no
        value the rules extract a fact from, and "I don't smoke anymore" must still end it; only the
        explicit rules may replace such a message (``plain``). No new embedding: the vector is reused."""
        where = RecordFilter(user_id=user, kinds=("fact", "message"))
        found = self._nearest(vector, where, _NEIGHBOURS * _MIXED_QUERY, local)
        facts = [_existing(r, sim) for r, sim in found if r.kind == "fact"][:_NEIGHBOURS]
        known = {f.id for f in facts} | {s for f in facts for s in f.source_ids}
        plain = [
            replace(_existing(r, sim), plain=True)
            for r, sim in found
            if r.kind == "message" and r.role == "user" and r.id not in known
        ]
        return facts + plain[:_NEIGHBOURS]

    def resolve(
        self,
        scope: Scope,
        messages: Sequence[MemoryRecord],
        message_vectors: np.ndarray,
        extracted: Sequence[list[ExtractedFact]],
        fact_vectors: np.ndarray,
        trace: TurnTrace,
    ) -> FactOutcome:
        e = self.e
        out = FactOutcome()
        vec_iter = iter(fact_vectors)
        local = BatchFacts()
        for message, vector, facts in zip(messages, message_vectors, extracted):
            out.events[message.id] = WriteEvent.ADDED
            near: list[ExistingFact] = []  # what the message's facts were checked against
            if facts and all(f.transient for f in facts) and e.config.skip_transient:
                out.events[message.id] = WriteEvent.SKIPPED_LOW_VALUE
                out.reasons[message.id] = "transient instruction: not kept as a fact"
                trace.event(f"value filter skipped a transient instruction in {message.id}")
            for index, fact in enumerate(facts):
                if fact.transient and e.config.skip_transient:
                    continue
                fact_vector = vector if e.extractor is None else next(vec_iter)
                neighbours = self._neighbours(scope, message, fact_vector, local, trace)
                near += neighbours
                decision = e.resolver.decide(fact, neighbours, subject_only=e.extractor is None)
                trace.event(f"conflict: {decision.action.value} ({decision.reason})")
                if decision.reason.startswith("kept:"):  # why a like value was not superseded
                    out.reasons.setdefault(message.id, decision.reason)
                if decision.action is ConflictAction.NOOP:
                    if e.extractor is not None:  # a duplicate fact is not stored twice
                        out.events[message.id] = WriteEvent.SKIPPED_DUPLICATE
                        out.duplicate_of[message.id] = decision.duplicate_of or ""
                    continue
                if e.extractor is None:
                    new_record = message
                    message.subject = fact.subject
                    local.append(message, fact_vector)  # a later message of this batch may supersede it
                else:
                    new_record = fact_record(message, index, fact)
                    out.fact_records.append(new_record)
                    out.fact_vectors.append(fact_vector)
                    out.fact_ids.setdefault(message.id, []).append(new_record.id)
                    local.append(new_record, fact_vector)
                self._apply(decision, message, new_record, fact, out, local, messages)
            # A message no fact was taken from, or only part of whose facts replaced nothing ("Done
            # with keto. Not doing it anymore." gives the fact "Not doing it anymore."), is checked whole.
            partial = " ".join(f.text for f in facts) != " ".join(message.text.split())
            if e.extractor is not None and (not facts or partial) and message.id not in out.superseded:
                self._resolve_plain(scope, message, vector, local, out, messages, trace, near if facts else None)
        return out

    def _neighbours(
        self,
        scope: Scope,
        message: MemoryRecord,
        vector: np.ndarray,
        local: BatchFacts,
        trace: TurnTrace,
    ) -> list[ExistingFact]:
        """The current facts nearest a new fact (or a plain message) and the user's nearest plain
        messages (only the explicit rules may replace those), never the message's own facts."""
        e = self.e
        try:
            if e.extractor is None:
                found = self.nearest_current(scope.user_id, vector, ("message",), local)
            elif message.role == "user":
                found = self._facts_and_plain_messages(scope.user_id, vector, local)
            else:
                found = self.nearest_current(scope.user_id, vector, ("fact",), local)
        except BackendError as exc:
            # The write must not fail because the check cannot run:
            # store the fact; a later maintain()/update can reconcile.
            trace.degraded = True
            trace.event(f"conflict check skipped, backend unavailable: {exc}")
            return []
        # A fact never overwrites another fact of its own message ("I don't work at X anymore; I joined Y.").
        return [n for n in found if n.id != message.id and message.id not in n.source_ids]

    def _resolve_plain(
        self,
        scope: Scope,
        message: MemoryRecord,
        vector: np.ndarray,
        local: BatchFacts,
        out: FactOutcome,
        batch: Sequence[MemoryRecord],
        trace: TurnTrace,
        near: list[ExistingFact] | None = None,
    ) -> None:
        """A user message no fact was extracted from ("房租一个月2700", "I've quit coffee completely")
        may still replace what it restates or ends: the message itself is checked, with its own
        vector, by the explicit rules only. ``near``: what its facts were checked against, when only
        part of it gave facts; reused, so the turn makes no second query for it."""
        sentences = split_sentences(message.text)
        if message.role != "user" or all(is_question(s) for s in sentences) or not _short(message.text, sentences):
            return  # a long chat message is not a bare update: the facts extracted from it speak for it
        fact = ExtractedFact(message.text, subject_key(message.text), message.importance)
        if near is None:
            neighbours = self._neighbours(scope, message, vector, local, trace)
        else:  # nearest first, each once
            unique = {n.id: n for n in sorted(near, key=lambda n: n.similarity)}
            neighbours = sorted(unique.values(), key=lambda n: -n.similarity)
        decision = self.e.resolver.decide(fact, neighbours, plain=True)
        if decision.action in (ConflictAction.UPDATE, ConflictAction.DELETE) and decision.superseded:
            trace.event(f"conflict (whole message): {decision.action.value} ({decision.reason})")
            self._apply(decision, message, message, fact, out, local, batch)

    def _apply(
        self,
        decision: ConflictDecision,
        message: MemoryRecord,
        new_record: MemoryRecord,
        fact: ExtractedFact,
        out: FactOutcome,
        local: BatchFacts,
        batch: Sequence[MemoryRecord],
    ) -> None:
        if decision.action not in (ConflictAction.UPDATE, ConflictAction.DELETE) or not decision.superseded:
            return
        superseded = self.supersede(decision.superseded, by=new_record, out=out, local=local, batch=batch)
        out.superseded.setdefault(message.id, []).extend(superseded)
        out.events[message.id] = WriteEvent.UPDATED
        out.reasons[message.id] = f"{decision.action.value.lower()}: {decision.reason}"
        old_texts = [u.text for u in out.updates if u.id in superseded]
        out.summary_patches.append((fact.subject, old_texts, fact.text))

    def supersede(
        self,
        ids: Sequence[str],
        *,
        by: MemoryRecord,
        out: FactOutcome,
        local: BatchFacts | None = None,
        batch: Sequence[MemoryRecord] = (),
    ) -> list[str]:
        """Mark records (and their source messages) as no longer current. ``batch``:
        the messages being written with ``by``, not in the store yet."""
        e = self.e
        targets = {r.id: r for r in e.writer.get(ids)}
        for record in local.records if local is not None else []:
            if record.id in ids:
                targets[record.id] = record
        source_ids = [s for r in targets.values() for s in r.source_ids if s not in targets]
        if source_ids:
            unwritten = {m.id: m for m in batch}
            for r in [
                *(unwritten[s] for s in source_ids if s in unwritten),
                *e.writer.get([s for s in source_ids if s not in unwritten]),
            ]:
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

    def _echoes(self, superseded: Sequence[MemoryRecord], *, new_text: str) -> list[MemoryRecord]:
        """Replies that repeat a superseded value ("Got it, a budget of 5000").

        The reply right after a superseded user message, when it carries one
        of the old values that the new statement does not, would otherwise
        keep serving the old value.
        """
        e = self.e
        new_values = extract_values(new_text)
        echoes = []
        for old in superseded:
            if old.kind != "message" or old.role != "user":
                continue
            stale = extract_values(old.text) - new_values
            if not stale:
                continue
            where = RecordFilter(
                user_id=old.user_id,
                session_id=old.session_id,
                kinds=("message",),
                roles=("assistant",),
                seq_min=old.seq + 1,
                seq_max=old.seq + 1,
            )
            for reply in e.writer.scan(where):
                if extract_values(reply.text) & stale:
                    echoes.append(reply)
        return echoes

    def patch_summary(self, scope: Scope, subject: str | None, old_texts: list[str], new_text: str | None) -> bool:
        """Rewrite superseded values in the running summary.

        Compare-and-set like a fold: the patch commits only if neither the
        summary nor ``folded_through`` changed since it was read, so a fold
        committed in between is never overwritten (the patch is redone on
        the new summary instead).
        """
        e = self.e
        for _ in range(_PATCH_ATTEMPTS):
            state = e.state.load(scope.user_id, scope.session_id)
            if not state.summary:
                return False
            patched = patch_summary(state.summary, subject=subject, old_texts=old_texts, new_text=new_text)
            tokens = e.counter.count(patched)
            if patched == state.summary or tokens > e.config.summary_max_tokens:
                return False
            if e.state.commit_fold(
                scope.user_id,
                scope.session_id,
                expected_folded_through=state.folded_through,
                folded_through=state.folded_through,
                summary=patched,
                summary_tokens=tokens,
                expected_summary=state.summary,
            ):
                return True
        return False
