"""The read path of :class:`MemoryCore`: recall and context assembly.

Kept apart from ``core.py`` (the write path and orchestration) so each file
stays readable. The rules are in :mod:`memory_vec.recall` (ranking, BM25)
and :mod:`memory_vec.context` (budgets); this mixin feeds them from the
embedder, the backend, the pending writes and the per-user keyword index.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import _validate as v
from .backends import RecordFilter, ScoredRecord
from .context import assemble_context
from .errors import BackendError, InvalidInputError
from .facts import is_chinese
from .recall.bm25 import IndexedDoc, mentioned_speakers, registry as _text_indexes
from .recall.ranking import Candidate, RankingPolicy, rank
from .records import MemoryContext, RecalledMemory
from .state import WorkingState
from .trace import TurnTrace

if TYPE_CHECKING:
    from .core import MemoryCore

__all__ = ["MemoryRecall", "RECALL_KINDS"]

log = logging.getLogger("memory_vec")

RECALL_KINDS = ("message", "fact")


class MemoryRecall:
    """Mixin: every method runs on a :class:`MemoryCore`."""

    @property
    def threshold(self: MemoryCore) -> float:
        """Minimum final score. The embedder's default is a cosine level; with
        hybrid fusion the vector part weighs ``1 - bm25_weight``, so the
        default scales with it: a memory whose cosine alone meets the
        embedder's threshold is never dropped for lacking keywords."""
        t = self.config.score_threshold
        if t is not None:
            return t
        vector_share = 1.0 - self.config.bm25_weight if self.config.hybrid else 1.0
        return self.embedder.default_threshold * vector_share

    def _ranking_policy(self: MemoryCore) -> RankingPolicy:
        c = self.config
        return RankingPolicy(
            half_life_days=c.decay_half_life_days,
            recency_weight=c.recency_weight if c.decay_half_life_days else 0.0,
            importance_weight=c.importance_weight,
            bm25_weight=c.bm25_weight if c.hybrid else 0.0,
            threshold=self.threshold,
        )

    # ------------------------------------------------------------------ reads
    def recall(
        self: MemoryCore,
        query: str,
        *,
        k: int | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        since: Any = None,
        until: Any = None,
        user_id: str | None = None,
        include_shared: bool | None = None,
    ) -> list[RecalledMemory]:
        """The most relevant memories for ``query``, best first.

        Args:
            query: the text to recall for (usually the new user message).
            k: how many; default ``config.recall_k``.
            scope: ``"user"`` (all of the user's sessions, default) or
                ``"session"`` (only ``session_id`` or the config's session).
            filters: equality conditions on the caller's metadata.
            since, until: time range (datetime or epoch seconds), inclusive.
            include_shared: also recall agent/global shared memories.

        Scores are in [0, 1], higher is better; memories under
        ``score_threshold`` are dropped. Never returns another user's
        private memories.
        """
        v.check_content(query, max_bytes=self.config.max_content_bytes, field="query")
        k = self.config.recall_k if k is None else v.check_k(k)
        scope = scope or self.config.recall_scope
        if scope not in ("user", "session"):
            raise InvalidInputError(f"scope must be 'user' or 'session', got {scope!r}")
        user, session = self._scope(user_id, session_id)
        where = RecordFilter(
            user_id=user,
            session_id=session if scope == "session" else None,
            agent_id=self.config.agent_id,
            include_shared=self.config.include_shared if include_shared is None else include_shared,
            kinds=RECALL_KINDS,
            since=v.check_timestamp(since, field="since"),
            until=v.check_timestamp(until, field="until"),
            metadata=v.check_filters(dict(filters) if filters is not None else None),
        )
        trace = self._start("recall", user, session)
        hits = self._recall(query, k, where, trace)
        trace.emit()
        return hits

    def _recall(self: MemoryCore, query: str, k: int, where: RecordFilter, trace: TurnTrace) -> list[RecalledMemory]:
        cfg = self.config
        t0 = time.perf_counter()
        vector = self._embed_query(query)
        trace.timings["embed"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        # A pool that does not grow with k keeps rankings prefix-consistent.
        fetch = max(cfg.candidate_pool, k * cfg.candidate_multiplier)
        found: dict[str, ScoredRecord] = {}
        for hit in self.backend.query(vector, k=fetch, where=where):
            found[hit.record.id] = hit
        for hit in self.writer.pending_matches(vector, where):
            found[hit.record.id] = hit
        trace.timings["vector_query"] = time.perf_counter() - t0
        index = None
        if (cfg.hybrid or cfg.neighbor_window or cfg.speaker_boost) and where.user_id is not None:
            t0 = time.perf_counter()
            index = _text_indexes.get(id(self.backend), where.user_id, self._load_text_index)
            trace.timings["text_index"] = time.perf_counter() - t0
        keyword: dict[str, float] = {}
        if cfg.hybrid and index is not None:
            t0 = time.perf_counter()
            keyword = dict(index.search(query, k=fetch, context_weight=cfg.bm25_context_weight))
            missing = tuple(i for i in keyword if i not in found)
            if missing:  # keyword-only candidates still need their cosine
                only = dataclasses.replace(where, ids=missing)
                for hit in self.backend.query(vector, k=len(missing), where=only):
                    found[hit.record.id] = hit
            trace.timings["bm25"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        named = mentioned_speakers(query, index.speakers) if index is not None and cfg.speaker_boost else set()
        records = self.writer.overlay([h.record for h in found.values()])
        candidates = [
            Candidate(
                record,
                found[record.id].similarity,
                bm25=keyword.get(record.id, 0.0) if cfg.hybrid else None,
                boost=cfg.speaker_boost if named and str(record.metadata.get("speaker", "")).casefold() in named else 0.0,
            )
            for record in records
            if where.matches(record)
        ]
        hits = rank(candidates, policy=self._ranking_policy(), now=time.time(), k=k)
        trace.timings["rank"] = time.perf_counter() - t0
        if cfg.neighbor_window and index is not None and hits:
            t0 = time.perf_counter()
            self._attach_neighbors(hits, index, where)
            trace.timings["neighbors"] = time.perf_counter() - t0
        trace.recalled = [{"id": h.id, "score": round(h.score, 4), **h.components} for h in hits]
        return hits

    def _load_text_index(self: MemoryCore, user: str) -> list[IndexedDoc]:
        where = RecordFilter(user_id=user, kinds=RECALL_KINDS, include_superseded=True)
        return [IndexedDoc.from_record(r) for r in self.backend.scan(where)]

    def _attach_neighbors(self: MemoryCore, hits: list[RecalledMemory], index: Any, where: RecordFilter) -> None:
        """Attach the turns around each hit (same session) as context, not hits."""
        window = self.config.neighbor_window
        around = {h.id: index.neighbor_ids(h.id, window) for h in hits}
        wanted = {i for before, after in around.values() for i in before + after}
        if not wanted:
            return
        visible = RecordFilter(user_id=where.user_id, kinds=("message",))
        by_id = {r.id: r for r in self.backend.get(sorted(wanted), where=visible)}
        for hit in hits:
            before, after = around[hit.id]
            hit.neighbors = [
                RecalledMemory.from_record(by_id[i], score=0.0) for i in before + after if i in by_id
            ]

    def build_context(
        self: MemoryCore,
        query: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        k: int | None = None,
    ) -> MemoryContext:
        """Summary, recent turns and relevant memories, each within budget.

        When the backend is unreachable the context still comes back, with
        no relevant memories and ``degraded=True`` (also in the trace).
        """
        user, session = self._scope(user_id, session_id)
        state = self.state.load(user, session)
        self._heal_session(state)
        relevant: list[RecalledMemory] = []
        degraded = False
        if query is not None and query.strip():
            try:
                relevant = self.recall(query, k=k, session_id=session, user_id=user)
                self._note_recalled([h.id for h in relevant])
            except BackendError as exc:
                degraded = True
                log.warning("memory-vec: recall unavailable, answering without it: %s", exc)
        trace = self.last_trace if self.last_trace and self.last_trace.operation == "recall" else None
        ctx = self._assemble(state, relevant, degraded, query)
        trace = trace or self._start("build_context", user, session)
        trace.operation = "build_context"
        trace.tokens = dict(ctx.tokens)
        trace.degraded = trace.degraded or degraded
        self.last_trace = trace
        trace.emit()
        return ctx

    def _assemble(
        self: MemoryCore, state: WorkingState, relevant: list[RecalledMemory], degraded: bool, query: str | None
    ) -> MemoryContext:
        cfg = self.config
        sample = (query or "") + " " + " ".join(m.content for m in state.messages[-4:])
        return assemble_context(
            summary=state.summary,
            messages=state.messages,
            relevant=relevant,
            counter=self.counter,
            max_token_limit=cfg.max_token_limit,
            summary_max_tokens=cfg.summary_max_tokens,
            relevant_token_limit=cfg.relevant_token_limit,
            relevant_item_max_tokens=cfg.relevant_item_max_tokens,
            chinese=is_chinese(sample),
            degraded=degraded,
        )
