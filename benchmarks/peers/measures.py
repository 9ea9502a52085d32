"""The three measurements, each on a fresh instance of a system.

* :func:`locomo_recall` — LoCoMo dev recall@5/10/25/50 (paper definition,
  scoring from ``benchmarks/locomo_recall.py``), overall and per category.
* :func:`turn_latency` — save + load per turn at 100 / 1k / 10k stored turns,
  model time subtracted (see :class:`~benchmarks.peers.shared.CachedEmbedder`).
* :func:`demo_tokens` — prompt tokens and LLM calls per turn over the scripted
  300-turn demo conversation, with tracemalloc's peak and the RSS change.
"""

from __future__ import annotations

import gc
import json
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from benchmarks.locomo_recall import evidence_ids, session_date, summarize, turn_text
from memory_vec._cli.demo import build_script

from .shared import CachedEmbedder, CountingLLM, count_tokens
from .systems import System, Turn

__all__ = ["demo_tokens", "latency_texts", "load_locomo", "locomo_recall", "turn_latency"]

Factory = Callable[..., System]


def load_locomo(path: str) -> list[tuple[str, list[Turn], list[tuple[int, str, list[str]]]]]:
    """(conversation id, turns, [(category, question, evidence dia_ids)]) per conversation."""
    out = []
    for conv in json.loads(Path(path).read_text(encoding="utf-8")):
        c = conv["conversation"]
        roles = {c["speaker_a"]: "user", c["speaker_b"]: "assistant"}
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in c:
            start = session_date(c[f"session_{n}_date_time"]).timestamp()
            turns += [
                Turn(t["dia_id"], roles.get(t["speaker"], "user"), t["speaker"], turn_text(t), n, start + 30 * i)
                for i, t in enumerate(c[f"session_{n}"])
            ]
            n += 1
        valid = {t.dia_id for t in turns}
        qa = [(int(q["category"]), q["question"], evidence_ids(q.get("evidence", []), valid)) for q in conv["qa"]]
        out.append((conv["sample_id"], turns, qa))
    return out


def locomo_recall(
    make: Factory,
    embedder: CachedEmbedder,
    llm: CountingLLM,
    workdir: Path,
    data: Sequence[tuple[str, list[Turn], list[tuple[int, str, list[str]]]]],
    limit: int | None = None,
) -> dict[str, Any]:
    system = make(embedder, llm, workdir)
    t0 = time.perf_counter()
    for conv_id, turns, _ in data:
        system.index_locomo(conv_id, turns)
    ingest_s = time.perf_counter() - t0
    rows: list[tuple[int, list[str], list[str]]] = []
    times: list[float] = []
    questions = [(conv_id, q) for conv_id, _, qa in data for q in qa]
    if limit:
        questions = questions[:limit]
    for conv_id, (cat, question, evidence) in questions:
        t0 = time.perf_counter()
        found = system.retrieve(conv_id, question, 50)
        times.append(time.perf_counter() - t0)
        rows.append((cat, found, evidence))
    system.close()
    result = summarize(rows)
    result.update(
        questions=len(rows), ingest_s=round(ingest_s, 1), query_ms_p50=round(float(np.percentile(times, 50)) * 1000, 1)
    )
    return result


def latency_texts(data: Sequence[tuple[str, list[Turn], Any]], turns: int) -> tuple[list[str], list[str]]:
    """(fill pool, held-out live turns): the last ``2 * turns + 1`` LoCoMo turns
    are never in the fill."""
    texts = [t.text for _, conv, _ in data for t in conv]
    n_live = 2 * turns + 1
    return texts[:-n_live], texts[-n_live:]


def turn_latency(
    make: Factory,
    embedder: CachedEmbedder,
    llm: CountingLLM,
    workdir: Path,
    size: int,
    pool: Sequence[str],
    live: Sequence[str],
    warmup: int,
) -> dict[str, Any]:
    system = make(embedder, llm, workdir)
    fill = [pool[i % len(pool)] for i in range(size)]
    t0 = time.perf_counter()
    system.fill(fill, embedder.vectors(fill) if fill else np.zeros((0, embedder.dimension), np.float32))
    fill_s = time.perf_counter() - t0
    overhead: list[float] = []
    wall: list[float] = []
    texts: list[int] = []
    misses: list[int] = []
    calls: list[int] = []
    n_pairs = (len(live) - 1) // 2
    for n in range(n_pairs):
        user, assistant, nxt = live[2 * n], live[2 * n + 1], live[2 * n + 2]
        r0, m0, s0 = embedder.snapshot()
        c0 = llm.calls
        t0 = time.perf_counter()
        system.save(user, assistant)
        system.load(nxt)
        dt = time.perf_counter() - t0
        r1, m1, s1 = embedder.snapshot()
        if n >= warmup:
            wall.append(dt * 1000)
            overhead.append((dt - (s1 - s0)) * 1000)
            texts.append(r1 - r0)
            misses.append(m1 - m0)
            calls.append(llm.calls - c0)
    system.close()
    return {
        "size": size,
        "fill_s": round(fill_s, 2),
        "turns": len(overhead),
        "p50_ms": float(np.percentile(overhead, 50)),
        "p95_ms": float(np.percentile(overhead, 95)),
        "wall_p50_ms": float(np.percentile(wall, 50)),
        "embedded_texts_per_turn": float(np.mean(texts)),
        "model_calls_per_turn": float(np.mean(misses)),
        "llm_calls_per_turn": float(np.mean(calls)),
    }


def demo_tokens(
    make: Factory, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, turns: int = 300
) -> dict[str, Any]:
    """Prompt tokens per turn (memory text + the new message) over the demo script."""
    script, _ = build_script("en", turns)
    gc.collect()
    rss0 = psutil.Process().memory_info().rss
    tracemalloc.start()
    system = make(embedder, llm, workdir)
    c0 = llm.calls
    per_turn: list[int] = []
    full: list[int] = []
    lines: list[str] = []  # the full history, rendered as the "full history" system renders it
    calls: list[int] = []
    for turn in script:
        before = llm.calls
        context = system.load(turn.user)
        per_turn.append(count_tokens(context) + count_tokens(turn.user))
        full.append(count_tokens("\n".join(lines)) + count_tokens(turn.user))
        system.save(turn.user, turn.assistant)
        lines += [f"user: {turn.user}", f"assistant: {turn.assistant}"]
        calls.append(llm.calls - before)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = psutil.Process().memory_info().rss
    system.close()
    return {
        "turns": turns,
        "tokens_per_turn": per_turn,
        "full_per_turn": full,
        "total_tokens": sum(per_turn),
        "full_total": sum(full),
        "llm_calls": llm.calls - c0,
        "llm_calls_per_turn": (llm.calls - c0) / turns,
        "llm_calls_by_turn": calls,
        "tracemalloc_peak_mb": round(peak / 2**20, 1),
        "rss_delta_mb": round((rss1 - rss0) / 2**20, 1),
    }
