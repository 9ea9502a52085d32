"""``Engine``: the parts one core works with and the few helpers every
pipeline shares (scopes, traces, embedding with a small cache, records).

The pipelines (:mod:`~memory_vec.write_path`, :mod:`~memory_vec.read_path`,
:mod:`~memory_vec.resolution`, :mod:`~memory_vec.management`,
:mod:`~memory_vec.upkeep`) take an engine as their one explicit input; the
stateful parts (backend, working state, writer, keyword index) belong to
its :class:`~memory_vec.store.Store`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from .backends.base import Backend
from .config import MemoryConfig
from .conflict import ConflictResolver, FactExtractor
from .embed_text import EmbedTextPolicy
from .embeddings import Embedder
from .facts import analyze
from .privacy import Redactor
from .records import MemoryRecord
from .scope import Scope
from .state import StateStore
from .store import Store
from .summary import Summarizer
from .tokens import TokenCounter
from .trace import TraceSlot, TurnTrace
from .writer import RecordWriter

__all__ = ["Engine", "VectorCache"]


class VectorCache:
    """Vectors of texts seen in the last turns, so one text embeds once."""

    def __init__(self, size: int = 64) -> None:
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vec = self._data.get(text)
            if vec is not None:
                self._data.move_to_end(text)
            return vec

    def put(self, text: str, vector: np.ndarray) -> None:
        with self._lock:
            self._data[text] = vector
            self._data.move_to_end(text)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class Engine:
    """The parts of one core. Built by :class:`~memory_vec.core.MemoryCore`."""

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
        self.embed_text = EmbedTextPolicy(contextual=config.contextual_embedding)
        self.traces = TraceSlot()
        self.doc_cache = VectorCache()
        self.query_cache = VectorCache()

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

    def start_trace(self, operation: str, scope: Scope) -> TurnTrace:
        trace = TurnTrace(operation, scope.user_id, scope.session_id)
        self.traces.set(trace)
        return trace

    # --- embedding ------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        vectors: list[np.ndarray | None] = [self.doc_cache.get(t) for t in texts]
        missing = [i for i, vec in enumerate(vectors) if vec is None]
        if missing:
            fresh = self.embedder.embed_documents([texts[i] for i in missing])
            for i, vec in zip(missing, fresh):
                vectors[i] = vec
                self.doc_cache.put(texts[i], vec)
        if not texts:
            return np.zeros((0, int(self.embedder.dimension)), dtype=np.float32)
        return np.stack([vec for vec in vectors if vec is not None])

    def embed_query(self, text: str) -> np.ndarray:
        if self.embedder.symmetric:
            vector: np.ndarray = self.embed_documents([text])[0]
            return vector
        cached = self.query_cache.get(text)
        if cached is None:
            cached = self.embedder.embed_query(text)
            self.query_cache.put(text, cached)
        return cached

    def switch_embedder(self, embedder: Embedder) -> None:
        """Use another model from now on (after ``reembed``); caches go."""
        self.embedder = embedder
        self.doc_cache.clear()
        self.query_cache.clear()

    # --- records --------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """PII goes before anything is embedded or stored (``redact_pii``)."""
        return text if self.redactor is None else self.redactor.redact(text)

    @staticmethod
    def importance(role: str, content: str) -> float:
        value = analyze(content).value
        return round(min(1.0, value + (0.1 if role == "user" else 0.0)), 3)

    def message_record(
        self, scope: Scope, record_id: str, seq: int, role: str, content: str, timestamp: float,
        metadata: dict[str, Any],
    ) -> MemoryRecord:
        return MemoryRecord(
            id=record_id, text=content, role=role, user_id=scope.user_id, session_id=scope.session_id,
            timestamp=timestamp, kind="message", seq=seq, agent_id=self.config.agent_id,
            importance=self.importance(role, content), metadata=metadata,
        )

    def written(self, user_id: str, records: Sequence[MemoryRecord]) -> None:
        """Keep this process's keyword index in step with new records."""
        self.store.keywords.added(user_id, records)

    def deleted(self, user_id: str) -> None:
        """Records of the user were deleted: every process rebuilds its keywords."""
        self.store.keywords.deleted(user_id)
