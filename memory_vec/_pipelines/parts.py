"""``CoreParts``: the parts one :class:`~memory_vec.MemoryCore` works with, for
the package's own tools (the CLI, ``reembed``) and, through
:func:`memory_vec.testing.parts`, for tests and benchmarks.

Not the user API: a core's store, backend, working state and writer are its
internals (0.1 exposed them as ``MemoryCore.store`` and the like; those
properties are deprecated in 0.2). A live view: after ``switch_embedder`` it
shows the new model, so nobody holds a stale part.
"""

from __future__ import annotations

from memory_vec._pipelines.engine import Engine
from memory_vec._rules.conflict import ConflictResolver, FactExtractor
from memory_vec._rules.summary import Summarizer
from memory_vec._rules.tokens import TokenCounter
from memory_vec._storage.store import Store
from memory_vec._storage.writer import RecordWriter
from memory_vec.backends.base import Backend
from memory_vec.embeddings import Embedder
from memory_vec.state import StateStore

__all__ = ["CoreParts"]


class CoreParts:
    """A read-only view of one core's parts (its engine's)."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def store(self) -> Store:
        """The store: backend, working state, writer and keyword index of the collection."""
        return self._engine.store

    @property
    def backend(self) -> Backend:
        return self._engine.backend

    @property
    def state(self) -> StateStore:
        """The working-state store (summaries, recent turns, the write-ahead log)."""
        return self._engine.state

    @property
    def writer(self) -> RecordWriter:
        return self._engine.writer

    @property
    def embedder(self) -> Embedder:
        return self._engine.embedder

    @property
    def counter(self) -> TokenCounter:
        return self._engine.counter

    @property
    def summarizer(self) -> Summarizer:
        return self._engine.summarizer

    @property
    def extractor(self) -> FactExtractor | None:
        return self._engine.extractor

    @property
    def resolver(self) -> ConflictResolver:
        return self._engine.resolver

    def switch_embedder(self, embedder: Embedder) -> None:
        """Use another model from now on (after ``reembed``); the core's cached vectors go."""
        self._engine.switch_embedder(embedder)
