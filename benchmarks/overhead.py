"""Per-turn cost of the memory against its embedding floor, and prompt
tokens against the full history.

Part 1, per-turn cost (issue #15's floor). For each store size (default 100,
1,000 and 10,000 stored memories of the measured user, in-process backend,
default embedder):

* **Fill.** The measured user's store is pre-filled through the backend
  (``backend.upsert`` in batches of 1,000) with the *other* conversations of
  the data file (``"{speaker}: {text}"``, plain vectors embedded once and
  cached with ``--vectors-cache``), cycled with new ids in sessions of 20
  messages until the size is reached.
* **Turns.** The live conversation (``--conversation``, default the longest
  one, conv-41 in the dev split: 32 sessions) is replayed in order: each
  LoCoMo session is one session; its messages are paired (user, assistant)
  in order (a session's odd last message is dropped), and the next input is
  the user message of the next pair. ``--one-session`` replays the whole
  conversation as one session instead, so its working buffer folds into the
  summary every ~15 turns. A **turn** =
  ``add_messages([user, assistant])`` + ``build_context(next input)``: all
  the library does for it (facts, conflicts, folds, healing, trace).
* **Floor**, per turn, on the same texts: ``embedder.embed_documents([user,
  assistant])`` in one call + ``embedder.embed_query(next input)`` + one
  ``backend.query`` with the user filter and the candidate count recall
  fetches, on the same store, interleaved with the turns (the order of turn
  and floor alternates, so neither always runs second).
* **Reported**: the per-turn ratio turn / floor (median, p95) and the ratio
  of medians, over every turn of the conversation after ``--warmup`` turns
  of a warm-up session (texts from the fill pool; model load, keyword index
  build). The texts the core embeds per turn are counted through a thin
  counting wrapper around the embedder. ``--cold-cache`` empties the core's
  embedding caches before each turn's recall (the worst case of a server
  whose cache other users' turns have turned over).

Part 2, prompt tokens: ``memory_vec._cli.demo.run_demo`` (en and zh, 150 turns, and
300-turn runs) reports the prompt tokens summed over the conversation with the
memory (summary + recent turns + relevant memories + the new message) and with
the full history.

Usage::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/overhead.py \\
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

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec._cli.demo import run_demo
from memory_vec._core import RECALL_KINDS
from memory_vec._model.records import MemoryRecord
from memory_vec.backends import RecordFilter
from memory_vec.embeddings import Embedder
from memory_vec.testing import parts


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def sessions_of(conv: dict[str, Any]) -> list[list[str]]:
    c = conv["conversation"]
    out, n = [], 1
    while f"session_{n}" in c:
        out.append([turn_text(t) for t in c[f"session_{n}"]])
        n += 1
    return out


def live_turns(sessions: Sequence[Sequence[str]], one_session: bool = False) -> list[tuple[str, str, str, str]]:
    """(session id, user, assistant, next input) for every pair of the conversation."""
    pairs = [
        ("live" if one_session else f"session_{s + 1}", msgs[i], msgs[i + 1])
        for s, msgs in enumerate(sessions)
        for i in range(0, len(msgs) - 1, 2)
    ]
    out = []
    for j, (session, user, assistant) in enumerate(pairs):
        nxt = pairs[j + 1][1] if j + 1 < len(pairs) else sessions[0][0]
        out.append((session, user, assistant, nxt))
    return out


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


class CountingEmbedder:
    """Delegates to an embedder and counts the texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts = 0
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        self.calls += 1
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.texts += 1
        self.calls += 1
        return self.inner.embed_query(text)


def fill(core: MemoryCore, size: int, pool: Sequence[str], pool_vectors: np.ndarray, user: str) -> float:
    """Write ``size`` message records of ``user`` straight through the backend."""
    t0 = time.perf_counter()
    base = time.time() - 86400 * 365
    for start in range(0, size, 1000):
        stop = min(size, start + 1000)
        rows = [
            MemoryRecord(
                id=uuid.uuid4().hex,
                text=pool[i % len(pool)],
                role="user" if i % 2 == 0 else "assistant",
                user_id=user,
                session_id=f"fill-{i // 20}",
                timestamp=base + i * 60,
                kind="message",
                seq=i % 20 + 1,
            )
            for i in range(start, stop)
        ]
        parts(core).backend.upsert(rows, pool_vectors[[i % len(pool) for i in range(start, stop)]])
    return time.perf_counter() - t0


class SlowScriptedLLM:
    """Stand-in for a remote LLM summarizer: answers after ``delay`` seconds of
    waiting (network and generation; no CPU), with a short fixed summary."""

    def __init__(self, delay: float) -> None:
        self.delay, self.calls = delay, 0

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        time.sleep(self.delay)
        return f"- the user and the assistant talked (fold {self.calls})"


