"""``Engine``: the parts one core works with and the few helpers every
pipeline shares (scopes, traces, embedding with a small cache, records).

The pipelines (:mod:`~memory_vec._pipelines.write`, :mod:`~memory_vec._pipelines.read`,
:mod:`~memory_vec._pipelines.resolution`, :mod:`~memory_vec._pipelines.management`,
:mod:`~memory_vec._pipelines.upkeep`) take an engine as their one explicit input; the
stateful parts (backend, working state, writer, keyword index) belong to
its :class:`~memory_vec._storage.store.Store`.
"""

from __future__ import annotations

import logging
import zoneinfo
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memory_vec._model.config import MemoryConfig
from memory_vec._model.errors import BackendError, EmbeddingModelMismatchError
from memory_vec._model.records import MemoryRecord, in_zone
from memory_vec._model.scope import Scope
from memory_vec._model.trace import TraceSlot, TurnTrace
from memory_vec._pipelines.embed_text import POLICY_SEPARATOR, EmbedTextPolicy, VectorPlan
from memory_vec._rules.conflict import ConflictResolver, FactExtractor
from memory_vec._rules.dates import event_span
from memory_vec._rules.facts import analyze
from memory_vec._rules.privacy import Redactor
from memory_vec._rules.summary import Summarizer
from memory_vec._rules.tokens import TokenCounter
from memory_vec._storage.store import Store
from memory_vec._storage.vector_cache import VectorCache
from memory_vec._storage.writer import RecordWriter
from memory_vec.backends.base import Backend, RecordFilter
from memory_vec.embeddings import Embedder
from memory_vec.state import StateStore, WorkingState

__all__ = ["Engine", "VectorCache"]

log = logging.getLogger("memory_vec")


