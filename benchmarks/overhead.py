"""Per-turn overhead of the memory, and prompt tokens against the full history.

Part 1, overhead. For each store size (default 100, 1,000 and 10,000 stored
memories of one user, in-process backend, default embedder):

* the store is filled by writing records directly through the backend
  (``backend.upsert`` in batches of 1,000) with precomputed vectors of real
  texts: the LoCoMo dev turns (``"{speaker}: {text}"``), embedded once with
  the same embedder; a store larger than the pool reuses texts (and their
  vectors) with new ids, sessions and sequence numbers;
* a **turn** is what an application does per exchange:
  ``add_messages([user, assistant])`` + ``build_context(next user message)``,
  on turns the store has never seen (the last ``--turns`` user/assistant
  pairs of the dataset are held out of the fill pool);
* the **baseline** is the bare cost the memory cannot avoid: one embedding
  call (``embedder.embed_query`` of a fresh text) + one backend query
  (``backend.query`` with the user filter and the same candidate count
  ``recall`` fetches, ``max(candidate_pool, k * candidate_multiplier)``),
  measured in the same process on the same store, interleaved with the turns;
* reported: median and p95 (ms) of both, and the ratio of the medians.

Warm-up turns (not counted) load the model and build the keyword index.

Part 2, prompt tokens: ``memory_vec.demo.run_demo`` (en and zh, 150 turns, and
300-turn runs) reports the prompt tokens summed over the conversation with the
memory (summary + recent turns + relevant memories + the new message) and with
the full history.

Usage::

    HF_HUB_OFFLINE=1 python benchmarks/overhead.py \\
        --data ../shared/data/locomo/locomo_dev.json --out /tmp/overhead.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from memory_vec import MemoryConfig, MemoryCore
from memory_vec import release_stores
from memory_vec.backends import RecordFilter
from memory_vec.core import RECALL_KINDS
from memory_vec.demo import run_demo
from memory_vec.records import MemoryRecord


def load_turns(path: str) -> list[str]:
    """Every LoCoMo turn as ``"speaker: text"``, in conversation order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    texts = []
    for conv in data:
        c = conv["conversation"]
        n = 1
        while f"session_{n}" in c:
            for turn in c[f"session_{n}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                texts.append(f"{turn['speaker']}: {text}")
            n += 1
    return texts


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def fill(core: MemoryCore, size: int, pool: Sequence[str], pool_vectors: np.ndarray, user: str) -> float:
    """Write ``size`` message records of ``user`` straight through the backend."""
    t0 = time.perf_counter()
    base = time.time() - 86400 * 365
    for start in range(0, size, 1000):
        stop = min(size, start + 1000)
        rows = []
        for i in range(start, stop):
            j = i % len(pool)
            rows.append(MemoryRecord(
                id=uuid.uuid4().hex, text=pool[j], role="user" if i % 2 == 0 else "assistant", user_id=user,
                session_id=f"fill-{i // 200}", timestamp=base + i * 60, kind="message", seq=i % 200 + 1,
            ))
        core.backend.upsert(rows, pool_vectors[[i % len(pool) for i in range(start, stop)]])
    return time.perf_counter() - t0


def measure(size: int, pool: Sequence[str], pool_vectors: np.ndarray, held_out: Sequence[str],
            baseline_texts: Sequence[str], warmup: int) -> dict[str, Any]:
    user = "bench-user"
    config = MemoryConfig(user_id=user, session_id="live", backend="memory",
                          persist_dir=tempfile.mkdtemp(prefix=f"overhead-{size}-"))
    core = MemoryCore(config)
    fill_s = fill(core, size, pool, pool_vectors, user)
    assert core.backend.count(RecordFilter(user_id=user)) == size
    fetch = max(config.candidate_pool, config.recall_k * config.candidate_multiplier)
    where = RecordFilter(user_id=user, agent_id=config.agent_id, include_shared=config.include_shared,
                         kinds=RECALL_KINDS)
    pairs = [(held_out[i], held_out[i + 1]) for i in range(0, len(held_out) - 2, 2)]
    turn_ms: list[float] = []
    base_ms: list[float] = []
    parts: dict[str, list[float]] = {}
    for n, (user_msg, assistant_msg) in enumerate(pairs):
        next_user = held_out[2 * n + 2]
        t0 = time.perf_counter()
        core.add_messages([("user", user_msg), ("assistant", assistant_msg)])
        write_timings = dict(core.last_trace.timings) if core.last_trace else {}
        core.build_context(next_user)
        t_turn = time.perf_counter() - t0
        read_timings = dict(core.last_trace.timings) if core.last_trace else {}
        # Baseline on a fresh text (the embedder has no cache of its own).
        text = baseline_texts[n % len(baseline_texts)]
        t0 = time.perf_counter()
        vector = core.embedder.embed_query(text)
        core.backend.query(vector, k=fetch, where=where)
        t_base = time.perf_counter() - t0
        if n >= warmup:
            turn_ms.append(t_turn * 1000)
            base_ms.append(t_base * 1000)
            for prefix, timings in (("add_messages", write_timings), ("build_context", read_timings)):
                for name, seconds in timings.items():
                    parts.setdefault(f"{prefix}.{name}", []).append(seconds * 1000)
    stored = core.backend.count(RecordFilter(user_id=user))
    release_stores()
    return {
        "stored_before": size, "stored_after": stored, "turns": len(turn_ms), "fill_seconds": round(fill_s, 2),
        "turn_median_ms": statistics.median(turn_ms), "turn_p95_ms": pct(turn_ms, 95),
        "baseline_median_ms": statistics.median(base_ms), "baseline_p95_ms": pct(base_ms, 95),
        "ratio_of_medians": statistics.median(turn_ms) / statistics.median(base_ms),
        "fetch_k": fetch,
        "turn_parts_median_ms": {k: round(statistics.median(v), 1) for k, v in parts.items()},
    }


def demo_tokens(lang: str, turns: int) -> dict[str, Any]:
    sink = io.StringIO()
    t0 = time.perf_counter()
    result = run_demo(lang=lang, backend="memory", turns=turns, out=sink, every=turns)
    memory, full = int(result["memory_tokens"]), int(result["full_tokens"])  # type: ignore[call-overload]
    return {"lang": lang, "turns": turns, "memory_tokens": memory, "full_tokens": full,
            "saved": 1 - memory / full, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo_dev.json)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    parser.add_argument("--turns", type=int, default=60, help="measured turns per size (after warm-up)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--demo", nargs="*", default=["en:150", "zh:150", "en:300", "zh:300"],
                        help="demo runs as lang:turns")
    parser.add_argument("--pool-size", type=int, default=1000, help="distinct real texts the fill cycles through")
    parser.add_argument("--vectors-cache", default=None, help="reuse the pool's vectors from this .npy file")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)

    texts = load_turns(args.data)
    n_live = 2 * (args.turns + args.warmup) + 2
    held_out, rest = texts[-n_live:], texts[:-n_live]
    baseline_texts, pool = rest[-(args.turns + args.warmup):], rest[:-(args.turns + args.warmup)]
    pool = pool[: args.pool_size]
    probe = MemoryCore(MemoryConfig(user_id="probe", backend="memory", persist_dir=tempfile.mkdtemp()))
    t0 = time.perf_counter()
    cache = Path(args.vectors_cache) if args.vectors_cache else None
    if cache is not None and cache.exists() and len(np.load(cache)) == len(pool):
        pool_vectors = np.load(cache)
    elif args.sizes:
        pool_vectors = np.asarray(probe.embedder.embed_documents(pool), dtype=np.float32)
        if cache is not None:
            np.save(cache, pool_vectors)
    else:
        pool_vectors = np.zeros((0, probe.embedder.dimension), dtype=np.float32)
    embed_s = time.perf_counter() - t0
    if args.sizes:
        print(f"embedder {probe.embedder.model_id}: {len(pool)} pool vectors ready in {embed_s:.1f}s", file=sys.stderr)
    release_stores()

    rows = []
    for size in args.sizes:
        row = measure(size, pool, pool_vectors, held_out, baseline_texts, args.warmup)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    demos = []
    for spec in args.demo:
        lang, turns = spec.split(":")
        demos.append(demo_tokens(lang, int(turns)))
        print(json.dumps(demos[-1]), file=sys.stderr)

    print(f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"embedder {probe.embedder.model_id}\n")
    if rows:
        print("| stored memories | turn median ms | turn p95 ms | embed+query median ms | embed+query p95 ms "
              "| ratio of medians |")
        print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['stored_before']:,} | {r['turn_median_ms']:.1f} | {r['turn_p95_ms']:.1f} | "
              f"{r['baseline_median_ms']:.1f} | {r['baseline_p95_ms']:.1f} | {r['ratio_of_medians']:.2f} |")
    if demos:
        print("\n| demo | turns | memory prompt tokens | full-history prompt tokens | saved |")
        print("|---|---:|---:|---:|---:|")
    for d in demos:
        print(f"| {d['lang']} | {d['turns']} | {d['memory_tokens']:,} | {d['full_tokens']:,} | {d['saved']:.1%} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"overhead": rows, "demo": demos, "pool": len(pool),
                                              "embedder": probe.embedder.model_id}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