def measure(
    size: int,
    pool: Sequence[str],
    pool_vectors: np.ndarray,
    turns: Sequence[tuple[str, str, str, str]],
    embedder: Embedder,
    warmup: int,
    settings: dict[str, Any],
    cold_cache: bool = False,
    llm_delay: float | None = None,
) -> dict[str, Any]:
    user = "bench-user"
    config = MemoryConfig(
        user_id=user,
        session_id="warmup",
        backend="memory",
        persist_dir=tempfile.mkdtemp(prefix=f"overhead-{size}-"),
        **settings,
    )
    counting = CountingEmbedder(embedder)
    llm = SlowScriptedLLM(llm_delay) if llm_delay is not None else None
    core = MemoryCore(config, embedder=counting, llm=llm)  # type: ignore[arg-type]
    fill_s = fill(core, size, pool, pool_vectors, user)
    assert parts(core).backend.count(RecordFilter(user_id=user)) == size
    fetch = max(config.ranking.candidate_pool, config.recall_k * config.ranking.candidate_multiplier)
    where = RecordFilter(
        user_id=user, agent_id=config.agent_id, include_shared=config.include_shared, kinds=RECALL_KINDS
    )
    for i in range(warmup):  # model load, keyword index build; texts of the fill pool
        core.add_messages([("user", pool[2 * i]), ("assistant", pool[2 * i + 1])], session_id="warmup")
        core.build_context(pool[2 * i + 2], session_id="warmup")

    def floor(user_msg: str, assistant_msg: str, next_msg: str) -> float:
        t0 = time.perf_counter()
        embedder.embed_documents([user_msg, assistant_msg])
        vector = embedder.embed_query(next_msg)
        parts(core).backend.query(vector, k=fetch, where=where)
        return time.perf_counter() - t0

    written: dict[str, Any] = {}

    def turn(session: str, user_msg: str, assistant_msg: str, next_msg: str) -> float:
        t0 = time.perf_counter()
        results = core.add_messages([("user", user_msg), ("assistant", assistant_msg)], session_id=session)
        t1 = time.perf_counter()
        write = core.last_trace
        if cold_cache:  # as if many other users' turns ran since: only this turn's own query stays cached
            core._engine.doc_cache.clear()
            core._engine.query_cache.clear()
        core.build_context(next_msg, session_id=session)
        t2 = time.perf_counter()
        written.update(
            add_ms=(t1 - t0) * 1000,
            context_ms=(t2 - t1) * 1000,
            folded=results[0].summarized,
            facts=sum(len(r.fact_ids) for r in results),
            write_timings={k: round(v * 1000, 2) for k, v in (write.timings if write else {}).items()},
        )
        return t2 - t0

    rows: list[dict[str, Any]] = []
    part_ms: dict[str, list[float]] = {}
    for n, (session, user_msg, assistant_msg, next_msg) in enumerate(turns):
        texts_before, calls_before = counting.texts, counting.calls
        if n % 2 == 0:
            t_floor = floor(user_msg, assistant_msg, next_msg)
            t_turn = turn(session, user_msg, assistant_msg, next_msg)
        else:
            t_turn = turn(session, user_msg, assistant_msg, next_msg)
            t_floor = floor(user_msg, assistant_msg, next_msg)
        read = core.last_trace
        rows.append(
            {
                "turn_ms": t_turn * 1000,
                "floor_ms": t_floor * 1000,
                "ratio": t_turn / t_floor,
                "texts": counting.texts - texts_before,
                "calls": counting.calls - calls_before,
                "session": session,
                **written,
            }
        )
        if read is not None:
            for name, seconds in read.timings.items():
                part_ms.setdefault(f"build_context.{name}", []).append(seconds * 1000)
    core.flush()  # folds still running off the turn
    stored = parts(core).backend.count(RecordFilter(user_id=user))
    release_stores()
    turn_ms = [r["turn_ms"] for r in rows]
    floor_ms = [r["floor_ms"] for r in rows]
    ratios = [r["ratio"] for r in rows]
    return {
        "stored_before": size,
        "stored_after": stored,
        "turns": len(rows),
        "fill_seconds": round(fill_s, 2),
        "turn_median_ms": statistics.median(turn_ms),
        "turn_p95_ms": pct(turn_ms, 95),
        "floor_median_ms": statistics.median(floor_ms),
        "floor_p95_ms": pct(floor_ms, 95),
        "ratio_median": statistics.median(ratios),
        "ratio_p95": pct(ratios, 95),
        "ratio_max": max(ratios),
        "ratio_of_medians": statistics.median(turn_ms) / statistics.median(floor_ms),
        "texts_per_turn_mean": statistics.fmean(r["texts"] for r in rows),
        "calls_per_turn_mean": statistics.fmean(r["calls"] for r in rows),
        "fetch_k": fetch,
        "settings": settings,
        "cold_cache": cold_cache,
        "folds": sum(bool(r.get("folded")) for r in rows),
        "llm_delay": llm_delay,
        "llm_calls": llm.calls if llm is not None else None,
        "read_parts_median_ms": {k: round(statistics.median(v), 2) for k, v in part_ms.items()},
        "per_turn": rows,
    }


