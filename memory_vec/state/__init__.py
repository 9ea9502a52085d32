"""Working-state stores: in memory, SQLite (default for persistent backends), Redis."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from .base import NewMessage, StateMessage, StateStore, WorkingState
from .memory import InMemoryStateStore
from .sqlite import SQLiteStateStore

if TYPE_CHECKING:
    from ..config import MemoryConfig

__all__ = [
    "StateStore",
    "WorkingState",
    "StateMessage",
    "NewMessage",
    "InMemoryStateStore",
    "SQLiteStateStore",
    "create_state_store",
    "shared_state_store",
    "release_shared_state_stores",
]


def resolve_state_kind(config: MemoryConfig) -> str:
    if config.state != "auto":
        return config.state
    if config.redis_url:
        return "redis"
    return "memory" if config.backend == "memory" else "sqlite"


def create_state_store(config: MemoryConfig) -> StateStore:
    kind = resolve_state_kind(config)
    if kind == "memory":
        return InMemoryStateStore()
    if kind == "sqlite":
        return SQLiteStateStore(os.path.join(config.persist_dir, "state.sqlite3"))
    from .redis import RedisStateStore

    assert config.redis_url is not None
    return RedisStateStore(config.redis_url, namespace=config.collection, timeout=config.backend_timeout)


_shared: dict[tuple[Any, ...], StateStore] = {}
_lock = threading.Lock()


def shared_state_store(config: MemoryConfig) -> StateStore:
    kind = resolve_state_kind(config)
    where = config.redis_url if kind == "redis" else os.path.abspath(config.persist_dir)
    key = (kind, where, config.collection if kind != "sqlite" else "", config.backend)
    with _lock:
        store = _shared.get(key)
        if store is None:
            store = _shared[key] = create_state_store(config)
        return store


def release_shared_state_stores() -> None:
    with _lock:
        stores = list(_shared.values())
        _shared.clear()
    for store in stores:
        try:
            store.close()
        except Exception:  # best effort at shutdown
            pass
