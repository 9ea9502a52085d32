"""Timeouts and retries around any backend.

``GuardedBackend`` runs every call in a small thread pool and waits at most
``timeout`` seconds: a hung server becomes a
:class:`~memory_vec._model.errors.BackendTimeoutError` the core degrades on,
not a stuck turn. :class:`~memory_vec._model.errors.BackendUnavailableError`
is retried with exponential backoff; any other error is raised at once.

A timed-out call runs on in its worker until the driver gives up; the pool is
bounded, so a dead server cannot pile up threads. A forked child gets pools of
its own (the parent's workers do not exist in it).
"""

from __future__ import annotations

import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

import numpy as np

from memory_vec._model.errors import BackendTimeoutError, BackendUnavailableError
from memory_vec._model.records import MemoryRecord
from memory_vec.backends.base import (
    Backend,
    BackendLimits,
    BaseBackend,
    PurgeReport,
    RecordFilter,
    ScoredRecord,
    as_base_backend,
)

__all__ = ["GuardedBackend"]

T = TypeVar("T")


class GuardedBackend(BaseBackend):
    """Wrap ``inner`` so each call has a timeout and transient failures are retried.

    Example:
        >>> from memory_vec.backends import InMemoryBackend
        >>> guarded = GuardedBackend(InMemoryBackend(), timeout=2.0, retries=2)
        >>> guarded.open(dimension=3, model_id="demo")
        >>> guarded.count()
        0

    Args:
        inner: the backend doing the work.
        timeout: seconds one attempt may take.
        retries: extra attempts after a ``BackendUnavailableError`` (a timeout
            counts as one); 0 disables retries.
        backoff: seconds before the first retry; doubled each time, with jitter.
        max_workers: worker threads (bounds the calls that may hang at once).
    """

    def __init__(
        self, inner: Backend, *, timeout: float, retries: int = 2, backoff: float = 0.2, max_workers: int = 4
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries!r}")
        self.inner = engine = as_base_backend(inner)
        # What the core and the conformance suite read off a backend are the wrapped engine's.
        self.name = engine.name
        self.limits: BackendLimits = engine.limits
        self.supports_multiprocess = engine.supports_multiprocess
        self.persistent = engine.persistent
        self.vector_reads = engine.vector_reads
        self.resettable = engine.resettable
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        _guards.add(self)

    def __getattr__(self, name: str) -> Any:
        # Backend-specific extras (drop, model_id, path, ...) pass through unguarded.
        if name == "inner":  # not set yet (copy/pickle): avoid infinite recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"GuardedBackend({self.inner!r}, timeout={self.timeout}, retries={self.retries})"

    # --- the guarded protocol ------------------------------------------------------------
    def open(self, *, dimension: int, model_id: str) -> None:
        self._call("open", lambda: self.inner.open(dimension=dimension, model_id=model_id))

    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        # Upserts by id are idempotent, so a retry after a lost reply is safe.
        self._call("upsert", lambda: self.inner.upsert(records, vectors))

    def insert_new(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        # Idempotent as upsert: a retry stores the same rows again, still one row per id.
        self._call("upsert", lambda: self.inner.insert_new(records, vectors))

    def update(self, records: Sequence[MemoryRecord]) -> None:
        self._call("update", lambda: self.inner.update(records))

    def claim_working_state(self, identity: str, *, replace: bool = False) -> str:
        return self._call("claim", lambda: self.inner.claim_working_state(identity, replace=replace))

    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        return self._call("query", lambda: self.inner.query(vector, k=k, where=where))

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        return self._call("get", lambda: self.inner.get(ids, where=where))

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        return self._call("scan", lambda: self.inner.scan(where, limit=limit))

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        return self._call("scan_vectors", lambda: self.inner.scan_vectors(where))

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        return self._call("delete", lambda: self.inner.delete(ids=ids, where=where))

    def count(self, where: RecordFilter | None = None) -> int:
        return self._call("count", lambda: self.inner.count(where))

    def reset(self, *, dimension: int, model_id: str) -> None:
        """Forward ``reset`` (used by ``reembed``) without a timeout: it may rewrite a large store."""
        self.inner.reset(dimension=dimension, model_id=model_id)

    def check_usable(self) -> None:
        self.inner.check_usable()

    def purge(self) -> PurgeReport:
        """Forward ``purge`` (used by ``forget``) without a timeout: it may rewrite a large store."""
        return self.inner.purge()

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        self.inner.close()

    # --- machinery ------------------------------------------------------------------------
    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix=f"memvec-{self.name}")
            return self._pool

    def _call(self, operation: str, fn: Callable[[], T]) -> T:
        delay = self.backoff
        for attempt in range(self.retries + 1):
            try:
                return self._attempt(operation, fn)
            except BackendUnavailableError:
                if attempt == self.retries:
                    raise
            time.sleep(delay * (1.0 + 0.25 * random.random()))  # jitter spreads out reconnect storms
            delay *= 2
        raise AssertionError("unreachable")

    def _attempt(self, operation: str, fn: Callable[[], T]) -> T:
        future = self._executor().submit(fn)
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout as exc:
            future.cancel()
            raise BackendTimeoutError(
                f"{self.name} backend: {operation} took longer than {self.timeout:g} s "
                "(backend_timeout). Check the server's health, or raise backend_timeout."
            ) from exc


_guards: weakref.WeakSet[GuardedBackend] = weakref.WeakSet()


def _pools_of_its_own() -> None:
    for guard in list(_guards):
        guard._pool, guard._pool_lock = None, threading.Lock()  # the parent's pool is not the child's


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pools_of_its_own)