def demo_tokens(lang: str, turns: int) -> dict[str, Any]:
    sink = io.StringIO()
    t0 = time.perf_counter()
    result = run_demo(lang=lang, backend="memory", turns=turns, out=sink, every=turns)
    memory, full = int(result["memory_tokens"]), int(result["full_tokens"])  # type: ignore[call-overload]
    return {
        "lang": lang,
        "turns": turns,
        "memory_tokens": memory,
        "full_tokens": full,
        "saved": 1 - memory / full,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo_dev.json)")
    parser.add_argument("--conversation", default=None, help="sample_id replayed live (default: the longest)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    parser.add_argument("--turns", type=int, default=None, help="measured turns per size (default: all)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--one-session",
        action="store_true",
        help="replay the live conversation as one session (its working buffer folds) instead of "
        "one session per LoCoMo session",
    )
    parser.add_argument(
        "--demo",
        nargs="*",
        default=["en:150", "zh:150", "en:300", "zh:300"],
        help="demo runs as lang:turns (--demo with no value: none)",
    )
    parser.add_argument(
        "--cold-cache",
        action="store_true",
        help="empty the core's embedding caches between a turn's write and its next recall, as "
        "if many other users' turns had run in between",
    )
    parser.add_argument("--vectors-cache", default=None, help="reuse the fill pool's vectors from this .npy file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="repeatable MemoryConfig override (JSON value), e.g. --set contextual_embedding=false",
    )
    parser.add_argument(
        "--llm-delay",
        type=float,
        default=None,
        help="summarize with a scripted LLM that answers after this many seconds (a remote LLM's "
        "latency; folds need --one-session or a small max_token_limit)",
    )
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    settings = {f: json.loads(v) for f, v in (item.split("=", 1) for item in args.set)}

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    live = (
        max(data, key=lambda c: sum(len(s) for s in sessions_of(c)))
        if args.conversation is None
        else next(c for c in data if c["sample_id"] == args.conversation)
    )
    turns = live_turns(sessions_of(live), args.one_session)[: args.turns]
    pool = [t for c in data if c is not live for s in sessions_of(c) for t in s]
    probe = MemoryCore(MemoryConfig(user_id="probe", backend="memory", persist_dir=tempfile.mkdtemp()))
    embedder = parts(probe).embedder
    t0 = time.perf_counter()
    cache = Path(args.vectors_cache) if args.vectors_cache else None
    if cache is not None and cache.exists() and len(np.load(cache)) == len(pool):
        pool_vectors = np.load(cache)
    elif args.sizes:
        pool_vectors = np.asarray(embedder.embed_documents(pool), dtype=np.float32)
        if cache is not None:
            np.save(cache, pool_vectors)
    else:
        pool_vectors = np.zeros((0, embedder.dimension), dtype=np.float32)
    if args.sizes:
        print(
            f"embedder {embedder.model_id}: {len(pool)} fill vectors ready in {time.perf_counter() - t0:.1f}s; "
            f"live conversation {live['sample_id']}: {len(turns)} turns",
            file=sys.stderr,
        )
    release_stores()

    rows = []
    for size in args.sizes:
        row = measure(size, pool, pool_vectors, turns, embedder, args.warmup, settings, args.cold_cache, args.llm_delay)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "per_turn"}), file=sys.stderr)

    demos = []
    for spec in args.demo:
        lang, n = spec.split(":")
        demos.append(demo_tokens(lang, int(n)))
        print(json.dumps(demos[-1]), file=sys.stderr)

    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"embedder {embedder.model_id}; settings {settings or 'defaults'}\n"
    )
    if rows:
        print(
            "| stored memories | turns | turn median ms | floor median ms | per-turn ratio median "
            "| per-turn ratio p95 | ratio of medians | texts embedded / turn |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['stored_before']:,} | {r['turns']} | {r['turn_median_ms']:.1f} | {r['floor_median_ms']:.1f} | "
            f"{r['ratio_median']:.2f} | {r['ratio_p95']:.2f} | {r['ratio_of_medians']:.2f} | "
            f"{r['texts_per_turn_mean']:.2f} |"
        )
    if demos:
        print("\n| demo | turns | memory prompt tokens | full-history prompt tokens | saved |")
        print("|---|---:|---:|---:|---:|")
    for d in demos:
        print(f"| {d['lang']} | {d['turns']} | {d['memory_tokens']:,} | {d['full_tokens']:,} | {d['saved']:.1%} |")
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "overhead": rows,
                    "demo": demos,
                    "pool": len(pool),
                    "live": live["sample_id"],
                    "embedder": embedder.model_id,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
