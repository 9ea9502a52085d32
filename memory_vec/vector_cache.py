"""A bounded cache of text vectors, so one text embeds once."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

__all__ = ["SharedVectors", "VectorCache"]


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

    Shared by every core of a :class:`~memory_vec.store.Store` (per-request
    cores of one process reuse each other's vectors). With ``shared`` (Redis
    working state), vectors are also read from and written to a tier every
    worker process sees, so a user whose turns go to different workers still
    finds the previous exchange's vector.
    """

    def __init__(self, size: int = 4096, *, shared: SharedVectors | None = None, kind: str = "d") -> None:
        self._data: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        self._shared = shared
        self._kind = kind  # documents and queries of one model differ: separate keys in the shared tier

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
        if absent and self._shared is not None:
            blobs = self._shared.cached_vectors([self._kind + key.hex() for key in absent.values()])
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
        if keyed and self._shared is not None:
            self._shared.cache_vectors({self._kind + key.hex(): np.asarray(vec, dtype="<f4").tobytes()
                                        for key, vec in keyed.items()}, owner)

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
        return self._shared.forget_vectors(owner) if self._shared is not None else 0
