"""Embedder probe on MemoryBank (Chinese and English): which default embedder?

MemoryBank has no question/evidence labels, so the probe uses the one pairing
the data does carry: each user turn and the reply it got. For every user,
each of their queries is matched against all of that user's replies (all
days, ~38 per user); the target is the reply to that query. This is an
honest, label-free measure of "does the embedder put a message next to the
text it belongs with" in realistic chat, in both languages (the English file
is the same dialogues in English, as a control). Greetings and other turns
whose reply could answer many queries make it hard, equally for every model.

Reported per language and model: recall@1, recall@5 and MRR over all
queries, plus BM25 (memory-vec's index, jieba tokens for Chinese) on the same
task. Cosine is computed as memory-vec computes it (``embed_query`` against
``embed_documents``).

Usage::

    HF_HUB_OFFLINE=1 python benchmarks/embedder_probe.py --data ../shared/data/memorybank --out /tmp/probe
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from memory_vec._rules.bm25 import BM25Index, IndexedDoc
from memory_vec.embeddings import get_embedder

MODELS = {"e5": "multilingual-e5-small", "minilm": "all-MiniLM-L6-v2"}


def pairs_by_user(path: Path) -> dict[str, list[tuple[str, str]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, list[tuple[str, str]]] = {}
    for user, item in data.items():
        rows = [
            (t["query"], t["response"])
            for day in item["history"].values()
            for t in day
            if t.get("query", "").strip() and t.get("response", "").strip()
        ]
        out[user] = rows
    return out


def ranks_dense(name: str, users: dict[str, list[tuple[str, str]]]) -> tuple[list[int], float]:
    emb = get_embedder(MODELS[name])
    ranks: list[int] = []
    t0 = time.perf_counter()
    for rows in users.values():
        q = (
            np.stack([emb.embed_query(a) for a, _ in rows])
            if not emb.symmetric
            else emb.embed_documents([a for a, _ in rows])
        )
        d = emb.embed_documents([b for _, b in rows])
        sims = q @ d.T
        for i in range(len(rows)):
            ranks.append(int((sims[i] > sims[i, i]).sum()) + 1)
    return ranks, time.perf_counter() - t0


def ranks_bm25(users: dict[str, list[tuple[str, str]]]) -> list[int]:
    ranks: list[int] = []
    for rows in users.values():
        index = BM25Index()
        index.add(IndexedDoc(str(i), b, seq=i) for i, (_, b) in enumerate(rows))
        for i, (a, _) in enumerate(rows):
            found = [d for d, _ in index.search(a, k=len(rows))]
            ranks.append(found.index(str(i)) + 1 if str(i) in found else len(rows))
    return ranks


def metrics(ranks: list[int]) -> dict[str, float]:
    return {
        "r@1": statistics.fmean(r <= 1 for r in ranks),
        "r@5": statistics.fmean(r <= 5 for r in ranks),
        "mrr": statistics.fmean(1.0 / r for r in ranks),
        "n": len(ranks),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/memorybank")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    print("| language | method | R@1 | R@5 | MRR | queries | seconds |")
    print("|---|---|---|---|---|---|---|")
    for lang in ("cn", "en"):
        users = pairs_by_user(Path(args.data) / f"memory_bank_{lang}.json")
        for name in MODELS:
            ranks, seconds = ranks_dense(name, users)
            m = metrics(ranks)
            results[f"{lang}/{name}"] = {**m, "seconds": seconds}
            print(
                f"| {lang} | {name} | {m['r@1']:.3f} | {m['r@5']:.3f} | {m['mrr']:.3f} | {m['n']} | {seconds:.1f} |",
                flush=True,
            )
        m = metrics(ranks_bm25(users))
        results[f"{lang}/bm25"] = m
        print(f"| {lang} | bm25 | {m['r@1']:.3f} | {m['r@5']:.3f} | {m['mrr']:.3f} | {m['n']} | - |", flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "embedder_probe.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