class Engine:
    """The parts of one core. Built by :class:`~memory_vec._core.MemoryCore`."""

    def __init__(
        self,
        config: MemoryConfig,
        *,
        store: Store,
        embedder: Embedder,
        counter: TokenCounter,
        summarizer: Summarizer,
        extractor: FactExtractor | None,
        resolver: ConflictResolver,
        redactor: Redactor | None,
    ) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self.counter = counter
        self.summarizer = summarizer
        self.extractor = extractor
        self.resolver = resolver
        self.redactor = redactor
        self.embed_text = EmbedTextPolicy.from_config(config)
        self.traces = TraceSlot()
        self.zone = zoneinfo.ZoneInfo(config.timezone)
        # the store's: per-request cores of one process reuse each other's vectors
        self.doc_cache, self.query_cache = store.vector_caches(config.embedding_cache_size)
        self.open_store()

    # --- the store's parts ----------------------------------------------------------
    @property
    def backend(self) -> Backend:
        return self.store.backend

    @property
    def state(self) -> StateStore:
        return self.store.state

    @property
    def writer(self) -> RecordWriter:
        return self.store.writer

    # --- scopes and traces ----------------------------------------------------------
    def scope(self, user_id: str | None = None, session_id: str | None = None) -> Scope:
        return Scope.resolve(self.config, user_id, session_id)

    def first_seq(self, scope: Scope, state: WorkingState) -> int:
        """The lowest seq the session's next message may take. A state that has
        never been written is new, or was lost while its messages stayed
        stored (a Redis without persistence restarted, a state file removed):
        seqs go on past the stored ones, so export, import and neighbour
        windows never see two messages with one seq. One scan, on a session's
        first turn only (an empty one for a new session). With the backend
        down the turn goes on from seq 1 (heal stores it later)."""
        return 1 if state.next_seq > 1 or state.messages else self.next_stored_seq(scope)

    def next_stored_seq(self, scope: Scope) -> int:
        """One past the highest seq of the session's stored messages (1 when none;
        1 too, with a warning, when the backend cannot be read)."""
        try:
            stored = self.writer.scan(
                RecordFilter(
                    scope.user_id, scope.session_id, kinds=("message",), include_superseded=True, include_archived=True
                )
            )
        except BackendError as exc:
            log.warning("memory-vec: could not read the stored seqs of %s/%s: %s", scope.user_id, scope.session_id, exc)
            return 1
        return max((r.seq for r in stored), default=0) + 1

    def drop_from_state(self, records: Sequence[MemoryRecord]) -> None:
        """Before deleting records: their messages leave the sessions' recent
        windows, or the next heal would take them for lost writes and store
        them again (a deleted or expired memory back, under its old id)."""
        by_session: dict[tuple[str, str], list[str]] = {}
        for r in records:
            if r.kind == "message":
                by_session.setdefault((r.user_id, r.session_id), []).append(r.id)
        for (user_id, session_id), ids in by_session.items():
            self.state.drop_messages(user_id, session_id, ids)

    def start_trace(self, operation: str, scope: Scope) -> TurnTrace:
        trace = TurnTrace(operation, scope.user_id, scope.session_id)
        self.traces.set(trace)
        return trace

    # --- embedding ------------------------------------------------------------------
    def open_store(self) -> None:
        """Open the store for this embedder's vectors under this policy (the
        collection records both; another one raises a mismatch naming the fix).

        A store made by an earlier memory-vec (the ``"text"`` method, recorded
        as the bare model id) keeps working when the config leaves the policy
        at its defaults: it is opened with the policy it was made with, and a
        warning names the migration (``memory-vec reembed``)."""
        space = self.embed_text.space_id(self.embedder.model_id)
        try:
            self.store.open(dimension=int(self.embedder.dimension), model_id=space)
        except EmbeddingModelMismatchError as exc:
            if POLICY_SEPARATOR not in str(exc):  # neither side is a tagged policy: a plain model mismatch
                raise
            if self._open_with_earlier_policy():
                return
            raise EmbeddingModelMismatchError(
                f"{exc} (The part after {POLICY_SEPARATOR!r} is the stored-vector policy: contextual_method="
                f"{self.config.contextual_method!r}, contextual_chars / contextual_weight. A collection of the "
                "same model made by another policy, e.g. by an earlier memory-vec (contextual_method='text', "
                "contextual_chars=500), is migrated in place by `memory-vec reembed --model "
                f"{self.config.embedding_model}` with these settings, or opened as it is with the settings it "
                "was made with.)"
            ) from exc

    def _open_with_earlier_policy(self) -> bool:
        if self.config.chose_vector_policy or not self.embed_text.contextual:
            return False
        earlier = EmbedTextPolicy.earlier_default()
        try:
            self.store.open(dimension=int(self.embedder.dimension), model_id=earlier.space_id(self.embedder.model_id))
        except EmbeddingModelMismatchError:
            return False
        self.embed_text = earlier
        log.warning(
            "memory-vec: collection %r was made by an earlier memory-vec (stored vectors of the 'text' method); "
            "it is used as it is. `memory-vec reembed --model %s` migrates it to the current default ('pair'), "
            "whose turns embed about a third less (benchmarks/RESULTS.md, 'Turn at the embedding floor').",
            self.store.collection,
            self.config.embedding_model,
        )
        return True

    def embed_documents(self, texts: Sequence[str], owner: str | None = None) -> np.ndarray:
        """Vectors of ``texts``: cached ones reused, each missing text embedded
        once, all missing texts in one embedder call. ``owner``: the user
        whose texts they are (forgetting the user drops the cached vectors)."""
        dimension = int(self.embedder.dimension)
        if not texts:
            return np.zeros((0, dimension), dtype=np.float32)
        model = self.embedder.model_id
        distinct = list(dict.fromkeys(texts))
        found = {t: v for t, v in self.doc_cache.get_many(distinct, model).items() if v.shape == (dimension,)}
        missing = [t for t in distinct if t not in found]
        if missing:
            fresh = dict(zip(missing, self.embedder.embed_documents(missing)))
            found.update(fresh)
            self.doc_cache.put_many(fresh, model, owner)
        return np.stack([found[t] for t in texts])

    def embed_query(self, text: str, owner: str | None = None) -> np.ndarray:
        if self.embedder.symmetric:
            vector: np.ndarray = self.embed_documents([text], owner)[0]
            return vector
        cached = self.query_cache.get(text, self.embedder.model_id)
        if cached is None or cached.shape != (int(self.embedder.dimension),):
            cached = self.embedder.embed_query(text)
            self.query_cache.put(text, cached, self.embedder.model_id, owner)
        return cached

    def stored_vectors(self, plan: VectorPlan, owner: str | None = None) -> np.ndarray:
        """The stored vectors a plan of the policy describes."""
        return plan.vectors(self.embed_documents(plan.texts, owner))

    def record_vectors(self, records: Sequence[MemoryRecord], known: Sequence[MemoryRecord] = ()) -> np.ndarray:
        """Stored vectors of records (import), by the one policy."""
        owners = {r.user_id for r in records}
        owner = owners.pop() if len(owners) == 1 else None
        return self.stored_vectors(self.embed_text.plan_records(records, known), owner)

    def flush(self) -> None:
        """Recall counts written, and the vectors put so far in the shared tier."""
        self.writer.flush()
        self.doc_cache.flush()
        self.query_cache.flush()

    def forget_cached_vectors(self, user_id: str) -> int:
        """Drop the cached vectors of the user's texts, here and in the shared tier."""
        return self.doc_cache.forget_owner(user_id) + self.query_cache.forget_owner(user_id)

    def switch_embedder(self, embedder: Embedder) -> None:
        """Use another model from now on (after ``reembed``); caches go."""
        self.embedder = embedder
        self.doc_cache.clear()
        self.query_cache.clear()
        self.open_store()

    # --- records --------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """PII goes before anything is embedded or stored (``redact_pii``)."""
        return text if self.redactor is None else self.redactor.redact(text)

    @staticmethod
    def importance(role: str, content: str) -> float:
        value = analyze(content).value
        return round(min(1.0, value + (0.1 if role == "user" else 0.0)), 3)

    def message_record(
        self,
        scope: Scope,
        record_id: str,
        seq: int,
        role: str,
        content: str,
        timestamp: float,
        metadata: dict[str, Any],
    ) -> MemoryRecord:
        if self.config.resolve_dates and "event_date" not in metadata:
            span = event_span(content, self.local_time(timestamp))
            if span is not None:
                metadata = {**metadata, "event_date": span.iso()}
        return MemoryRecord(
            id=record_id,
            text=content,
            role=role,
            user_id=scope.user_id,
            session_id=scope.session_id,
            timestamp=timestamp,
            kind="message",
            seq=seq,
            agent_id=self.config.agent_id,
            importance=self.importance(role, content),
            metadata=metadata,
        )

    def local_time(self, timestamp: float) -> datetime:
        """``timestamp`` in the configured time zone."""
        return in_zone(timestamp, self.zone)
