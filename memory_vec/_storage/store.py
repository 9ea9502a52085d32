"""``Store``: everything stateful about one collection, under one owner: the
backend client, the working-state store, the writer with its validation hook
and dead-letter list, and the keyword index. Nothing about it lives in module
globals keyed by object identity.

``open_store(config)`` gives every core of a process the same store for the
same identifying settings; a core asking for other writer settings gets a
``ConfigError``. A backend or state store passed in by the caller gets a
store of its own (not cached): the caller owns it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np

from memory_vec._model.config import MemoryConfig
from memory_vec._model.errors import BackendError, BackendUnavailableError, ConfigError, InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec._storage.keywords import KeywordIndex
from memory_vec._storage.vector_cache import SharedVectors, VectorCache
from memory_vec._storage.writer import RecordChecks, RecordWriter
from memory_vec.backends import create_backend
from memory_vec.backends.base import Backend, BaseBackend, PurgeReport, as_base_backend
from memory_vec.state import SQLiteStateStore, StateStore, create_state_store, resolve_state_kind
from memory_vec.state._legacy import (
    claim_legacy_sessions,
    clear_pending_of_earlier_engine,
    legacy_state_path,
    pending_of_earlier_engine,
)
from memory_vec.state.base import DeadLetter
from memory_vec.state.redis import RedisStateStore

__all__ = ["DeadLetterRetry", "Store", "StoreKey", "open_store", "release_stores"]

log = logging.getLogger("memory_vec")


@dataclass(frozen=True)
class StoreKey:
    """What identifies a store: engine, where it is, which collection, how it
    is reached, and where its working state lives."""

    backend: str
    location: str
    collection: str
    backend_options: str
    state: str
    state_location: str
    backend_timeout: float
    backend_retries: int

    @classmethod
    def of(cls, config: MemoryConfig) -> StoreKey:
        state = resolve_state_kind(config)
        location = config.url or os.path.abspath(config.persist_dir)
        state_location = config.redis_url or "" if state == "redis" else os.path.abspath(config.persist_dir)
        return cls(
            config.backend,
            location,
            config.collection,
            repr(sorted(config.backend_options.items())),
            state,
            state_location,
            config.backend_timeout,
            config.backend_retries,
        )


@dataclass(frozen=True)
class DeadLetterRetry:
    """What ``Store.retry_dead_letters`` did."""

    stored: list[str]
    failed: dict[str, str]


class Store:
    """One collection's backend, working state, writer and keyword index.

    Example:
        >>> from memory_vec import MemoryConfig
        >>> store = open_store(MemoryConfig(collection="docs"))   # doctest: +SKIP
        >>> store.dead_letters()                                   # doctest: +SKIP
        []
    """

    def __init__(
        self,
        backend: Backend,
        state: StateStore,
        *,
        collection: str,
        batch_size: int = 64,
        keyword_cache_users: int = 1000,
        keyword_cache_docs: int = 200_000,
        legacy_state_path: str | None = None,
        shared_vectors: SharedVectors | None = None,
    ) -> None:
        self.backend: BaseBackend = as_base_backend(backend)
        self.state = state
        self.collection = collection
        #: The validation hook every write passes (:class:`RecordChecks`), called as ``validate(records, vectors)``.
        self.validate = RecordChecks(self.backend)
        self.keywords = KeywordIndex(self.backend, state, max_users=keyword_cache_users, max_docs=keyword_cache_docs)
        self.writer = RecordWriter(
            self.backend,
            batch_size,
            validate=self.validate,
            dead_letters=state,
            keywords=self.keywords,
        )
        self._legacy_state_path = legacy_state_path
        self._earlier_engine_pending: list[tuple[str, str]] | None = None
        self._opened: tuple[int, str] | None = None
        self._open_lock = threading.Lock()
        self._vector_caches: tuple[VectorCache, VectorCache] | None = None
        self._shared_vectors = shared_vectors

    def vector_caches(self, size: int) -> tuple[VectorCache, VectorCache]:
        """The (document, query) vector caches every core of this store
        shares; the first core's ``size`` sets their bound."""
        with self._open_lock:
            if self._vector_caches is None:
                self._vector_caches = (
                    VectorCache(size, shared=self._shared_vectors, kind="d"),
                    VectorCache(size, shared=self._shared_vectors, kind="q"),
                )
            return self._vector_caches

    # --- lifecycle ------------------------------------------------------------------
    def open(self, *, dimension: int, model_id: str) -> None:
        """Open the backend for this embedding model (once per model); a
        different model than the collection's raises
        ``EmbeddingModelMismatchError``."""
        with self._open_lock:
            if self._opened == (dimension, model_id):
                return
            self.backend.open(dimension=dimension, model_id=model_id)
            self.validate.opened(dimension)
            first = self._opened is None
            if first:
                self._check_working_state()
            self._opened = (dimension, model_id)
        if first and self._legacy_state_path and os.path.exists(self._legacy_state_path):
            self._claim_legacy_state(self._legacy_state_path)

    def take_pending_of_earlier_engine(self) -> list[tuple[str, str]]:
        """Once per store: the sessions 0.2's first engine (before #45) named as holding
        acknowledged turns its background writer had not stored when its process died
        (see :func:`memory_vec.state._legacy.pending_of_earlier_engine`). The caller heals
        them, then calls :meth:`clear_pending_of_earlier_engine`."""
        with self._open_lock:
            if self._earlier_engine_pending is not None or not isinstance(self.state, SQLiteStateStore):
                return []
            self._earlier_engine_pending = pending_of_earlier_engine(self.state.path)
            return list(self._earlier_engine_pending)

    def clear_pending_of_earlier_engine(self) -> None:
        if isinstance(self.state, SQLiteStateStore):
            clear_pending_of_earlier_engine(self.state.path)

    def _check_working_state(self) -> None:
        """A server other processes write: its collection names the working state
        they use (``claim_working_state``). A working state of this host only
        (a SQLite file) next to another one would serve what another host
        superseded or forgot, so it is refused here, before anything is read."""
        ours = working_state_identity(self.state)
        if ours is None or not self.backend.supports_multiprocess:
            return  # a state of this process only (memory, a custom one), or a store one process owns
        recorded = self.backend.claim_working_state(ours)
        if recorded == ours:
            return
        if ours.startswith("redis ") and not recorded.startswith("redis "):
            # Moving a deployment to a shared working state, as the error below asks.
            log.warning(
                "memory-vec: collection %r moves from the working state %s to %s", self.collection, recorded, ours
            )
            self.backend.claim_working_state(ours, replace=True)
            return
        if ours.startswith("redis "):
            return  # two URLs of one Redis cannot be told apart from two Redis servers: a Redis is for sharing
        raise ConfigError(
            f"collection {self.collection!r} on this server is used with the working state {recorded}; this "
            f"process's is {ours}. A working state in one host's SQLite file (persist_dir) cannot see what "
            "other hosts write, supersede or forget: processes on several hosts over one server need "
            "state='redis' with a redis_url shared by all of them (processes of one host: one persist_dir). "
            "To move the working state on purpose, open the store once with state='redis', or replace the "
            "record with store.backend.claim_working_state(identity, replace=True)."
        )

    def _claim_legacy_state(self, path: str) -> None:
        def owns(ids: Sequence[str]) -> set[str]:
            return {r.id for r in self.backend.get(list(ids))}

        claimed = claim_legacy_sessions(path, self.state, owns)
        if claimed:
            log.info(
                "memory-vec: moved %d session(s) of the shared state file %s into collection %r",
                claimed,
                path,
                self.collection,
            )

    def check_batch_size(self, batch_size: int) -> None:
        """A store has one writer; a core asking for another batch size raises."""
        if batch_size != self.writer.batch_size:
            raise ConfigError(
                f"collection {self.collection!r} is already open in this process with write_batch_size "
                f"{self.writer.batch_size}, this core asked for {batch_size}. Use the same "
                "write_batch_size for every core on one store, or call release_stores() first."
            )

    def purge(self) -> PurgeReport:
        """After a forget: no trace of deleted data in this store's files, where
        the engine allows (the state store's log; the backend's, see
        ``BaseBackend.purge``). Returns the backend's report."""
        self.state.purge()
        return self.backend.purge()

    def close(self) -> None:
        """Flush pending writes and close the backend and the state store."""
        try:
            self.writer.close()
        finally:
            self.keywords.drop()
            for cache in self._vector_caches or ():
                cache.close()  # its queued puts go to the state store's Redis before it closes
            self.backend.close()
            self.state.close()

    # --- dead letters ---------------------------------------------------------------
    def dead_letters(self, user_id: str | None = None) -> list[DeadLetter]:
        """Records the backend refused, oldest first."""
        return self.state.dead_letters(user_id)

    def drop_dead_letters(self, record_ids: Sequence[str] | None = None) -> int:
        """Discard dead letters (all when ``record_ids`` is None)."""
        ids = [d.record_id for d in self.dead_letters()] if record_ids is None else list(record_ids)
        return self.state.remove_dead_letters(ids)

    def retry_dead_letters(self, record_ids: Sequence[str] | None = None) -> DeadLetterRetry:
        """Try refused records again, one by one (after fixing the cause, e.g.
        a changed collection schema). Stored ones leave the list."""
        wanted = None if record_ids is None else set(record_ids)
        stored: list[str] = []
        failed: dict[str, str] = {}
        for letter in self.dead_letters():
            if wanted is not None and letter.record_id not in wanted:
                continue
            try:
                record = MemoryRecord(**letter.record)
                self.validate([record])
                if letter.vector is not None:
                    self.backend.upsert([record], np.asarray([letter.vector], dtype=np.float32))
                else:
                    self.backend.update([record])
            except BackendUnavailableError:
                raise
            except (BackendError, InvalidInputError, TypeError) as exc:
                failed[letter.record_id] = f"{type(exc).__name__}: {exc}"
                continue
            self.state.remove_dead_letters([letter.record_id])
            self.keywords.changed(record.user_id, [record])
            stored.append(letter.record_id)
        return DeadLetterRetry(stored, failed)


