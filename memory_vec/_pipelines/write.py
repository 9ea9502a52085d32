"""The write pipeline of one turn:

validate -> extract -> embed (one :class:`EmbedTextPolicy`) -> append to the
working state -> resolve conflicts -> write -> fold.

Everything a message needs is checked (the store's validation hook
included) before the working state or the backend is touched, so bad input
leaves no trace. The working state is the write-ahead log: a message is
appended before its vector write, and :meth:`WritePath.heal` re-stores
what a killed process appended but never stored.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memory_vec._model import validate as v
from memory_vec._model.errors import (
    BackendError,
    BackendUnavailableError,
    MemoryVecError,
    RecordRejectedError,
    SummaryRejectedError,
)
from memory_vec._model.records import MemoryRecord, MessageInput, MessageLike, WriteEvent, WriteResult, coerce_messages
from memory_vec._model.scope import Scope
from memory_vec._model.trace import SummarizerCall, TurnTrace
from memory_vec._pipelines.background import BackgroundFolds
from memory_vec._pipelines.engine import Engine
from memory_vec._pipelines.resolution import FactOutcome, FactResolution, fact_id
from memory_vec._rules.summary import FoldPlan, plan_fold
from memory_vec.state import NewMessage, StateMessage, WorkingState

__all__ = ["MessageInput", "WritePath"]

log = logging.getLogger("memory_vec")
_FACT_PROBES = 16  # fact ids probed per healed message (an LLM extractor may give others this time)


class WritePath:
    """``add_messages``, healing and folding for one engine."""

    def __init__(self, engine: Engine, resolution: FactResolution) -> None:
        self.e = engine
        self.resolution = resolution
        self._healed: set[tuple[str, str]] = set()
        self._healed_lock = threading.Lock()
        self._fold_locks: dict[tuple[str, str], threading.Lock] = {}
        self._fold_locks_guard = threading.Lock()
        self.folds = BackgroundFolds(self._fold_off_turn)

    def add_messages(self, messages: Iterable[MessageLike], scope: Scope) -> list[WriteResult]:
        e, cfg = self.e, self.e.config
        items = coerce_messages(messages)
        if not items:
            return []
        # 1. validate: every message, before anything is written
        drafts = self._drafts(items, scope)
        trace = e.start_trace("add_messages", scope)
        loaded = self.load_healed(scope)
        # 2. extract
        extracted = [self.resolution.extract(r.role, r.text, trace) for r in drafts]
        fact_texts = [
            f.text
            for facts in extracted
            for f in facts
            if not (f.transient and cfg.skip_transient) and e.extractor is not None
        ]
        # 3. embed: messages and their facts in one call
        t0 = time.perf_counter()
        turn = self._embed_turn(scope, drafts, loaded, fact_texts)
        trace.timings["embed"] = time.perf_counter() - t0
        e.store.validate(drafts, turn.vectors)  # a broken model's vector is refused before anything is written
        # 4. append to the working state (the write-ahead log)
        appended = [NewMessage(r.id, r.role, r.text, r.timestamp, e.counter.count(r.text), r.metadata) for r in drafts]
        seqs = e.state.append(scope.user_id, scope.session_id, appended, first_seq=e.first_seq(scope, loaded))
        records = [r.copy(seq=seq) for r, seq in zip(drafts, seqs)]
        # 5. resolve conflicts
        t0 = time.perf_counter()
        facts = self.resolution.resolve(scope, records, turn.plain, extracted, turn.facts, trace)
        trace.timings["conflict"] = time.perf_counter() - t0
        # 6. write, inside this call
        t0 = time.perf_counter()
        durable = self._write_turn(scope, facts, records, turn, trace)
        for subject, old_texts, new_text in facts.summary_patches:
            self.resolution.patch_summary(scope, subject, old_texts, new_text)
        trace.timings["write"] = time.perf_counter() - t0
        # 7. fold (a slow summarizer's off the turn)
        summarized = self._fold_or_schedule(scope, trace, _state_after(loaded, seqs, appended))
        trace.emit()
        return [
            WriteResult(
                facts.events.get(r.id, WriteEvent.ADDED),
                r.id,
                seq=r.seq,
                fact_ids=facts.fact_ids.get(r.id, []),
                superseded_ids=facts.superseded.get(r.id, []),
                duplicate_of=facts.duplicate_of.get(r.id),
                summarized=summarized,
                pending=not durable,
                reason=facts.reasons.get(r.id, ""),
            )
            for r in records
        ]

    def _drafts(self, items: Sequence[Any], scope: Scope) -> list[MemoryRecord]:
        """The turn's message records (seq 0 until appended), every one checked
        against the library's rules and the backend's limits."""
        e, cfg = self.e, self.e.config
        now = time.time()
        drafts = []
        for item in items:
            role = v.check_role(item.role)
            content = e.redact(v.check_content(item.content, max_bytes=cfg.max_content_bytes))
            ts = v.check_timestamp(item.timestamp)
            meta = v.check_metadata(item.metadata, max_bytes=cfg.max_metadata_bytes)
            drafts.append(e.message_record(scope, uuid.uuid4().hex, 0, role, content, now if ts is None else ts, meta))
        e.store.validate(drafts)  # the backend's hard limits, before the working state
        return drafts

    def _embed_turn(
        self, scope: Scope, drafts: Sequence[MemoryRecord], loaded: WorkingState, fact_texts: Sequence[str]
    ) -> _TurnVectors:
        """The policy says which texts; cached vectors are reused (the user message
        was the last recall query, a fact is often its message's sentence)."""
        e, cfg = self.e, self.e.config
        contents = [r.text for r in drafts]
        recent = loaded.messages[-4:] if cfg.contextual_embedding else []
        before = [(m.role, m.content) for m in recent]
        turns = before + [(r.role, r.text) for r in drafts]
        completed = recent[-1] if e.embed_text.completes_pair(before, turns[len(before) :]) else None
        shift = int(completed is not None)  # plan rows: the completed user message, then the new ones
        plan = e.embed_text.plan_window(turns, range(len(before) - shift, len(turns)))
        # Plain vectors where the stored one differs: a user message is the
        # turn's recall query (cached, or cached now for it), and without an
        # extractor messages are compared with earlier ones by it.
        plain_needed = [
            i
            for i, r in enumerate(drafts)
            if (r.role == "user" or e.extractor is None) and plan.texts[plan.own[i + shift]] != r.text
        ]
        k, n_plain = len(plan.texts), len(plain_needed)
        all_vectors = e.embed_documents([*plan.texts, *(contents[i] for i in plain_needed), *fact_texts], scope.user_id)
        stored = plan.vectors(all_vectors[:k])
        plain = all_vectors[list(plan.own[shift:])]  # before any mixing
        plain[plain_needed] = all_vectors[k : k + n_plain]
        return _TurnVectors(stored[shift:], plain, all_vectors[k + n_plain :], completed, stored[:1])

    def _write_turn(
        self, scope: Scope, facts: FactOutcome, records: list[MemoryRecord], turn: _TurnVectors, trace: TurnTrace
    ) -> bool:
        """Supersedes of stored records first, then the facts, then their messages. A
        process killed in between leaves the message unstored, and heal re-stores it
        with its facts; the other order could leave a stored message whose supersede
        was lost, and the old value served as current. False: the backend is down
        (the turn stays in the working state, healed on the session's next call)."""
        e = self.e
        to_write = facts.fact_records + records
        write_vectors = (
            np.concatenate([np.asarray(facts.fact_vectors, dtype=np.float32), turn.vectors])
            if facts.fact_records
            else turn.vectors
        )
        new_ids = {r.id for r in to_write}
        stored_updates = [u for u in facts.updates if u.id not in new_ids]  # the new ones carry theirs
        refused: RecordRejectedError | None = None
        try:
            try:
                if stored_updates:
                    e.writer.update(stored_updates)
            except RecordRejectedError as exc:  # a dead letter now; the turn's own rows still go in
                refused = exc
            # A big batch of messages goes to the backend in one call; their ids are
            # fresh, so the backend need not look for old rows first.
            try:
                e.writer.write(to_write, write_vectors, new=True, batch_size=max(len(to_write), e.writer.batch_size))
            except RecordRejectedError as exc:
                refused = refused or exc
            if turn.completed is not None:  # the user message's reply came in this call: it shares the pair's vector
                self._restore(scope, [turn.completed.id], turn.completed_vector)
        except BackendUnavailableError as exc:
            self.forget_healed(scope.user_id, scope.session_id)
            trace.degraded = True
            trace.event(f"backend write failed, the turn is kept in the working state and healed later: {exc}")
            log.warning("memory-vec: %s/%s kept in the working state: %s", scope.user_id, scope.session_id, exc)
            if refused is not None:
                raise refused from exc
            return False
        if refused is not None:
            raise refused
        return True

    # ------------------------------------------------------------------ healing
    def heal_user(self, user_id: str) -> int:
        """``heal`` every session of the user the working state holds (``maintain()``:
        a session nobody opens again is healed too). Returns how many messages."""
        return sum(self.heal(self.e.scope(user_id, session)) for session in self.e.state.sessions(user_id))

    def load_healed(self, scope: Scope) -> WorkingState:
        """The session's working state, after ``heal``."""
        state = self.e.state.load(scope.user_id, scope.session_id)
        self.heal(scope, state)
        return state

    def heal(self, scope: Scope, state: WorkingState | None = None) -> int:
        """Once per session and core: re-store messages the working state holds but
        the backend lacks (a process killed between the append and the vector
        write, or an outage, leaves them). Returns how many. A dead letter is never re-queued."""
        key = (scope.user_id, scope.session_id)
        with self._healed_lock:
            if key in self._healed:
                return 0
            self._healed.add(key)
        e = self.e
        try:
            state = state or e.state.load(scope.user_id, scope.session_id)
            if not state.messages:
                return 0
            ids = [m.id for m in state.messages]
            present = {r.id for r in e.writer.get(ids)}  # queued ones too, superseded or not
            present |= {d.record_id for d in e.store.dead_letters(scope.user_id)}
            lost = [i for i, m in enumerate(state.messages) if m.id not in present]
            if not lost:
                return 0
            turns = [(m.role, m.content) for m in state.messages]
            # A lost reply also changes the vector of the stored user message it answers.
            partners = [
                i - 1
                for i in lost
                if i - 1 not in lost and i > 0 and e.embed_text.completes_pair(turns[i - 1 : i], turns[i : i + 1])
            ]
            records = [
                e.message_record(scope, m.id, m.seq, m.role, m.content, m.timestamp, dict(m.metadata))
                for m in (state.messages[i] for i in lost)
            ]
            e.store.validate(records)
            vectors = e.stored_vectors(e.embed_text.plan_window(turns, lost + partners), scope.user_id)
            self._heal_facts(scope, records)  # before the messages, in add_messages' order
            try:
                e.writer.write(records, vectors[: len(lost)])
            except RecordRejectedError as exc:  # dead letters now (kept for a retry); the others are stored
                log.error("memory-vec: heal of %s/%s: %s", scope.user_id, scope.session_id, exc)
            self._restore(scope, [state.messages[i].id for i in partners], vectors[len(lost) :])
            log.warning(
                "memory-vec: re-stored %d message(s) of %s/%s found only in the working state",
                len(records),
                scope.user_id,
                scope.session_id,
            )
            return len(records)
        except BackendError as exc:
            with self._healed_lock:
                self._healed.discard(key)  # try again when the backend is back
            log.warning("memory-vec: could not check the session against the store: %s", exc)
            return 0

    def _heal_facts(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        """The facts and supersedes of re-stored messages, derived again as on their
        first write (fact ids derive from the message, so the same ones).

        A message with any fact in the store is not decided again: its facts
        and supersedes were written before it (add_messages' order), and a new
        decision could supersede what was said after it. A re-derived decision
        that would supersede a record newer than the message is turned round:
        the fact (and its message) is stored as superseded by that record, as
        it would have been had it arrived in time.
        """
        e, cfg = self.e, self.e.config
        trace = TurnTrace("heal", scope.user_id, scope.session_id)
        extracted = [self.resolution.extract(m.role, m.text, trace) for m in messages]
        kept = [[i for i, f in enumerate(facts) if not (f.transient and cfg.skip_transient)] for facts in extracted]
        todo = self._not_arrived(messages, extracted, kept)
        if not todo:
            return
        chosen = [messages[j] for j in todo]
        fact_texts = [extracted[j][i].text for j in todo for i in kept[j]] if e.extractor is not None else []
        vectors = e.embed_documents([*(m.text for m in chosen), *fact_texts], scope.user_id)
        out = self.resolution.resolve(
            scope, chosen, vectors[: len(chosen)], [extracted[j] for j in todo], vectors[len(chosen) :], trace
        )
        stored_updates, turned = _turned_round(out, messages, chosen)
        try:
            if stored_updates:
                e.writer.update(stored_updates)
            if out.fact_records:
                e.writer.write(out.fact_records, np.asarray(out.fact_vectors, dtype=np.float32))
        except RecordRejectedError as exc:  # dead letters now, kept for a retry; the messages still go in
            log.error("memory-vec: heal of %s/%s: %s", scope.user_id, scope.session_id, exc)
        patched = {r.text for r in turned}
        for subject, old_texts, new_text in out.summary_patches:
            if new_text not in patched:
                self.resolution.patch_summary(scope, subject, old_texts, new_text)
        log.warning(
            "memory-vec: re-derived %d fact(s) and %d supersede(s) of %d re-stored message(s) of %s/%s%s",
            len(out.fact_records),
            len(stored_updates),
            len(chosen),
            scope.user_id,
            scope.session_id,
            f"; {len(turned)} stored as superseded by what was said after them" if turned else "",
        )

    def _not_arrived(
        self, messages: Sequence[MemoryRecord], extracted: Sequence[Sequence[Any]], kept: Sequence[Sequence[int]]
    ) -> list[int]:
        """Which re-stored messages need their facts derived again: those with facts
        to keep and none in the store. A message whose fact arrived and was
        superseded since is superseded with it, as supersede() does."""
        if self.e.extractor is None:  # the message is its own fact: it is being re-stored, so it never got there
            return [j for j, idx in enumerate(kept) if idx]
        # Probe more ids than this extraction gave: an LLM extractor need not give the same facts again.
        probes = [
            [fact_id(m.id, i) for i in range(max(_FACT_PROBES, len(facts)))] for m, facts in zip(messages, extracted)
        ]
        present = {r.id: r for r in self.e.writer.get([f for ids in probes for f in ids])}
        todo = []
        for j, (m, ids) in enumerate(zip(messages, probes)):
            arrived = [present[f] for f in ids if f in present]
            if kept[j] and not arrived:
                todo.append(j)
            for fact in arrived:
                if fact.valid_to is not None and m.valid_to is None:
                    m.valid_to, m.superseded_by = fact.valid_to, fact.superseded_by
        return todo

    def _restore(self, scope: Scope, ids: Sequence[str], vectors: np.ndarray) -> bool:
        """Store records of ``scope``'s user again, unchanged, with new vectors."""
        if not ids:
            return True
        e = self.e
        current = {r.id: r for r in e.writer.get(ids) if r.user_id == scope.user_id}
        rows = [i for i, rid in enumerate(ids) if rid in current]
        return e.writer.write([current[ids[i]] for i in rows], vectors[rows]) if rows else True

    def forget_healed(self, user_id: str, session_id: str | None = None) -> None:
        with self._healed_lock:
            self._healed = {
                k for k in self._healed if not (k[0] == user_id and (session_id is None or k[1] == session_id))
            }

    # ------------------------------------------------------------------ folding
    def _fold_lock(self, scope: Scope) -> threading.Lock:
        with self._fold_locks_guard:
            if len(self._fold_locks) > 10_000:  # bounded: drop the idle ones
                self._fold_locks = {k: lk for k, lk in self._fold_locks.items() if lk.locked()}
            return self._fold_locks.setdefault((scope.user_id, scope.session_id), threading.Lock())

    def folds_off_turn(self) -> bool:
        """Whether due folds run on the background worker: ``summary_in_background``,
        or when unset, whenever the summarizer is not an inline one (an LLM)."""
        setting = self.e.config.summary_in_background
        return not getattr(self.e.summarizer, "inline", False) if setting is None else setting

    def _plan(self, state: WorkingState) -> FoldPlan | None:
        cfg = self.e.config
        return plan_fold(
            state.messages,
            summary_tokens=state.summary_tokens,
            folded_through=state.folded_through,
            max_token_limit=cfg.max_token_limit,
            trigger_ratio=cfg.summary_trigger_ratio,
            target_ratio=cfg.fold_target_ratio,
            keep_recent=cfg.keep_recent_turns,
        )

    def _fold_or_schedule(self, scope: Scope, trace: TurnTrace, after: WorkingState | None) -> bool:
        """``after``: the session's state after this turn, if known (no fold due: no read)."""
        if self._plan(after or self.e.state.load(scope.user_id, scope.session_id)) is None:
            return False
        if self.folds_off_turn() and self.folds.schedule(scope):
            trace.event("fold due: runs off the turn (summary_in_background)")
            return False
        return self.fold(scope, trace)

    def _fold_off_turn(self, scope: Scope) -> None:
        trace = TurnTrace("fold", scope.user_id, scope.session_id)
        self.fold(scope, trace)
        trace.emit()

    def _stored(self, scope: Scope, messages: Sequence[StateMessage], trace: TurnTrace) -> bool:
        """A fold takes turns out of the working state, which heal re-stores them
        from: a turn an outage kept there is stored first (heal), or the fold waits."""
        ids = [m.id for m in messages]

        def all_stored() -> bool:
            present = {r.id for r in self.e.writer.get(ids)}
            present |= {d.record_id for d in self.e.store.dead_letters(scope.user_id)}
            return present.issuperset(ids)

        try:
            if not ids or all_stored():
                return True
            self.forget_healed(scope.user_id, scope.session_id)
            self.heal(scope)
            return all_stored()
        except MemoryVecError as exc:
            trace.event(f"fold waits for its turns to be stored: {exc}")
            return False

    def fold(self, scope: Scope, trace: TurnTrace) -> bool:
        """Fold the oldest chunk into the summary when over the trigger.

        The summarizer runs outside any store lock; the commit is a
        compare-and-set, so a concurrent fold of the same chunk is dropped
        instead of folded twice.
        """
        e, cfg = self.e, self.e.config
        lock = self._fold_lock(scope)
        if not lock.acquire(blocking=False):
            return False  # another thread of this process is folding
        try:
            state = e.state.load(scope.user_id, scope.session_id)
            plan = self._plan(state)
            if plan is None:
                return False
            t0 = time.perf_counter()
            name = getattr(e.summarizer, "name", type(e.summarizer).__name__)
            try:
                summary = e.summarizer.summarize(state.summary, plan.messages, max_tokens=cfg.summary_max_tokens)
                if e.counter.count(summary) > cfg.summary_max_tokens:
                    raise SummaryRejectedError("summary over its token budget")
            except Exception as exc:  # noqa: BLE001  # any summarizer failure keeps the old summary
                trace.summarizer_calls.append(
                    SummarizerCall(name, len(plan.messages), time.perf_counter() - t0, False, str(exc))
                )
                trace.event(f"fold refused, previous summary kept, retried next turn: {exc}")
                log.warning("memory-vec: summary fold refused for %s/%s: %s", scope.user_id, scope.session_id, exc)
                return False
            trace.summarizer_calls.append(SummarizerCall(name, len(plan.messages), time.perf_counter() - t0, True))
            if not self._stored(scope, plan.messages, trace):
                return False
            committed = e.state.commit_fold(
                scope.user_id,
                scope.session_id,
                expected_folded_through=plan.expected_folded_through,
                folded_through=plan.folded_through,
                summary=summary,
                summary_tokens=e.counter.count(summary),
                expected_summary=state.summary,
            )
            if not committed:
                trace.event("fold skipped: the summary or the folded turns changed meanwhile (another writer)")
            return committed
        finally:
            lock.release()


@dataclasses.dataclass(frozen=True)
class _TurnVectors:
    """A turn's vectors: stored (one per new message), plain (the message alone: conflicts
    and recall queries), its facts', and the completed user message's new stored vector."""

    vectors: np.ndarray
    plain: np.ndarray
    facts: np.ndarray
    completed: StateMessage | None
    completed_vector: np.ndarray


def _state_after(loaded: WorkingState, seqs: Sequence[int], appended: Sequence[NewMessage]) -> WorkingState | None:
    """The state after the append, not read again, when nothing else was appended in between."""
    if not seqs or seqs[0] != loaded.next_seq:
        return None
    messages = [*loaded.messages, *(StateMessage(s, *dataclasses.astuple(m)) for s, m in zip(seqs, appended))]
    return dataclasses.replace(loaded, next_seq=seqs[-1] + 1, messages=messages)


def _turned_round(
    out: FactOutcome, messages: Sequence[MemoryRecord], chosen: Sequence[MemoryRecord]
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """The updates of stored records a healed decision makes, and the derived records
    turned round: one that would supersede a record newer than itself is stored as
    superseded by the newest of them instead (with its messages)."""
    new_ids = {m.id for m in messages} | {r.id for r in out.fact_records}
    derived = {r.id: r for r in [*out.fact_records, *chosen]}
    stored_updates: list[MemoryRecord] = []
    later: dict[str, list[MemoryRecord]] = {}  # derived record id -> newer records it would supersede
    for u in out.updates:
        if u.id in new_ids:
            continue  # written with the new rows
        n = derived.get(u.superseded_by or "")
        if n is not None and u.timestamp > n.timestamp:
            later.setdefault(n.id, []).append(u)
        else:
            stored_updates.append(u)
    for n_id, newer in later.items():
        n = derived[n_id]
        target = max([r for r in newer if r.kind == n.kind] or newer, key=lambda r: r.timestamp)
        for record in [n, *(m for m in messages if m.id in n.source_ids)]:
            if record.valid_to is None:
                record.valid_to, record.superseded_by = target.timestamp, target.id
    return stored_updates, [derived[i] for i in later]
