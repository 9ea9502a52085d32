"""Vector backends, chosen by ``MemoryConfig.backend``.

One mapping from a name to a factory; drivers are imported lazily inside
each backend module. Sharing one open client between the cores of a process
is the job of :func:`memory_vec._storage.store.open_store`, not of this package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory_vec.backends.base import Backend, BaseBackend, PurgeReport, RecordFilter, ScoredRecord
from memory_vec.backends.memory import InMemoryBackend

if TYPE_CHECKING:
    from memory_vec._model.config import MemoryConfig

__all__ = [
    "BACKEND_FACTORIES",
    "Backend",
    "BaseBackend",
    "InMemoryBackend",
    "PurgeReport",
    "RecordFilter",
    "ScoredRecord",
    "create_backend",
]


def _memory(config: MemoryConfig) -> Backend:
    return InMemoryBackend()


def _guarded(backend: Backend, config: MemoryConfig) -> Backend:
    # Stores outside this process get a timeout and retries on every call.
    from memory_vec.backends.guard import GuardedBackend

    return GuardedBackend(backend, timeout=config.backend_timeout, retries=config.backend_retries)


def _chroma(config: MemoryConfig) -> Backend:
    from memory_vec.backends.chroma import ChromaBackend

    return _guarded(ChromaBackend.from_config(config), config)


def _milvus(config: MemoryConfig) -> Backend:
    from memory_vec.backends.milvus import MilvusBackend

    return _guarded(MilvusBackend.from_config(config), config)


def _sqlite(config: MemoryConfig) -> Backend:
    from memory_vec.backends.sqlite import SQLiteBackend  # <persist_dir>/vectors.sqlite3, one file for every collection

    return SQLiteBackend.from_config(config)


BACKEND_FACTORIES: dict[str, Callable[[MemoryConfig], Backend]] = {
    "memory": _memory,
    "chroma": _chroma,
    "milvus": _milvus,
    "sqlite": _sqlite,
}


def create_backend(config: MemoryConfig) -> Backend:
    """A new backend instance for the config (not shared)."""
    return BACKEND_FACTORIES[config.backend](config)
