"""A bounded cache of text vectors, so one text embeds once."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout  # a builtin TimeoutError only from 3.11
from typing import Protocol, TypeVar

import numpy as np

__all__ = ["SharedVectors", "VectorCache"]

log = logging.getLogger("memory_vec")
T = TypeVar("T")
_CLOSE_WAIT_S = 2.0  # close() waits this long for queued puts, then drops them
_MAX_QUEUED_PUTS = 32  # Redis slow or down: later puts are dropped (a miss costs an embedding)


class SharedVectors(Protocol):
    """A cache tier other processes see (the Redis working-state store).

    Only an optimisation: a miss or an error costs an embedding, never a
    wrong vector, so implementations swallow their own failures."""

    def cached_vectors(self, keys: Sequence[str]) -> list[bytes | None]: ...

    def cache_vectors(self, items: Mapping[str, bytes], owner: str | None = None) -> None: ...

    def forget_vectors(self, owner: str) -> int: ...


class VectorCache:
    """Vectors of texts seen in the last turns, so one text embeds once.

    Keyed by a 128-bit digest of the model id and the text, so it stays true
    whatever other processes write and a core that switched models never
    reads another model's vector; its size is bounded in bytes (~1.6 KB per
    384-d entry, whatever the texts' length). A turn's stored vectors are
    built from vectors found here (the user message the last recall
    embedded, the previous exchange); a miss costs one more text in the
    turn's one embedding call, never a wrong vector.

    Shared by every core of a :class:`~memory_vec._storage.store.Store` (per-request
    cores of one process reuse each other's vectors). With ``shared`` (Redis
    working state), vectors are also read from and written to a tier every
    worker process sees, so a user whose turns go to different workers still
    finds the previous exchange's vector. Writes to that tier leave the turn:
    a thread of the cache sends them in order, a round trip the turn does not
    wait for (the next turn that reads them comes after the user's reply).
    """

    def __init__(self, size: int = 4096, *, shared: SharedVectors | None = None, kind: str = "d") -> None:
        self._data: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        self._shared = shared
        self._kind = kind  # documents and queries of one model differ: separate keys in the shared tier
        self._sender: _Sender | None = None

    @staticmethod
    def _key(text: str, model: str) -> bytes:
        digest = hashlib.blake2b(model.encode("utf-8", "surrogatepass"), digest_size=16)
        digest.update(b"\0" + text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def get(self, text: str, model: str = "") -> np.ndarray | None:
        return self.get_many([text], model).get(text)

    def put(self, text: str, vector: np.ndarray, model: str = "", owner: str | None = None) -> None:
        self.put_many({text: vector}, model, owner)

    def get_many(self, texts: Iterable[str], model: str = "") -> dict[str, np.ndarray]:
        """The cached vectors of ``texts`` (absent ones left out): this
        process's first, then one round trip to the shared tier for the rest."""
        found: dict[str, np.ndarray] = {}
        absent: dict[str, bytes] = {}
        with self._lock:
            for text in texts:
                key = self._key(text, model)
                vec = self._data.get(key)
                if vec is None:
                    absent[text] = key
                else:
                    self._data.move_to_end(key)
                    found[text] = vec
        shared = self._shared
        if absent and shared is not None:
            blobs = shared.cached_vectors([self._kind + key.hex() for key in absent.values()])
            for (text, key), blob in zip(absent.items(), blobs):
                if blob and len(blob) % 4 == 0:
                    found[text] = vec = np.frombuffer(blob, dtype="<f4").copy()
                    self._keep(key, vec)
        return found

    def put_many(self, vectors: Mapping[str, np.ndarray], model: str = "", owner: str | None = None) -> None:
        """Keep vectors; ``owner``: the user whose texts they are, so that
        forgetting the user drops them from the shared tier too."""
        keyed = {self._key(text, model): vec for text, vec in vectors.items()}
        for key, vec in keyed.items():
            self._keep(key, vec)
        shared = self._shared
        sender = self._sent() if keyed and shared is not None else None
        if shared is not None and sender is not None:
            items = {self._kind + key.hex(): np.asarray(vec, dtype="<f4").tobytes() for key, vec in keyed.items()}
            sender.put(lambda: shared.cache_vectors(items, owner))

    def flush(self) -> None:
        """Wait until the vectors put so far reached the shared tier."""
        sender = self._sent()
        if sender is not None:
            sender.call(lambda: None)

    def _sent(self) -> _Sender | None:
        """The sender of shared-tier calls; None without a shared tier (or closed)."""
        with self._lock:
            if self._shared is None:
                return None
            if self._sender is None or self._sender.pid != os.getpid():  # a forked child starts its own
                self._sender = _Sender()
            return self._sender

    def _keep(self, key: bytes, vec: np.ndarray) -> None:
        with self._lock:
            self._data[key] = vec
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget this process's vectors (the shared tier expires by itself)."""
        with self._lock:
            self._data.clear()

    def forget_owner(self, owner: str) -> int:
        """Drop this process's vectors and the shared tier's of ``owner``'s
        texts (another process's own copy expires with its LRU)."""
        self.clear()
        shared, sender = self._shared, self._sent()
        if shared is None or sender is None:
            return 0
        forgotten = sender.call(lambda: shared.forget_vectors(owner))  # after the puts queued before
        self.clear()  # a read while those puts ran may have brought the owner's vectors back from the tier
        return forgotten

    def close(self) -> None:
        """Send the queued puts (for ``_CLOSE_WAIT_S`` at most: Redis may be
        down; a cache may drop them), end the sender and leave the shared tier
        (the Store closes its state store next); this process's vectors stay."""
        with self._lock:
            sender, self._sender = self._sender, None
            self._shared = None
        if sender is not None and sender.pid == os.getpid():
            sender.stop(_CLOSE_WAIT_S)


def _end_of_queue() -> None:  # the sender's marker, compared by identity
    """Never run: tells the sender's thread to end."""


class _Sender:
    """One daemon thread running a cache's shared-tier calls in order (a daemon:
    puts still queued at exit are dropped, as a cache may)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._queued = 0
        self._stopping = False
        self._lock = threading.Lock()
        threading.Thread(target=self._run, name="memvec-vector-cache", daemon=True).start()

    def put(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._queued >= _MAX_QUEUED_PUTS:
                return
            self._queued += 1
        self._jobs.put(lambda: None if self._stopping else job())

    def call(self, fn: Callable[[], T], timeout: float | None = None) -> T:
        """Run ``fn`` after every job queued before it; its result or error
        (``FutureTimeout`` after ``timeout`` seconds: ``fn`` still runs)."""
        done: Future[T] = Future()

        def job() -> None:
            try:
                done.set_result(fn())
            except Exception as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)

        with self._lock:
            self._queued += 1
        self._jobs.put(job)
        return done.result(timeout)

    def stop(self, wait_s: float) -> None:
        """Let the jobs queued so far run for ``wait_s`` at most, drop the puts
        still queued then, and end the thread."""
        with contextlib.suppress(FutureTimeout):
            self.call(lambda: None, wait_s)
        self._stopping = True
        self._jobs.put(_end_of_queue)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _end_of_queue:
                return
            try:
                job()
            except Exception:  # nothing may stop the thread (cache_vectors swallows its own)
                log.warning("shared vector cache: a call failed", exc_info=True)
            finally:
                with self._lock:
                    self._queued -= 1
