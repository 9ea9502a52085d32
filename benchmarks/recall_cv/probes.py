"""Probes of issue #17's multi-hop candidates on the shipped ranking (not in the library).

Each probe post-processes the library's own top 50 (``MemoryCore.recall``,
the defaults) of every LoCoMo dev question and frozen extra question, using
the stored vectors of the in-process store, and reports recall@10 per set:

* ``dense feedback``: Rocchio in vector space, the question's vector plus
  ``beta`` x the mean stored vector of the top ``m`` hits; its nearest
  memories fill the last ``n`` of the 10 slots;
* ``session fill``: the last ``n`` slots go to the best memory (cosine to
  the question) of each session the first ``10 - n`` do not come from
  (diversity across sessions, the MMR idea at session grain);
* ``session digest`` and ``topic expansion`` (2026-12-07): a session's mean vector, or
  k-means topics of the user's turns, pick turns for the last ``n`` slots;
* ``questions demoted``: a stored message scored ``delta`` x its share of
  sentences that are questions lower (a question matches a question's form,
  seldom its answer); ``delta`` also chosen leave-one-conversation-out.

    python -m benchmarks.recall_cv.probes --data ../shared/data --cache benchmarks/out/recall_cv
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_vec.backends import RecordFilter

from .corpora import locomo_questions, locomo_turns
from .questions import Question, load_frozen
from .runner import DiskCachedEmbedder, Store

SETS = (
    "LoCoMo dev (497)",
    "multi-hop (74)",
    "frozen multi-session (32)",
    "frozen relative-date (36)",
    "frozen event-order (31)",
)
Ranker = Callable[[Question, list[Any], np.ndarray, list[Any], np.ndarray], list[str]]


def _question_share(text: str) -> float:
    body = re.sub(r"\[shares.*?\]", "", text).strip()
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", body) if s]
    return sum(s.endswith("?") for s in sentences) / max(1, len(sentences))


def _dedup(turns: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(turns))


def _turn(record: Any) -> str:
    return str(record.metadata.get("turn_id", ""))


def dense_feedback(m: int, beta: float, n: int) -> Ranker:
    def rank(q: Question, hits: list[Any], qv: np.ndarray, records: list[Any], vectors: np.ndarray) -> list[str]:
        base = _dedup(_turn(h) for h in hits)
        index = {r.id: i for i, r in enumerate(records)}
        top = [index[h.id] for h in hits[:m] if h.id in index]
        probe = qv + beta * vectors[top].mean(axis=0)
        order = np.argsort(-(vectors @ (probe / np.linalg.norm(probe))))
        extra = [t for t in (_turn(records[j]) for j in order) if t not in base[: 10 - n]]
        return _dedup(base[: 10 - n] + extra[:n] + base[10 - n :])

    return rank


def session_fill(n: int) -> Ranker:
    def rank(q: Question, hits: list[Any], qv: np.ndarray, records: list[Any], vectors: np.ndarray) -> list[str]:
        base = _dedup(_turn(h) for h in hits)
        have = {h.session_id for h in hits[: 10 - n]}
        best: dict[str, str] = {}
        for j in np.argsort(-(vectors @ qv)):
            session = records[j].session_id
            if session not in have and session not in best:
                best[session] = _turn(records[j])
        extra = [t for t in best.values() if t not in base[: 10 - n]]
        return _dedup(base[: 10 - n] + extra[:n] + base[10 - n :])

    return rank


def _sessions(records: list[Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for j, r in enumerate(records):
        out.setdefault(r.session_id, []).append(j)
    return out


def session_digest(n: int) -> Ranker:
    def rank(q: Question, hits: list[Any], qv: np.ndarray, records: list[Any], vectors: np.ndarray) -> list[str]:
        base = _dedup(_turn(h) for h in hits)
        have = {h.session_id for h in hits[: 10 - n]}
        sessions = _sessions(records)
        digest = {s: vectors[js].mean(axis=0) for s, js in sessions.items()}
        near = sorted(
            (s for s in sessions if s not in have),
            key=lambda s: -float(digest[s] @ qv) / float(np.linalg.norm(digest[s])),
        )
        extra = []
        for s in near[:n]:
            js = sessions[s]
            extra.append(_turn(records[js[int(np.argmax(vectors[js] @ qv))]]))
        extra = [t for t in extra if t not in base[: 10 - n]]
        return _dedup(base[: 10 - n] + extra[:n] + base[10 - n :])

    return rank


_CLUSTERS: dict[int, np.ndarray] = {}


def _topics(vectors: np.ndarray, k: int) -> np.ndarray:
    """Spherical k-means labels of a user's stored vectors (seeded, 15 rounds), cached per array."""
    key = id(vectors) * 1000 + k
    if key not in _CLUSTERS:
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        rng = np.random.default_rng(0)
        centres = unit[rng.choice(len(unit), size=min(k, len(unit)), replace=False)]
        for _ in range(15):
            labels = np.argmax(unit @ centres.T, axis=1)
            for c in range(len(centres)):
                members = unit[labels == c]
                if len(members):
                    mean = members.sum(axis=0)
                    centres[c] = mean / np.linalg.norm(mean)
        _CLUSTERS[key] = np.argmax(unit @ centres.T, axis=1)
    return _CLUSTERS[key]


