"""Vector backends, chosen by ``MemoryConfig.backend``.

One mapping from a name to a factory; drivers are imported lazily inside
each backend module. Backends are shared per process and per location, so a
new ``MemoryCore`` per request reuses the open client.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .base import Backend, BaseBackend, RecordFilter, ScoredRecord
from .memory import InMemoryBackend

if TYPE_CHECKING:
    from ..config import MemoryConfig

__all__ = [
    "Backend",
    "BaseBackend",
    "RecordFilter",
    "ScoredRecord",
    "InMemoryBackend",
    "create_backend",
    "shared_backend",
    "release_shared_backends",
    "BACKEND_FACTORIES",
]


def _memory(config: MemoryConfig) -> Backend:
    return InMemoryBackend()


def _guarded(backend: Backend, config: MemoryConfig) -> Backend:
    # Stores outside this process get a timeout and retries on every call.
    from .guard import GuardedBackend

    return GuardedBackend(backend, timeout=config.backend_timeout, retries=config.backend_retries)


def _chroma(config: MemoryConfig) -> Backend:
    from .chroma import ChromaBackend

    return _guarded(ChromaBackend.from_config(config), config)


def _milvus(config: MemoryConfig) -> Backend:
    from .milvus import MilvusBackend

    return _guarded(MilvusBackend.from_config(config), config)


BACKEND_FACTORIES: dict[str, Callable[[MemoryConfig], Backend]] = {
    "memory": _memory,
    "chroma": _chroma,
    "milvus": _milvus,
}

_shared: dict[tuple[Any, ...], Backend] = {}
_shared_lock = threading.Lock()


def create_backend(config: MemoryConfig) -> Backend:
    """A new backend instance for the config (not shared)."""
    return BACKEND_FACTORIES[config.backend](config)


def _location(config: MemoryConfig) -> tuple[Any, ...]:
    where = config.url or os.path.abspath(config.persist_dir)
    return (config.backend, where, config.collection, repr(sorted(config.backend_options.items())))


def shared_backend(config: MemoryConfig) -> Backend:
    """The process-wide backend for this config's location, opened once."""
    key = _location(config)
    with _shared_lock:
        backend = _shared.get(key)
        if backend is None:
            backend = _shared[key] = create_backend(config)
        return backend


def release_shared_backends() -> None:
    """Close and forget every shared backend (tests, shutdown)."""
    with _shared_lock:
        backends = list(_shared.values())
        _shared.clear()
    for backend in backends:
        try:
            backend.close()
        except Exception:  # closing is best effort at shutdown
            pass
