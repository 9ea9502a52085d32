"""Fakes that ship with the library, for fast unit tests.

They stand in for a model or a network, never for memory-vec's own code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from memory_vec.embeddings.hashing import DeterministicHashEmbedder

__all__ = ["DeterministicHashEmbedder", "ScriptedLLM"]


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
