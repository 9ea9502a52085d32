"""The read pipeline: candidates (dense + keyword) -> rank
-> neighbours -> assemble within budgets -> ``MemoryContext(..., trace)``.

The rules are in :mod:`memory_vec._rules.ranking` (ranking, BM25) and
:mod:`memory_vec._rules.context` (budgets); this module feeds them from the
embedder, the backend and the store's keyword index. Each result carries its own trace.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memory_vec._model import validate as v
from memory_vec._model.errors import BackendError, InvalidContentError, InvalidInputError
from memory_vec._model.records import MemoryContext, MemoryRecord, RecalledMemory
from memory_vec._model.scope import Scope
from memory_vec._model.trace import TurnTrace
from memory_vec._pipelines.engine import Engine
from memory_vec._pipelines.upkeep import Upkeep
from memory_vec._pipelines.write import WritePath
from memory_vec._rules.bm25 import BM25Index, mentioned_speakers
from memory_vec._rules.context import assemble_context
from memory_vec._rules.dates import DateSpan, record_span, resolve_dates
from memory_vec._rules.event_order import event_order_parts
from memory_vec._rules.facts import is_chinese
from memory_vec._rules.ranking import Candidate, ScorePolicy, dedupe_key, rank
from memory_vec._rules.temporal import parse_relation, residual_question
from memory_vec._storage.keywords import INDEXED_KINDS
from memory_vec.backends.base import RecordFilter, ScoredRecord
from memory_vec.state import WorkingState

__all__ = ["RECALL_KINDS", "ReadPath"]

log = logging.getLogger("memory_vec")

RECALL_KINDS = INDEXED_KINDS
#: Words added to the keyword query by feedback (RM3's usual 10).
FEEDBACK_TERMS = 10


def interleave(lists: Sequence[Sequence[RecalledMemory]], k: int, *, collapse: bool = False) -> list[RecalledMemory]:
    """Round-robin over ranked lists, first occurrence wins, at most ``k``.

    ``collapse``: as one ranking does, a fact and the message it came from
    (or two equal texts) take one slot, though each list holds one of them;
    two facts of one message are two memories and both stay.
    """
    out: list[RecalledMemory] = []
    served: set[str] = set()
    sources: set[str] = set()  # messages a served fact came from
    texts: set[str] = set()
    for rank_ in range(max((len(hits) for hits in lists), default=0)):
        for hits in lists:
            if rank_ >= len(hits) or hits[rank_].id in served:
                continue
            hit = hits[rank_]
            if collapse:
                text = dedupe_key(hit.text)
                if text in texts or hit.id in sources or any(s in served for s in hit.source_ids):
                    continue
                texts.add(text)
                sources.update(hit.source_ids)
            served.add(hit.id)
            out.append(hit)
            if len(out) == k:
                return out
    return out


class ReadPath:
    """``recall`` and ``build_context`` for one engine.

    Args:
        engine: the parts.
        writes: the write path (a session's working state, its unstored messages re-stored first).
        upkeep: told which memories were served (reinforcement).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        writes: WritePath,
        upkeep: Upkeep,
    ) -> None:
        self.e = engine
        self._writes = writes
        self._upkeep = upkeep

    @property
    def threshold(self) -> float:
        """Minimum final score. The embedder's default is a cosine level; with
        hybrid fusion the vector part weighs ``1 - bm25_weight``, so the
        default scales with it: a memory whose cosine alone meets the
        embedder's threshold is never dropped for lacking keywords."""
        cfg = self.e.config
        if cfg.score_threshold is not None:
            return cfg.score_threshold
        vector_share = 1.0 - cfg.ranking.bm25_weight if cfg.hybrid else 1.0
        return float(self.e.embedder.default_threshold) * vector_share

    def ranking_policy(self) -> ScorePolicy:
        c = self.e.config
        return ScorePolicy(
            half_life_days=c.decay_half_life_days,
            recency_weight=c.recency_weight if c.decay_half_life_days else 0.0,
            importance_weight=c.importance_weight,
            bm25_weight=c.ranking.bm25_weight if c.hybrid else 0.0,
            threshold=self.threshold,
        )

    # ------------------------------------------------------------------ recall
    def recall(
        self,
        query: str,
        scope: Scope,
        *,
        k: int | None = None,
        recall_scope: str | None = None,
        filters: Mapping[str, Any] | None = None,
        since: Any = None,
        until: Any = None,
        include_shared: bool | None = None,
    ) -> tuple[list[RecalledMemory], TurnTrace]:
        cfg = self.e.config
        v.check_content(query, max_bytes=cfg.max_content_bytes, field="query")
        k = cfg.recall_k if k is None else v.check_k(k)
        recall_scope = recall_scope or cfg.recall_scope
        if recall_scope not in ("user", "session"):
            raise InvalidInputError(f"scope must be 'user' or 'session', got {recall_scope!r}")
        if include_shared is not None and not isinstance(include_shared, bool):
            raise InvalidInputError(f"include_shared must be True, False or None, got {include_shared!r}")
        where = RecordFilter(
            user_id=scope.user_id,
            session_id=scope.session_id if recall_scope == "session" else None,
            agent_id=cfg.agent_id,
            include_shared=cfg.include_shared if include_shared is None else include_shared,
            kinds=RECALL_KINDS,
            since=v.check_timestamp(since, field="since"),
            until=v.check_timestamp(until, field="until"),
            metadata=v.check_filters(filters),
        )
        trace = self.e.start_trace("recall", scope)
        hits = self._recall(query, k, where, trace)
        trace.emit()
        return hits, trace

    def _recall(self, query: str, k: int, where: RecordFilter, trace: TurnTrace) -> list[RecalledMemory]:
        parts = event_order_parts(query) if self.e.config.ranking.split_order_questions else ()
        if not parts:
            return self._recall_one(query, k, where, trace)
        # An order question needs both events' turns: recall each event on
        # its own next to the whole question, and interleave the lists.
        trace.event(f"order question: {len(parts)} events recalled on their own")
        lists, spent = [], dict(trace.timings)
        for text in (query, *parts):
            trace.timings.clear()
            lists.append(self._recall_one(text, k, where, trace))
            for name, seconds in trace.timings.items():
                spent[name] = spent.get(name, 0.0) + seconds
        trace.timings.clear()
        trace.timings.update(spent)
        hits = interleave(lists, k, collapse=self.ranking_policy().collapse_duplicates)
        trace.recalled = [{"id": h.id, "score": round(h.score, 4), **h.components} for h in hits]
        return hits

    def _recall_one(self, query: str, k: int, where: RecordFilter, trace: TurnTrace) -> list[RecalledMemory]:
        e, cfg = self.e, self.e.config
        with _timed(trace, "embed"):
            vector = e.embed_query(query, where.user_id)
        # A pool that does not grow with k keeps rankings prefix-consistent.
        fetch = max(cfg.ranking.candidate_pool, k * cfg.ranking.candidate_multiplier)
        with _timed(trace, "vector_query"):
            found = {hit.record.id: hit for hit in e.writer.query(vector, k=fetch, where=where)}
        index: BM25Index | None = None
        if (cfg.hybrid or cfg.neighbor_window or cfg.ranking.speaker_boost) and where.user_id is not None:
            with _timed(trace, "text_index"):
                index = e.store.keywords.for_user(where.user_id)
        keyword: dict[str, float] = {}
        if cfg.hybrid and index is not None:
            with _timed(trace, "bm25"):
                keyword = dict(index.search(query, k=fetch, context_weight=cfg.ranking.bm25_context_weight))
                self._add_cosines(keyword, found, vector, where)
        boosts = self._boosts(query, vector, where, found, index, fetch, trace)
        pool = _Pool(found, where, boosts, hybrid=cfg.hybrid, policy=self.ranking_policy())
        feedback = cfg.ranking.keyword_feedback if keyword and index is not None else 0
        with _timed(trace, "rank"):
            hits = pool.ranked(keyword, max(k, feedback))
        if feedback and index is not None:
            with _timed(trace, "feedback"):
                keyword = self._feedback_keywords(
                    query, keyword, hits[:feedback], index, fetch, found, vector, where, trace
                )
                hits = pool.ranked(keyword, k)
        if cfg.neighbor_window and index is not None and hits:
            with _timed(trace, "neighbors"):
                self._attach_neighbors(hits, index, where)
        trace.recalled = [{"id": h.id, "score": round(h.score, 4), **h.components} for h in hits]
        return hits

    def _boosts(
        self,
        query: str,
        vector: np.ndarray,
        where: RecordFilter,
        found: dict[str, ScoredRecord],
        index: BM25Index | None,
        fetch: int,
        trace: TurnTrace,
    ) -> Callable[[MemoryRecord], float]:
        """A candidate's boost: a speaker the query names, a day it asks about
        (whose memories join ``found``)."""
        knobs = self.e.config.ranking
        days, anchor_id = None, None
        if knobs.date_window_boost:
            with _timed(trace, "dates"):
                try:
                    days, anchor_id, asked = self._asked_days(query, vector, where, found, index, fetch)
                except (OverflowError, ValueError):  # days past the calendar's ends (years 1 and 9999)
                    days, anchor_id, asked = None, None, ""
            if days is not None:
                trace.event(
                    f"dates asked about: {days.iso()}"
                    + (f" (anchor {anchor_id})" if anchor_id else "")
                    + (f"; their memories also scored by {asked!r}" if asked else "")
                )
        named = mentioned_speakers(query, index.speakers) if index is not None and knobs.speaker_boost else set()

        def boost(record: MemoryRecord) -> float:
            speaker = (
                knobs.speaker_boost if named and str(record.metadata.get("speaker", "")).casefold() in named else 0.0
            )
            on_day = days is not None and (record.id == anchor_id or self._about(record).overlaps(days))
            return speaker + (knobs.date_window_boost if on_day else 0.0)

        return boost

    def _feedback_keywords(
        self,
        query: str,
        keyword: dict[str, float],
        top: Sequence[RecalledMemory],
        index: BM25Index,
        fetch: int,
        found: dict[str, ScoredRecord],
        vector: np.ndarray,
        where: RecordFilter,
        trace: TurnTrace,
    ) -> dict[str, float]:
        """Pseudo-relevance feedback: the words the top hits share find the
        memories that use them without the question's words."""
        knobs = self.e.config.ranking
        extra = index.feedback_terms(
            [h.id for h in top], n=FEEDBACK_TERMS, exclude=query, min_docs=knobs.keyword_feedback_min_docs
        )
        if not extra:
            return keyword
        weights = {term: w * knobs.keyword_feedback_weight for term, w in extra.items()}
        widened = dict(index.search(query, k=fetch, context_weight=knobs.bm25_context_weight, extra_terms=weights))
        self._add_cosines(widened, found, vector, where)
        trace.event(f"keyword feedback: {len(extra)} words from the top {knobs.keyword_feedback} hits")
        return widened

    def _add_cosines(
        self, keyword: Mapping[str, float], found: dict[str, ScoredRecord], vector: np.ndarray, where: RecordFilter
    ) -> None:
        """Keyword-only candidates still need their cosine: one query by id."""
        missing = tuple(i for i in keyword if i not in found)
        if missing:
            only = dataclasses.replace(where, ids=missing)
            for hit in self.e.writer.query(vector, k=len(missing), where=only):
                found[hit.record.id] = hit

    def _about(self, record: MemoryRecord) -> DateSpan:
        return record_span(record.metadata, self.e.local_time(record.timestamp))

    def _asked_days(
        self,
        query: str,
        vector: np.ndarray,
        where: RecordFilter,
        found: dict[str, ScoredRecord],
        index: BM25Index | None,
        fetch: int,
    ) -> tuple[DateSpan | None, str | None, str]:
        """The days ``query`` asks about, if any, the anchor event's memory, and
        what else the question asks (its memories of those days are scored by
        it too); the days' memories join ``found``.

        "The week after <event>" counts from the event's own date. The anchor
        is the memory that best matches the event's words (BM25) and the whole
        question (cosine), unless the words are a date themselves; it counts
        as asked about too (it is half of what the question relates).
        """
        e = self.e
        now = e.local_time(time.time())
        relation = parse_relation(query)
        anchor_id = None
        if relation is not None:
            dated = resolve_dates(relation.anchor, now)  # "the week before August 3, 2023"
            if dated:
                days = relation.window(dated[0])
            else:
                ranked = index.search(relation.anchor, k=5) if index is not None else []
                if not ranked:
                    return None, None, ""
                anchor_id = max(ranked, key=lambda r: r[1] + (found[r[0]].similarity if r[0] in found else 0.0))[0]
                anchor = (
                    found[anchor_id].record
                    if anchor_id in found
                    else next(iter(e.writer.get([anchor_id], where=dataclasses.replace(where, ids=(anchor_id,)))), None)
                )
                if anchor is None:
                    return None, None, ""
                days = relation.window(self._about(anchor))
        else:
            named = resolve_dates(query, now)
            if not named:
                return None, None, ""
            days = DateSpan(min(s.start for s in named), max(s.end for s in named))
        # Memories of those days were written up to two weeks before (plans)
        # or after (reports) them; each is kept only if it is about them.
        since = datetime.combine(days.start - timedelta(days=14), datetime.min.time(), e.zone).timestamp()
        until = datetime.combine(days.end + timedelta(days=15), datetime.min.time(), e.zone).timestamp()
        narrowed = dataclasses.replace(
            where,
            since=max(since, where.since if where.since is not None else since),
            until=min(until, where.until if where.until is not None else until),
        )
        # "What did Melanie buy the day after <event>?": the event's words pull the
        # question's vector to the anchor, so the days' memories are also scored by
        # what is asked about them, the better of the two counting.
        asked = residual_question(query, relation) if relation is not None else ""
        for probe in ([e.embed_query(asked, where.user_id)] if asked else []) + [vector]:
            for hit in e.writer.query(probe, k=fetch, where=narrowed):
                if self._about(hit.record).overlaps(days):
                    known = found.get(hit.record.id)
                    if known is None or (asked and known.similarity < hit.similarity):
                        found[hit.record.id] = hit
        return days, anchor_id, asked

    def _attach_neighbors(self, hits: list[RecalledMemory], index: BM25Index, where: RecordFilter) -> None:
        """Attach the turns around each hit (same session) as context, not hits."""
        window = self.e.config.neighbor_window
        around = {h.id: index.neighbor_ids(h.id, window) for h in hits}
        wanted = {i for before, after in around.values() for i in before + after}
        if not wanted:
            return
        visible = RecordFilter(user_id=where.user_id, kinds=("message",))
        by_id = {r.id: r for r in self.e.writer.get(sorted(wanted), where=visible)}
        for hit in hits:
            before, after = around[hit.id]
            hit.neighbors = [RecalledMemory.from_record(by_id[i], score=0.0) for i in before + after if i in by_id]

    # ------------------------------------------------------------------ context
    def build_context(self, query: str | None, scope: Scope, *, k: int | None = None) -> MemoryContext:
        """Summary, recent turns and relevant memories, each within budget.

        When the backend is unreachable the context still comes back, with
        no relevant memories and ``degraded=True`` (also in the trace).
        """
        e = self.e
        if query is not None and not isinstance(query, str):
            raise InvalidContentError(f"query must be a string or None, got {type(query).__name__}")
        state = self._writes.load_healed(scope)
        relevant: list[RecalledMemory] = []
        degraded = False
        trace: TurnTrace | None = None
        if query is not None and query.strip():
            asked, limit = query, e.config.max_content_bytes
            if len(query) > limit // 4 and len(query.encode("utf-8", "surrogatepass")) > limit:
                # A pasted document must not fail the turn it is asked in: recall by its first part.
                asked = query.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
            try:
                relevant, trace = self.recall(asked, scope, k=k)
                if asked is not query:
                    trace.event(
                        f"query of {len(query.encode('utf-8', 'surrogatepass'))} bytes: recalled by its "
                        f"first {limit} (max_content_bytes)"
                    )
                self._upkeep.note_recalled([h.id for h in relevant])
            except BackendError as exc:
                degraded = True
                log.warning("memory-vec: recall unavailable, answering without it: %s", exc)
        ctx = self._assemble(state, relevant, degraded, query)
        if trace is None:
            trace = TurnTrace("build_context", scope.user_id, scope.session_id)
        trace.operation = "build_context"
        trace.tokens = dict(ctx.tokens)
        trace.degraded = trace.degraded or degraded
        e.traces.set(trace)
        ctx.trace = trace
        trace.emit()
        return ctx

    def _assemble(
        self, state: WorkingState, relevant: list[RecalledMemory], degraded: bool, query: str | None
    ) -> MemoryContext:
        cfg = self.e.config
        sample = (query or "") + " " + " ".join(m.content for m in state.messages[-4:])
        return assemble_context(
            summary=state.summary,
            messages=state.messages,
            relevant=relevant,
            counter=self.e.counter,
            max_token_limit=cfg.max_token_limit,
            summary_max_tokens=cfg.summary_max_tokens,
            relevant_token_limit=cfg.relevant_token_limit,
            relevant_item_max_tokens=cfg.relevant_item_max_tokens,
            chinese=is_chinese(sample),
            degraded=degraded,
            user_id=state.user_id,
        )


@contextlib.contextmanager
def _timed(trace: TurnTrace, name: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        trace.timings[name] = time.perf_counter() - t0


class _Pool:
    """One recall's candidates, built once from ``found``; ranking again with
    other keyword scores (feedback) adds the new ones and rescores bm25."""

    def __init__(
        self,
        found: dict[str, ScoredRecord],
        where: RecordFilter,
        boost: Callable[[MemoryRecord], float],
        *,
        hybrid: bool,
        policy: ScorePolicy,
    ) -> None:
        self.found, self.where, self.boost, self.hybrid, self.policy = found, where, boost, hybrid, policy
        self.candidates: dict[str, Candidate] = {}

    def ranked(self, keyword: Mapping[str, float], top: int) -> list[RecalledMemory]:
        for record in [h.record for i, h in self.found.items() if i not in self.candidates]:
            if self.where.matches(record):
                self.candidates[record.id] = Candidate(
                    record, self.found[record.id].similarity, boost=self.boost(record)
                )
        for c in self.candidates.values():
            c.bm25 = keyword.get(c.record.id, 0.0) if self.hybrid else None
        return rank(list(self.candidates.values()), policy=self.policy, now=time.time(), k=top)