def topic_expansion(k: int, top: int, n: int) -> Ranker:
    def rank(q: Question, hits: list[Any], qv: np.ndarray, records: list[Any], vectors: np.ndarray) -> list[str]:
        base = _dedup(_turn(h) for h in hits)
        labels = _topics(vectors, k)
        index = {r.id: i for i, r in enumerate(records)}
        topics = {int(labels[index[h.id]]) for h in hits[:top] if h.id in index}
        have = {h.session_id for h in hits[: 10 - n]}
        mates = [
            j for j in np.argsort(-(vectors @ qv)) if int(labels[j]) in topics and records[j].session_id not in have
        ]
        extra = [t for t in _dedup(_turn(records[j]) for j in mates) if t not in base[: 10 - n]]
        return _dedup(base[: 10 - n] + extra[:n] + base[10 - n :])

    return rank


def questions_demoted(delta: float) -> Ranker:
    def rank(q: Question, hits: list[Any], qv: np.ndarray, records: list[Any], vectors: np.ndarray) -> list[str]:
        if q.category == "event-order":  # interleaved lists (split_order_questions): a re-sort would undo them
            return _dedup(_turn(h) for h in hits)
        scored = sorted(
            hits, key=lambda h: -(h.score - (delta * _question_share(h.text) if h.kind == "message" else 0.0))
        )
        return _dedup(_turn(h) for h in scored)

    return rank


def _r10(found: Sequence[str], evidence: Sequence[str]) -> float:
    top = set(found[:10])
    return sum(e in top for e in evidence) / len(evidence) if evidence else 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cache", type=Path, default=Path("benchmarks/out/recall_cv"))
    parser.add_argument("--embedder", default="multilingual-e5-small")
    args = parser.parse_args(argv)
    data = json.loads((args.data / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    embedder = DiskCachedEmbedder(args.embedder, args.cache / f"embcache_{args.embedder.replace('/', '_')}.npz")
    store = Store(locomo_turns(data), embedder, {})
    dev = locomo_questions(data, store.turns)
    questions = dev + load_frozen("locomo_dev_extra")
    scopes = {
        u: store.backend.scan_vectors(RecordFilter(user_id=u, kinds=("message", "fact")))
        for u in {q.conversation for q in questions}
    }
    asked = [
        (q, store.core.recall(q.question, k=50, user_id=q.conversation), embedder.embed_query(q.question))
        for q in questions
    ]
    embedder.save()

    def scores(ranker: Ranker) -> list[float]:
        return [
            _r10(ranker(q, hits, qv, scopes[q.conversation][0], np.asarray(scopes[q.conversation][1])), q.evidence)
            for q, hits, qv in asked
        ]

    def row(name: str, r: list[float]) -> str:
        masks = [
            [i < len(dev) for i in range(len(questions))],
            [i < len(dev) and q.category == "multi-hop" for i, q in enumerate(questions)],
            *[
                [i >= len(dev) and q.category == c for i, q in enumerate(questions)]
                for c in ("multi-session", "relative-date", "event-order")
            ],
        ]
        cells = [f"{np.mean([x for x, keep in zip(r, m) if keep]):.3f}" for m in masks]
        return f"| {name} | " + " | ".join(cells) + " |"

    print("| ranking (R@10) | " + " | ".join(SETS) + " |")
    print("|---|" + "---:|" * len(SETS))
    shipped = scores(questions_demoted(0.0))
    print(row("as shipped", shipped), flush=True)
    for m, beta, n in ((5, 1.0, 1), (10, 1.0, 1), (5, 0.5, 2), (10, 1.0, 2), (5, 1.0, 3)):
        print(row(f"dense feedback m={m} beta={beta} n={n}", scores(dense_feedback(m, beta, n))), flush=True)
    for n in (1, 2, 3):
        print(row(f"session fill n={n}", scores(session_fill(n))), flush=True)
    for n in (1, 2, 3):
        print(row(f"session digest n={n}", scores(session_digest(n))), flush=True)
    for k, top, n in ((20, 3, 1), (20, 3, 2), (40, 3, 2), (40, 5, 3), (80, 5, 2)):
        print(row(f"topic expansion k={k} top={top} n={n}", scores(topic_expansion(k, top, n))), flush=True)
    grid = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08)
    by_delta = {d: scores(questions_demoted(d)) for d in grid}
    for d in grid[1:]:
        print(row(f"questions demoted delta={d}", by_delta[d]), flush=True)
    # Leave one conversation out: delta chosen on the other two's dev questions, applied to the third's.
    convs = sorted({q.conversation for q in dev})
    cv = list(shipped)
    for held in convs:
        train = [i for i, q in enumerate(dev) if q.conversation != held]
        pick = max(grid, key=lambda d: (np.mean([by_delta[d][i] for i in train]), -d))
        print(f"fold {held}: delta={pick}", flush=True)
        for i, q in enumerate(questions):
            if q.conversation == held:
                cv[i] = by_delta[pick][i]
    print(row("questions demoted, delta cross-validated", cv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
