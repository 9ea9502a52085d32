"""Embedders: one protocol, offline defaults, framework wrappers.

``get_embedder(name)`` returns a process-wide shared instance per model, so a
new ``MemoryCore`` per web request costs no model load.
"""

from __future__ import annotations

import threading

from memory_vec.embeddings.base import BaseEmbedder, Embedder, normalize_rows
from memory_vec.embeddings.hashing import DeterministicHashEmbedder
from memory_vec.embeddings.models import (
    E5_SMALL_ID,
    MINILM_ID,
    E5SmallEmbedder,
    LangChainEmbedder,
    LlamaIndexEmbedder,
    SentenceTransformerEmbedder,
)

__all__ = [
    "E5_SMALL_ID",
    "MINILM_ID",
    "BaseEmbedder",
    "DeterministicHashEmbedder",
    "E5SmallEmbedder",
    "Embedder",
    "LangChainEmbedder",
    "LlamaIndexEmbedder",
    "SentenceTransformerEmbedder",
    "get_embedder",
    "normalize_rows",
]

_E5_NAMES = {"multilingual-e5-small", "intfloat/multilingual-e5-small", "e5-small", E5_SMALL_ID}
_shared: dict[tuple[str, str], Embedder] = {}
_shared_lock = threading.Lock()


def get_embedder(name: str, *, device: str = "cpu", batch_size: int = 32) -> Embedder:
    """The shared embedder for a model name (loaded once per process)."""
    key = (name, device)
    with _shared_lock:
        embedder = _shared.get(key)
        if embedder is None:
            if name in _E5_NAMES:
                embedder = E5SmallEmbedder(batch_size=batch_size)
            elif name.startswith("hash"):
                dim = int(name.split(":", 1)[1]) if ":" in name else 64
                embedder = DeterministicHashEmbedder(dimension=dim)
            else:
                embedder = SentenceTransformerEmbedder(name, device=device, batch_size=batch_size)
            _shared[key] = embedder
        return embedder
