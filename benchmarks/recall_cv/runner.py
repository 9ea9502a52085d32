"""Fill a store through the public API once, then ask every question under
every configuration of the grid, reusing the stored vectors and the query
vectors (only the ranking is redone, by ``MemoryCore.recall`` itself).

Embeddings are cached on disk (``<out>/embcache_<model>.npz``, keyed by the
SHA-1 of the text): e5 is used symmetrically (``query:`` on both sides), so a
text has one vector whether it is stored or asked, and a rerun embeds only
texts it has never seen.
"""

from __future__ import annotations

import hashlib
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.settings_by_name import config_kwargs, get_setting, set_settings
from memory_vec import MemoryConfig, MemoryCore
from memory_vec._core import MessageInput
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.embeddings import BaseEmbedder, get_embedder
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import parts

from .corpora import Turn
from .questions import Question

__all__ = ["BASELINES", "KS", "DiskCachedEmbedder", "Store", "SuiteRun", "recall_row"]

KS = (5, 10, 25, 50)
BASELINES = ("bm25", "dense (plain vectors)", "dense (stored vectors)")


class DiskCachedEmbedder(BaseEmbedder):
    """A symmetric embedder behind a text -> vector cache persisted as ``.npz``.

    The model loads on the first miss only, so a warm rerun never loads it.
    """

    def __init__(self, model: str, path: Path) -> None:
        self._name = model
        self._inner: Any = None
        probe = get_embedder(model) if not path.exists() else None
        self._inner = probe
        self.path = path
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.misses = 0
        self.model_seconds = 0.0
        if path.exists():
            data = np.load(path)
            self._cache = dict(zip((str(k) for k in data["keys"]), data["vectors"]))
            meta = data["meta"]
            self.model_id, self.default_threshold, self._dimension = str(meta[0]), float(meta[1]), int(meta[2])
            self.conflict_threshold = float(meta[3])
        else:
            self._adopt(probe)

    def _adopt(self, inner: Any) -> None:
        if not getattr(inner, "symmetric", False):
            raise ValueError(f"{self._name}: the disk cache needs a symmetric embedder (one vector per text)")
        self.model_id = inner.model_id
        self.default_threshold = inner.default_threshold
        self.conflict_threshold = getattr(inner, "conflict_threshold", 0.8)
        self._dimension = int(inner.dimension)

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._lock:
            keys = [self.key(t) for t in texts]
            missing = {k: t for k, t in zip(keys, texts) if k not in self._cache}
            if missing:
                if self._inner is None:
                    self._inner = get_embedder(self._name)
                    self._adopt(self._inner)
                t0 = time.perf_counter()
                vectors = self._inner.embed_documents(list(missing.values()))
                self.model_seconds += time.perf_counter() - t0
                self.misses += len(missing)
                for k, vec in zip(missing, vectors):
                    self._cache[k] = np.asarray(vec, dtype=np.float32)
            return np.stack([self._cache[k] for k in keys])

    def save(self) -> None:
        with self._lock:
            keys = list(self._cache)
            meta = np.asarray([self.model_id, self.default_threshold, self._dimension, self.conflict_threshold])
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, keys=np.asarray(keys), vectors=np.stack([self._cache[k] for k in keys]), meta=meta)
            tmp.replace(self.path)


