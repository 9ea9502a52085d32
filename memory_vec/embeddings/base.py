"""The embedder protocol and the shared behaviour of every embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memory_vec._model.errors import EmbeddingError

__all__ = ["BaseEmbedder", "Embedder", "normalize_rows"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors.

    ``model_id`` is a stable name (never a filesystem path) that stores
    record, so that a collection is never read with another model.
    ``symmetric`` means a document vector may serve as the query vector,
    which lets the core embed a new user message once per turn.
    """

    model_id: str
    symmetric: bool
    default_threshold: float

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    async def aembed_query(self, text: str) -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    if not np.all(np.isfinite(vectors)):
        raise EmbeddingError("The embedder returned NaN or infinite values.")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: np.ndarray = vectors / norms
    return normalized


class BaseEmbedder:
    """Shared batching, normalization, shape checks and async twins.

    Subclasses implement ``_embed(texts, is_query)`` returning a 2-D array.
    The async twins run the sync call in a worker thread so the event loop
    never blocks on a model.
    """

    model_id: str = "base"
    symmetric: bool = True
    # Final-score threshold that suits the model's cosine distribution.
    default_threshold: float = 0.2
    # Cosine at which two statements are about the same thing (conflicts).
    conflict_threshold: float = 0.8
    batch_size: int = 32
    _dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._checked(["dimension probe"], False).shape[1])
        return self._dimension

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        raise NotImplementedError

    def _checked(self, texts: list[str], is_query: bool) -> np.ndarray:
        try:
            parts = [
                np.asarray(self._embed(texts[i : i + self.batch_size], is_query), dtype=np.float32)
                for i in range(0, len(texts), self.batch_size)
            ]
        except EmbeddingError:
            raise
        except Exception as exc:  # a model failure must not look like our bug
            raise EmbeddingError(f"Embedding model {self.model_id!r} failed: {exc}") from exc
        vectors = normalize_rows(np.concatenate(parts, axis=0))
        if vectors.shape[0] != len(texts):
            raise EmbeddingError(
                f"Embedding model {self.model_id!r} returned {vectors.shape[0]} vectors for {len(texts)} texts."
            )
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise EmbeddingError(
                f"Embedding model {self.model_id!r} returned dimension {vectors.shape[1]}, expected {self._dimension}."
            )
        self._dimension = int(vectors.shape[1])
        return vectors

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._checked(texts, False)

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self._checked([text], True)[0]
        return row

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_documents, list(texts))

    async def aembed_query(self, text: str) -> np.ndarray:
        return await asyncio.to_thread(self.embed_query, text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"
