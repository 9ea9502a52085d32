"""Fakes that ship with the library, for fast unit tests.

They stand in for a model or a network, never for memory-vec's own code.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterable

import numpy as np

from ..embeddings.base import BaseEmbedder

__all__ = ["DeterministicHashEmbedder", "ScriptedLLM"]

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


class ScriptedLLM:
    """A ``prompt -> text`` callable that answers from a script.

    Each call returns the next answer (the last one repeats). An answer that
    is an exception instance is raised; a float is slept (a slow LLM).
    Every prompt is kept in ``prompts`` so tests can assert what was sent.
    """

    def __init__(self, answers: Iterable[object] | None = None, *, default: str = "- (summary)") -> None:
        self.answers = list(answers or [])
        self.default = default
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return len(self.prompts)

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            index = len(self.prompts) - 1
            answer: object = self.answers[min(index, len(self.answers) - 1)] if self.answers else self.default
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, tuple) and answer and isinstance(answer[0], float):
            time.sleep(answer[0])
            return str(answer[1])
        if callable(answer):
            return str(answer(prompt))
        return str(answer)