def recall_row(found: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
    """Recall at each of ``KS`` (the LoCoMo paper's: share of the evidence in
    the top k; a question without evidence counts 1)."""
    if not evidence:
        return np.ones(len(KS), dtype=np.float32)
    return np.asarray([sum(1 for e in evidence if e in set(found[:k])) / len(evidence) for k in KS], dtype=np.float32)


@dataclass
class SuiteRun:
    """Recall of one question list: ``grid[c, q, k]`` per configuration, and the baselines."""

    questions: list[Question]
    configs: list[dict[str, Any]]
    grid: np.ndarray  # [C, Q, len(KS)]
    baselines: dict[str, np.ndarray] = field(default_factory=dict)  # name -> [Q, len(KS)]
    top: dict[str, list[list[str]]] = field(default_factory=dict)  # "default" / baseline -> top-50 ids per question
    recall_ms_p50: float = float("nan")
    cv: np.ndarray | None = None  # [Q, len(KS)]: each question under its fold's choice, once known


class Store:
    """One corpus ingested through ``MemoryCore.add_messages``, as an app would."""

    def __init__(self, turns: Sequence[Turn], embedder: DiskCachedEmbedder, settings: dict[str, Any]) -> None:
        self.turns = list(turns)
        self.embedder = embedder
        self.backend = InMemoryBackend()
        self.core = MemoryCore(
            MemoryConfig(user_id="bench", session_id="bench", **config_kwargs(settings)),
            embedder=embedder,
            backend=self.backend,
            state_store=InMemoryStateStore(),
        )
        t0 = time.perf_counter()
        self._ingest()
        self.ingest_s = time.perf_counter() - t0
        self._plain: dict[str, tuple[np.ndarray, list[str]]] = {}

    def _ingest(self) -> None:
        sessions: dict[tuple[str, str], list[Turn]] = defaultdict(list)
        for t in self.turns:  # dict order = first appearance: sessions in corpus order
            sessions[(t.user, t.session)].append(t)
        for (user, session), items in sessions.items():
            batch = [
                MessageInput(t.role, t.text, t.timestamp, {"turn_id": t.turn_id, "speaker": t.speaker}) for t in items
            ]
            for i in range(0, len(batch), 64):
                self.core.add_messages(batch[i : i + 64], user_id=user, session_id=session)
        self.core.flush()

    @property
    def record_count(self) -> int:
        return len(self.backend.scan(RecordFilter()))

    # ------------------------------------------------------------------ the library, configured
    def recall(self, question: str, user: str, k: int = 50) -> list[str]:
        return [str(h.metadata.get("turn_id", "")) for h in self.core.recall(question, k=k, user_id=user)]

    def configure(self, settings: dict[str, Any]) -> None:
        """Set recall settings by name (a ranking knob as ``bm25_weight`` or ``ranking.bm25_weight``)."""
        set_settings(self.core.config, settings)

    # ------------------------------------------------------------------ baselines
    def bm25(self, question: str, user: str, k: int = 50) -> list[str]:
        """The library's keyword index alone (no context weight)."""
        ids = [d for d, _ in parts(self.core).store.keywords.for_user(user).search(question, k=k)]
        by_id = {r.id: r for r in self.backend.get(ids)}
        return [str(by_id[d].metadata.get("turn_id", "")) for d in ids if d in by_id]

    def dense_stored(self, question: str, user: str, k: int = 50) -> list[str]:
        """Top-k cosine over the store's own vectors (contextual under the defaults)."""
        vec = self.embedder.embed_query(question)
        hits = self.backend.query(vec, k=k, where=RecordFilter(user_id=user, kinds=("message", "fact")))
        return [str(h.record.metadata.get("turn_id", "")) for h in hits]

    def dense_plain(self, question: str, user: str, k: int = 50) -> list[str]:
        """A plain vector store: every message embedded alone, cosine top-k (the peers' baseline)."""
        if user not in self._plain:
            mine = [t for t in self.turns if t.user == user]
            self._plain[user] = (self.embedder.embed_documents([t.text for t in mine]), [t.turn_id for t in mine])
        matrix, ids = self._plain[user]
        scores = matrix @ self.embedder.embed_query(question)
        return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]

    # ------------------------------------------------------------------ one suite
    def run(
        self,
        questions: Sequence[Question],
        configs: Sequence[dict[str, Any]],
        *,
        baselines: bool = True,
        progress: str = "",
    ) -> SuiteRun:
        """Ask every question once per configuration (``configs[0]`` is the one
        whose top-50 lists are kept), and once per baseline."""
        base = {name: get_setting(self.core.config, name) for c in configs for name in c}
        grid = np.zeros((len(configs), len(questions), len(KS)), dtype=np.float32)
        run = SuiteRun(list(questions), [dict(c) for c in configs], grid)
        times: list[float] = []
        tops: dict[str, list[list[str]]] = defaultdict(list)
        rows: dict[str, list[np.ndarray]] = defaultdict(list)
        t_start = time.perf_counter()
        for qi, q in enumerate(questions):
            for ci, settings in enumerate(configs):
                self.configure({**base, **settings})
                t0 = time.perf_counter()
                found = self.recall(q.question, q.conversation)
                if ci == 0:
                    times.append(time.perf_counter() - t0)
                    tops["default"].append(found)
                grid[ci, qi] = recall_row(found, q.evidence)
            if baselines:
                for name, fn in zip(BASELINES, (self.bm25, self.dense_plain, self.dense_stored)):
                    found = fn(q.question, q.conversation)
                    tops[name].append(found)
                    rows[name].append(recall_row(found, q.evidence))
            if progress and (qi + 1) % 100 == 0:
                print(
                    f"  {progress}: {qi + 1}/{len(questions)} questions, {time.perf_counter() - t_start:.0f} s",
                    flush=True,
                )
        self.configure(base)
        run.baselines = {name: np.stack(r) for name, r in rows.items()}
        run.top = dict(tops)
        run.recall_ms_p50 = statistics.median(times) * 1000 if times else float("nan")
        return run
