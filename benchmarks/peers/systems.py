"""Every system in the comparison behind one small surface.

A system holds one conversation at a time:

* ``save(user, assistant)`` stores one exchange;
* ``load(query)`` returns the memory part of the prompt for the next user
  message, as text (prompt tokens = that text + the message);
* ``fill(texts, vectors)`` stores ``len(texts)`` earlier turns as fast as the
  system allows (its own bulk write, or its steady state for buffers);
* systems that retrieve turns also implement ``index_locomo(conv_id, turns)``
  and ``retrieve(conv_id, question, k) -> [dia_id, ...]``.

Peers live in :mod:`peers_impl`; our rows here.
"""

from __future__ import annotations

import dataclasses
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec._core import MessageInput

from .shared import COUNTER, CachedEmbedder, CountingLLM

__all__ = ["OursSystem", "System", "Turn", "registry"]


@dataclasses.dataclass(frozen=True)
class Turn:
    """One LoCoMo turn as every system stores it."""

    dia_id: str
    role: str  # "user" for speaker_a, "assistant" for speaker_b
    speaker: str
    text: str  # "{speaker}: {text}" (+ " [shares caption]")
    session: int
    timestamp: float


class System:
    name = "system"
    retrieves = False  # recall@k applies
    uses_llm = False
    note = ""

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        self.embedder = embedder
        self.llm = llm
        self.workdir = workdir
        self.k = k

    def save(self, user: str, assistant: str) -> None:
        raise NotImplementedError

    def load(self, query: str) -> str:
        raise NotImplementedError

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for i in range(0, len(texts) - 1, 2):
            self.save(texts[i], texts[i + 1])

    def index_locomo(self, conv_id: str, turns: Sequence[Turn]) -> None:
        raise NotImplementedError

    def retrieve(self, conv_id: str, question: str, k: int) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- ours
class OursSystem(System):
    """memory-vec's ``MemoryCore``: rolling summary + recent turns + recall."""

    retrieves = True

    def __init__(
        self,
        embedder: CachedEmbedder,
        llm: CountingLLM,
        workdir: Path,
        k: int = 5,
        *,
        backend: str = "memory",
        hybrid: bool = True,
        llm_summary: bool = False,
    ) -> None:
        super().__init__(embedder, llm, workdir, k)
        self.uses_llm = llm_summary
        self.config = MemoryConfig(
            user_id="bench",
            session_id="live",
            backend=backend,
            persist_dir=tempfile.mkdtemp(prefix=f"ours-{backend}-", dir=workdir),
            collection=f"peers_{uuid.uuid4().hex[:8]}",
            hybrid=hybrid,
            recall_k=k,
        )
        self.core = MemoryCore(self.config, embedder=embedder, llm=llm if llm_summary else None, token_counter=COUNTER)

    def save(self, user: str, assistant: str) -> None:
        self.core.add_messages([("user", user), ("assistant", assistant)])

    def load(self, query: str) -> str:
        ctx = self.core.build_context(query)
        return ctx.render_history() + "\n" + ctx.render()

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        # Straight through the backend, as benchmarks/overhead.py does.
        from benchmarks.overhead import fill as overhead_fill

        overhead_fill(self.core, len(texts), list(texts), vectors, "bench")

    def index_locomo(self, conv_id: str, turns: Sequence[Turn]) -> None:
        batch = [MessageInput(t.role, t.text, t.timestamp, {"dia_id": t.dia_id, "speaker": t.speaker}) for t in turns]
        by_session: dict[int, list[MessageInput]] = {}
        for t, m in zip(turns, batch):
            by_session.setdefault(t.session, []).append(m)
        for session, msgs in by_session.items():
            for i in range(0, len(msgs), 64):
                self.core.add_messages(msgs[i : i + 64], user_id=conv_id, session_id=f"session_{session}")
        self.core.flush()

    def retrieve(self, conv_id: str, question: str, k: int) -> list[str]:
        hits = self.core.recall(question, k=k, user_id=conv_id)
        return [str(h.metadata.get("dia_id", "")) for h in hits]

    def close(self) -> None:
        self.core.close()
        release_stores()


def _ours(backend: str, hybrid: bool = True, llm_summary: bool = False) -> Callable[..., System]:
    def make(embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> System:
        return OursSystem(embedder, llm, workdir, k, backend=backend, hybrid=hybrid, llm_summary=llm_summary)

    return make


def _registry() -> dict[str, tuple[Callable[..., System], dict[str, Any]]]:
    from . import peers_impl as p

    ours = {
        "ours memory": (_ours("memory"), {}),
        "ours memory -hybrid": (_ours("memory", hybrid=False), {}),
        "ours memory +LLM summary": (_ours("memory", llm_summary=True), {"recall": False}),
        "ours chroma": (_ours("chroma"), {"slow": True}),
        "ours chroma -hybrid": (_ours("chroma", hybrid=False), {"slow": True, "latency": False, "demo": False}),
        "ours milvus": (_ours("milvus"), {"slow": True}),
        "ours milvus -hybrid": (_ours("milvus", hybrid=False), {"slow": True, "latency": False, "demo": False}),
    }
    peers = {
        "LC VectorStoreRetrieverMemory (chroma)": (p.LCVectorStoreRetriever, {}),
        "LC ConversationSummaryBufferMemory": (p.LCSummaryBuffer, {}),
        "LC ConversationTokenBufferMemory": (p.LCTokenBuffer, {}),
        "LI Memory + VectorMemoryBlock (chroma)": (p.LIVectorBlockMemory, {}),
        "LI ChatSummaryMemoryBuffer": (p.LIChatSummary, {}),
        "dense top-k (numpy)": (p.DenseTopK, {}),
        "BM25 (rank_bm25)": (p.BM25TopK, {}),
        "full history": (p.FullHistory, {}),
    }
    return {**ours, **peers}


def registry() -> dict[str, tuple[Callable[..., System], dict[str, Any]]]:
    """Name -> (factory, flags). Flags: slow (skipped by --skip-slow), recall/latency/demo False to skip a phase."""
    return _registry()
