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

SETS = ("LoCoMo dev (497)", "multi-hop (74)", "frozen multi-session (32)", "frozen relative-date (36)",
        "frozen event-order (31)")
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
        extra = [t for t in (_turn(records[j]) for j in order) if t not in base[:10 - n]]
        return _dedup(base[:10 - n] + extra[:n] + base[10 - n:])
    return rank


def session_fill(n: int) -> Ranker:
    def rank(q: Question, hits: list[Any], qv: np.ndarray, records: list[Any], vectors: np.ndarray) -> list[str]:
        base = _dedup(_turn(h) for h in hits)
        have = {h.session_id for h in hits[:10 - n]}
        best: dict[str, str] = {}
        for j in np.argsort(-(vectors @ qv)):
            session = records[j].session_id
            if session not in have and session not in best:
                best[session] = _turn(records[j])
        extra = [t for t in best.values() if t not in base[:10 - n]]
        return _dedup(base[:10 - n] + extra[:n] + base[10 - n:])
    return rank


def questions_demoted(delta: float) -> Ranker:
    def rank(q: Question, hits: list[Any], qv: np.ndarray, records: list[Any], vectors: np.ndarray) -> list[str]:
        if q.category == "event-order":  # interleaved lists (split_order_questions): a re-sort would undo them
            return _dedup(_turn(h) for h in hits)
        scored = sorted(hits, key=lambda h: -(h.score - (delta * _question_share(h.text) if h.kind == "message"
                                                         else 0.0)))
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
    scopes = {u: store.backend.scan_vectors(RecordFilter(user_id=u, kinds=("message", "fact")))
              for u in {q.conversation for q in questions}}
    asked = [(q, store.core.recall(q.question, k=50, user_id=q.conversation), embedder.embed_query(q.question))
             for q in questions]
    embedder.save()

    def scores(ranker: Ranker) -> list[float]:
        return [_r10(ranker(q, hits, qv, scopes[q.conversation][0], np.asarray(scopes[q.conversation][1])),
                     q.evidence) for q, hits, qv in asked]

    def row(name: str, r: list[float]) -> str:
        masks = [[i < len(dev) for i in range(len(questions))],
                 [i < len(dev) and q.category == "multi-hop" for i, q in enumerate(questions)],
                 *[[i >= len(dev) and q.category == c for i, q in enumerate(questions)]
                   for c in ("multi-session", "relative-date", "event-order")]]
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
