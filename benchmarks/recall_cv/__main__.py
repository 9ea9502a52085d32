"""CLI: in-sample vs cross-validated recall of one configuration.

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 \\
        python -m benchmarks.recall_cv --data ../shared/data --out benchmarks/out/recall_cv/baseline

    # a change, compared with the saved baseline (paired bootstrap); a ranking
    # knob is named plainly or in full (ranking.bm25_weight):
    python -m benchmarks.recall_cv --set bm25_weight=0.4 --out benchmarks/out/recall_cv/w04 \\
        --compare-to benchmarks/out/recall_cv/baseline

    # measure a snapshot of the library instead of the working tree:
    mkdir -p /tmp/head && git archive HEAD memory_vec | tar -x -C /tmp/head
    git rev-parse --short HEAD > /tmp/head/GIT_COMMIT   # recorded in summary.json
    python -m benchmarks.recall_cv --code /tmp/head ...

Writes ``summary.json``, ``report.md`` and ``runs.npz`` (per-question recall of
every suite, for later paired comparisons) and ``tops.json`` (top-50 turn ids
per question) to ``--out``; embeddings are cached in ``--cache`` (shared by
every run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _parse_grid(items: list[str]) -> dict[str, list[Any]] | None:
    if not items:
        return None
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, _, values = item.partition("=")
        grid[name] = [json.loads(v) for v in values.split(",")]
    return grid


def _compare(base_dir: Path, runs: dict[str, Any]) -> dict[str, Any]:
    """Paired bootstrap of this run against a saved one: the cross-validated
    LoCoMo figure, and every other suite's as-given and CV figures."""
    import numpy as np

    from .stats import bootstrap_fixed, paired_bootstrap_cv

    old = np.load(base_dir / "runs.npz")
    out: dict[str, Any] = {"baseline": str(base_dir)}
    for name, run in runs.items():
        if f"{name}/ids" not in old.files:
            continue
        if [q.id for q in run.questions] != old[f"{name}/ids"].tolist():
            raise SystemExit(f"--compare-to: the {name} questions differ from the baseline run's")
        groups = [q.conversation for q in run.questions]
        row: dict[str, Any] = {}
        if name == "locomo":
            p = paired_bootstrap_cv(old[f"{name}/grid"], run.grid, groups)
            row["cv_diff"], row["cv_ci"] = p["diff"].tolist(), p["ci"].tolist()
        diff = run.grid[0] - old[f"{name}/grid"][0]
        row["as_given_diff"] = diff.mean(axis=0).tolist()
        row["as_given_ci"] = bootstrap_fixed(diff, groups)["pooled"].tolist()
        if run.cv is not None and f"{name}/cv" in old.files and name != "locomo":
            d = run.cv - old[f"{name}/cv"]
            row["cv_diff"], row["cv_ci"] = d.mean(axis=0).tolist(), bootstrap_fixed(d, groups)["pooled"].tolist()
        out[name] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recall_cv", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("../shared/data"),
        help="directory holding locomo/locomo_dev.json and memorybank/memory_bank_{en,cn}.json",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/recall_cv/run"))
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("benchmarks/out/recall_cv"),
        help="directory of the embedding cache (embcache_<model>.npz)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=JSON",
        help="MemoryConfig override for the whole run (write-time settings too), repeatable; a ranking knob "
        "as bm25_weight or ranking.bm25_weight",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="FIELD=V1,V2",
        help="replace the re-tuned grid (repeatable; default: evaluate.DEFAULT_GRID); a ranking knob as "
        "bm25_weight=0.2,0.3 or ranking.bm25_weight=0.2,0.3",
    )
    parser.add_argument(
        "--suites",
        default="locomo,extra,messy,mb_en,mb_cn",
        help="comma-separated subset of locomo,extra,messy,mb_en,mb_cn (locomo always runs)",
    )
    parser.add_argument("--compare-to", type=Path, default=None, help="an earlier --out: paired bootstrap against it")
    parser.add_argument(
        "--code",
        type=Path,
        default=None,
        help="import memory_vec from this directory (a snapshot) instead of the working tree",
    )
    parser.add_argument("--embedder", default="multilingual-e5-small")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--messy-seed", type=int, default=0)
    parser.add_argument(
        "--limit", type=int, default=None, help="first N LoCoMo questions of each conversation only (smoke runs)"
    )
    args = parser.parse_args(argv)
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
    from .evaluate import evaluate, save_runs
    from .report import markdown

    settings = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    summary, runs = evaluate(
        args.data,
        args.cache,
        overrides=settings,
        grid=_parse_grid(args.grid),
        suites=args.suites.split(","),
        embedder=args.embedder,
        bootstrap=args.bootstrap,
        seed=args.seed,
        messy_seed=args.messy_seed,
        limit=args.limit,
    )
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    if args.compare_to is not None:
        summary["compare"] = _compare(args.compare_to, runs)
    save_runs(args.out / "runs.npz", runs)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
    report = markdown(summary)
    (args.out / "report.md").write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
