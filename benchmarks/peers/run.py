"""memory-vec side by side with what LangChain / LlamaIndex users pick instead.

One command, every system, the same data, embedder, LLM and k::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python -m benchmarks.peers.run \\
        --data ../shared/data/locomo/locomo_dev.json --out benchmarks/out/peers

Writes ``results.json``, ``results.md`` and three PNG plots to ``--out``.
Method: ``benchmarks/README.md`` ("Side by side with peers").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from memory_vec._cli.demo import build_script

from .measures import demo_tokens, latency_texts, load_locomo, locomo_recall, turn_latency
from .report import markdown, plots
from .shared import CachedEmbedder, CountingLLM
from .systems import registry


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo/locomo_dev.json", help="LoCoMo dev JSON")
    parser.add_argument("--out", default="benchmarks/out/peers")
    parser.add_argument("--only", action="append", default=[], help="substring of system names (repeatable)")
    parser.add_argument("--skip-slow", action="store_true", help="skip our Chroma / Milvus Lite rows")
    parser.add_argument("--phases", default="recall,latency,demo", help="comma list of recall, latency, demo")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    parser.add_argument("--turns", type=int, default=30, help="measured turns per size (after --warmup)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--demo-turns", type=int, default=300)
    parser.add_argument("--limit", type=int, default=None, help="first N LoCoMo questions only (smoke runs)")
    parser.add_argument("--k", type=int, default=5, help="memories per prompt for every retrieving system")
    parser.add_argument("--cache", default=None, help="embedding cache .npz (default: OUT/embeddings.npz)")
    parser.add_argument("--replot", action="store_true", help="only redraw tables and plots from OUT/results.json")
    args = parser.parse_args(argv)

    out = Path(args.out)
    if args.replot:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        _write_report(results, out)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="peers-"))
    phases = set(args.phases.split(","))
    chosen = {
        name: entry
        for name, entry in registry().items()
        if (not args.only or any(s.lower() in name.lower() for s in args.only))
        and not (args.skip_slow and entry[1].get("slow"))
    }
    log(f"systems: {', '.join(chosen)}")

    embedder = CachedEmbedder()
    cache = Path(args.cache) if args.cache else out / "embeddings.npz"
    log(f"embedding cache: {embedder.load(cache)} vectors from {cache}")
    data = load_locomo(args.data)
    script, _ = build_script("en", args.demo_turns)
    pool, live = latency_texts(data, args.turns + args.warmup)
    t0 = time.perf_counter()
    embedder.warm(
        [t.text for _, turns, _ in data for t in turns]
        + [q for _, _, qa in data for _, q, _ in qa]
        + [x for t in script for x in (t.user, t.assistant)]
    )
    embedder.save(cache)
    warm_s = time.perf_counter() - t0
    single = _e5_single_call_ms(embedder)
    log(f"warm-up embedding {warm_s:.0f}s; e5 single call p50 {single:.1f} ms")

    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or ''} Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}",
        "embedder": embedder.model_id,
        "e5_single_call_ms_p50": single,
        "k": args.k,
        "sizes": args.sizes if "latency" in phases else [],
        "demo_turns": args.demo_turns,
        "questions_limit": args.limit,
        "command": " ".join(sys.argv),
        "code": _code_state(),
        "systems": {},
    }
    for name, (factory, flags) in chosen.items():
        row: dict[str, Any] = {"note": getattr(factory, "note", "")}
        llm = CountingLLM()

        def make(emb: CachedEmbedder, lm: CountingLLM, wd: Path, _f: Any = factory) -> Any:
            return _f(emb, lm, wd, args.k)

        probe_retrieves = getattr(factory, "retrieves", True)
        if "recall" in phases and flags.get("recall", True) and probe_retrieves:
            t0 = time.perf_counter()
            row["recall"] = locomo_recall(make, embedder, llm, workdir, data, args.limit)
            log(f"{name}: recall@10 {row['recall']['r@10']:.3f} ({time.perf_counter() - t0:.0f}s)")
        if "latency" in phases and flags.get("latency", True):
            row["latency"] = []
            for size in args.sizes:
                t0 = time.perf_counter()
                r = turn_latency(make, embedder, llm, workdir, size, pool, live, args.warmup)
                row["latency"].append(r)
                log(f"{name}: {size} stored, p50 {r['p50_ms']:.1f} ms ({time.perf_counter() - t0:.0f}s)")
        if "demo" in phases and flags.get("demo", True):
            t0 = time.perf_counter()
            row["demo"] = demo_tokens(make, embedder, llm, workdir, args.demo_turns)
            log(
                f"{name}: demo {row['demo']['total_tokens']:,} tokens, "
                f"{row['demo']['llm_calls_per_turn']:.2f} LLM calls/turn ({time.perf_counter() - t0:.0f}s)"
            )
        results["systems"][name] = row
        (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    embedder.save(cache)
    shutil.rmtree(workdir, ignore_errors=True)  # the stores written during the run
    _write_report(results, out)
    return 0


def _write_report(results: dict[str, Any], out: Path) -> None:
    table = markdown(results)
    (out / "results.md").write_text(f"Machine: {results['machine']}\n\n{table}\n", encoding="utf-8")
    print(table)
    for path in plots(results, out):
        log(f"plot {path} ({path.stat().st_size // 1024} KB)")


def _code_state() -> str:
    """The commit measured, and the files that differed from it (numbers from
    a dirty tree say so)."""
    import subprocess

    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=False
        ).stdout.split("\n")
    except OSError:
        return "unknown"
    files = [line[3:] for line in dirty if line.strip()]
    return head + (f" + uncommitted changes in {', '.join(files)}" if files else "")


def _e5_single_call_ms(embedder: CachedEmbedder) -> float:
    """Median time of one uncached e5 call (one short sentence), to turn
    'embedded texts per turn' into milliseconds on this machine."""
    import numpy as np

    times = []
    for i in range(15):
        t0 = time.perf_counter()
        embedder._model.embed_query(f"probe sentence number {i} about the weather and travel plans")
        times.append(time.perf_counter() - t0)
    return round(float(np.median(times)) * 1000, 1)


if __name__ == "__main__":
    raise SystemExit(main())
