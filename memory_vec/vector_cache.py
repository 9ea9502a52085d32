"""A bounded cache of text vectors, so one text embeds once."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np

__all__ = ["VectorCache"]


class VectorCache:
    """Vectors of texts seen in the last turns, so one text embeds once.

    Keyed by a 128-bit digest of the text, so it stays true whatever other
    processes write, and its size is bounded in bytes (~1.6 KB per 384-d
    entry, whatever the texts' length). A
    turn's stored vectors are built from vectors found here (the user message
    the last recall embedded, the previous exchange); a miss costs one more
    text in the turn's one embedding call, never a wrong vector.

    Shared by every core of a :class:`~memory_vec.store.Store` (per-request
    cores of one process reuse each other's vectors); each entry is keyed by
    the model too, so a core that switched models never reads another
    model's vector.
    """

    def __init__(self, size: int = 4096) -> None:
        self._data: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str, model: str) -> bytes:
        digest = hashlib.blake2b(model.encode("utf-8", "surrogatepass"), digest_size=16)
        digest.update(b"\0" + text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def get(self, text: str, model: str = "") -> np.ndarray | None:
        key = self._key(text, model)
        with self._lock:
            vec = self._data.get(key)
            if vec is not None:
                self._data.move_to_end(key)
            return vec

    def put(self, text: str, vector: np.ndarray, model: str = "") -> None:
        key = self._key(text, model)
        with self._lock:
            self._data[key] = vector
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
