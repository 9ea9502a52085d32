"""A hashing embedder: no model, deterministic, fast (model name ``hash`` or ``hash:DIM``).

For unit tests and offline experiments; a real deployment uses a real model.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from memory_vec.embeddings.base import BaseEmbedder

__all__ = ["DeterministicHashEmbedder"]

_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]", re.IGNORECASE)


class DeterministicHashEmbedder(BaseEmbedder):
    """Bag of hashed word (and CJK character) features: texts sharing words
    are similar, identical texts are identical. Fast and deterministic.
    """

    symmetric = True
    default_threshold = 0.05

    def __init__(self, dimension: int = 64) -> None:
        self._dimension = dimension
        self._size = dimension  # the same, typed int (BaseEmbedder's may be None before a probe)
        self.model_id = f"hash-{dimension}"

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        out = np.zeros((len(texts), self._size), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
                out[row, h % self._size] += 1.0 if (h >> 32) & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return out