def working_state_identity(state: StateStore) -> str | None:
    """What names a working state across processes: a Redis (URL without credentials,
    namespace), or a SQLite file of one host; None for a state of one process."""
    if isinstance(state, RedisStateStore):
        url = urlsplit(state.url)
        where = f"{url.scheme}://{url.hostname or ''}:{url.port or ''}{url.path}"
        return f"redis {where} namespace={state.namespace}"
    if isinstance(state, SQLiteStateStore):
        return f"sqlite {socket.gethostname()}:{os.path.abspath(state.path)}"
    return None


# --- the factory: one store per identifying config, per process --------------------
_stores: dict[StoreKey, Store] = {}
_stores_lock = threading.Lock()


def build_store(config: MemoryConfig, *, backend: Backend | None = None, state: StateStore | None = None) -> Store:
    """A new store for ``config`` (not cached); given parts are used as they are."""
    sqlite_state = state is None and resolve_state_kind(config) == "sqlite"
    if sqlite_state or (backend is None and config.url is None and config.backend != "memory"):
        _check_persist_dir(config.persist_dir)
    state = state if state is not None else create_state_store(config)
    return Store(
        backend if backend is not None else create_backend(config),
        state,
        collection=config.collection,
        batch_size=config.write_batch_size,
        keyword_cache_users=config.keyword_cache_users,
        keyword_cache_docs=config.keyword_cache_docs,
        legacy_state_path=legacy_state_path(config.persist_dir) if sqlite_state else None,
        # Redis working state: worker processes see each other's vectors too
        shared_vectors=state if isinstance(state, RedisStateStore) else None,
    )


def _check_persist_dir(path: str) -> None:
    """A persist_dir that cannot be made or written is a ConfigError naming it,
    not an OSError from deep inside a backend (a mistyped or read-only path)."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"persist_dir {path!r} cannot be created: {exc.strerror or exc}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"persist_dir {path!r} is not writable by this process")


def open_store(config: MemoryConfig) -> Store:
    """The process's store for this config's collection, created once.

    Raises:
        ConfigError: the store is open with other writer settings.
    """
    key = StoreKey.of(config)
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = build_store(config)
            return store
    store.check_batch_size(config.write_batch_size)
    return store


def release_stores() -> None:
    """Flush and close every cached store (tests, shutdown)."""
    with _stores_lock:
        stores = list(_stores.values())
        _stores.clear()
    for store in stores:
        try:
            store.close()
        except Exception as exc:  # noqa: BLE001  # best effort at shutdown: close the others
            log.warning("memory-vec: closing a store failed: %s", exc)
