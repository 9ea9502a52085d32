"""Working-state stores: in memory, SQLite (default for persistent backends), Redis.

A store belongs to one collection: the caller that owns the collection (the
:class:`~memory_vec._storage.store.Store`) creates it with :func:`create_state_store`
and closes it. There is no process-wide registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_vec._model.errors import ConfigError
from memory_vec.state._legacy import claim_legacy_sessions, legacy_state_path
from memory_vec.state.base import (
    DeadLetter,
    NewMessage,
    StateMessage,
    StateStore,
    WorkingState,
)
from memory_vec.state.memory import InMemoryStateStore
from memory_vec.state.sqlite import SQLiteStateStore, sqlite_state_path

if TYPE_CHECKING:
    from memory_vec._model.config import MemoryConfig

__all__ = [
    "DeadLetter",
    "InMemoryStateStore",
    "NewMessage",
    "SQLiteStateStore",
    "StateMessage",
    "StateStore",
    "WorkingState",
    "claim_legacy_sessions",
    "create_state_store",
    "legacy_state_path",
    "resolve_state_kind",
    "sqlite_state_path",
]


def resolve_state_kind(config: MemoryConfig) -> str:
    """``memory``, ``sqlite`` or ``redis``: ``config.state`` with ``auto`` decided."""
    if config.state != "auto":
        return config.state
    if config.redis_url:
        return "redis"
    return "memory" if config.backend == "memory" else "sqlite"


def create_state_store(config: MemoryConfig) -> StateStore:
    """A new working-state store for ``config``'s collection; the caller closes it.

    SQLite keeps one file per (backend kind, collection), see
    :func:`sqlite_state_path`; Redis one key namespace per collection.
    """
    kind = resolve_state_kind(config)
    if kind == "memory":
        return InMemoryStateStore()
    if kind == "sqlite":
        return SQLiteStateStore(sqlite_state_path(config.persist_dir, config.backend, config.collection))
    from memory_vec.state.redis import RedisStateStore

    if config.redis_url is None:
        raise ConfigError("state='redis' needs redis_url (got None); set MemoryConfig.redis_url to a redis:// URL")
    return RedisStateStore(config.redis_url, namespace=config.collection, timeout=config.backend_timeout)
