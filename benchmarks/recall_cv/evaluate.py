"""``evaluate()``: in-sample and cross-validated recall of one configuration.

1. LoCoMo dev (the dataset's 497 questions): every configuration of the grid
   on one store; the in-sample figure is the configuration as given (what
   the shipped defaults were tuned on: all three conversations); the
   cross-validated one re-tunes on two conversations and scores the third.
2. The frozen extra LoCoMo questions, the messy-chat rewrite of the same
   conversations (its own store), and MemoryBank en/zh (their own stores):
   asked under the configuration as given and under each configuration the
   LoCoMo folds chose (a question of conversation c gets the choice of the
   fold that held c out; MemoryBank, never tuned on, gets the choice tuned
   on all three conversations), next to BM25 alone and dense alone.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .corpora import Turn, check_evidence, locomo_questions, locomo_turns, memorybank_turns, messy_turns
from .questions import Question, load_frozen
from .runner import BASELINES, KS, DiskCachedEmbedder, Store, SuiteRun
from .stats import K10, bootstrap_cv, bootstrap_fixed, cross_validate, select

__all__ = ["DEFAULT_GRID", "SUITES", "evaluate", "grid_configs"]

#: The settings the shipped defaults were chosen on (benchmarks/RESULTS.md), re-tuned in every fold.
DEFAULT_GRID: dict[str, list[Any]] = {
    "bm25_weight": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
    "bm25_context_weight": [0.0, 0.25, 0.5, 0.75, 1.0],
    "speaker_boost": [0.0, 0.05],
    "candidate_pool": [100, 200, 400],
}
SUITES = ("locomo", "extra", "messy", "mb_en", "mb_cn")
TEMPORAL = ("relative-date", "event-order")


def grid_configs(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """``[{}] + every grid point``: index 0 is the configuration as given."""
    names = list(grid)
    return [{}] + [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def _masks(questions: Sequence[Question], extra_temporal: bool) -> dict[str, np.ndarray]:
    cats = np.asarray([q.category for q in questions])
    masks = {str(c): cats == c for c in dict.fromkeys(cats.tolist())}
    if extra_temporal:
        masks["temporal (relative-date + event-order)"] = np.isin(cats, TEMPORAL)
    return masks


def _figures(scores: np.ndarray, masks: dict[str, np.ndarray]) -> dict[str, Any]:
    return {
        "overall": scores.mean(axis=0).tolist(),
        "n": len(scores),
        "per_category": {name: {"r": scores[m].mean(axis=0).tolist(), "n": int(m.sum())} for name, m in masks.items()},
    }


def _with_ci(fig: dict[str, Any], ci: dict[str, np.ndarray]) -> dict[str, Any]:
    if "pooled" in ci:  # none with --bootstrap 0
        fig["ci"] = ci["pooled"].tolist()
    for name, row in fig["per_category"].items():
        if name in ci:
            row["ci"] = ci[name].tolist()
    return fig


def _fixed_block(scores: np.ndarray, groups: list[str], masks: dict[str, np.ndarray], n: int, seed: int) -> dict:
    return _with_ci(_figures(scores, masks), bootstrap_fixed(scores, groups, masks=masks, n=n, seed=seed))


def _suite_summary(
    run: SuiteRun, cols: dict[str, int], fold_choice: dict[str, int] | None, *, temporal: bool, n: int, seed: int
) -> dict[str, Any]:
    """Default, CV (fold choices mapped to this run's columns) and baselines of a suite."""
    groups = [q.conversation for q in run.questions]
    masks = _masks(run.questions, temporal)
    out: dict[str, Any] = {"default": _fixed_block(run.grid[cols["default"]], groups, masks, n, seed)}
    if fold_choice is not None:
        per_q = np.stack(
            [run.grid[cols[f"cfg{fold_choice.get(g, fold_choice.get('*', 0))}"], i] for i, g in enumerate(groups)]
        )
        out["cv"] = _fixed_block(per_q, groups, masks, n, seed)
        run.cv = per_q
    out["baselines"] = {name: _fixed_block(s, groups, masks, n, seed) for name, s in run.baselines.items()}
    anchored = [i for i, q in enumerate(run.questions) if q.anchor]
    if anchored:  # relative-date: is the miss the anchor (named in the question) or the target?
        top = run.top["default"]
        out["anchor_vs_target_r10"] = {
            "anchor": float(np.mean([_share(top[i][:10], run.questions[i].anchor) for i in anchored])),
            "target": float(np.mean([_share(top[i][:10], run.questions[i].target) for i in anchored])),
            "n": len(anchored),
        }
    out["recall_ms_p50"] = run.recall_ms_p50
    return out


def _share(found: Sequence[str], wanted: Sequence[str]) -> float:
    return sum(1 for e in wanted if e in set(found)) / len(wanted) if wanted else 1.0


def _rank_profile(run: SuiteRun) -> dict[str, dict[str, float]]:
    """Where each evidence turn of the default ranking sits, per category."""
    out: dict[str, dict[str, list[int]]] = {}
    for q, top, bm, dp in zip(run.questions, run.top["default"], run.top["bm25"], run.top["dense (plain vectors)"]):
        row = out.setdefault(
            q.category, {"top10": [], "11-50": [], "missed": [], "missed_bm25_top50": [], "missed_dense_top50": []}
        )
        for e in q.evidence:
            rank = top.index(e) if e in top else None
            row["top10"].append(rank is not None and rank < 10)
            row["11-50"].append(rank is not None and rank >= 10)
            row["missed"].append(rank is None)
            if rank is None:
                row["missed_bm25_top50"].append(e in bm)
                row["missed_dense_top50"].append(e in dp)
    return {
        c: {k: float(np.mean(v)) if v else 0.0 for k, v in row.items()} | {"evidence": len(row["top10"])}
        for c, row in out.items()
    }


def _git_commit(memory_vec_file: str) -> str:
    root = Path(memory_vec_file).resolve().parent.parent
    stamp = root / "GIT_COMMIT"  # a snapshot made with `git archive` says where it came from
    if stamp.exists():
        return stamp.read_text(encoding="utf-8").strip()
    try:
        return (
            subprocess.run(
                ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                check=False,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            or "not a git checkout"
        )
    except OSError:
        return "unknown"


def evaluate(
    data_dir: Path,
    cache_dir: Path,
    *,
    overrides: dict[str, Any] | None = None,
    grid: dict[str, list[Any]] | None = None,
    suites: Sequence[str] = SUITES,
    embedder: str = "multilingual-e5-small",
    bootstrap: int = 2000,
    seed: int = 0,
    messy_seed: int = 0,
    limit: int | None = None,
) -> tuple[dict[str, Any], dict[str, SuiteRun]]:
    """Measure one configuration (``overrides`` of ``MemoryConfig`` for the
    whole run, write-time settings included) with ``grid`` re-tuned per fold.

    Returns the summary (JSON-ready) and the raw runs (per-question arrays,
    for :func:`~.stats.paired_bootstrap_cv` against another run).
    """
    import memory_vec

    settings = dict(overrides or {})
    configs = grid_configs(DEFAULT_GRID if grid is None else grid)
    cache = DiskCachedEmbedder(embedder, cache_dir / f"embcache_{embedder.replace('/', '_')}.npz")
    summary: dict[str, Any] = {
        "code": {"memory_vec": memory_vec.__file__, "git": _git_commit(memory_vec.__file__)},
        "settings": settings,
        "grid": grid or DEFAULT_GRID,
        "configs": configs,
        "ks": list(KS),
        "embedder": embedder,
        "bootstrap": bootstrap,
        "seed": seed,
        "messy_seed": messy_seed,
    }
    runs: dict[str, SuiteRun] = {}
    data = json.loads((data_dir / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))

    def store(name: str, turns: list[Turn]) -> Store:
        s = Store(turns, cache, settings)
        cache.save()
        summary.setdefault("stores", {})[name] = {
            "turns": len(turns),
            "records": s.record_count,
            "ingest_s": round(s.ingest_s, 1),
            "embedded": cache.misses,
        }
        print(f"[{name}] {len(turns)} turns -> {s.record_count} records, ingest {s.ingest_s:.0f} s", flush=True)
        return s

    clean = store("locomo", locomo_turns(data))
    qa = locomo_questions(data, clean.turns)
    if limit:  # smoke runs: the first questions of every conversation, so every fold has training data
        seen: dict[str, int] = {}
        qa = [
            q
            for q in qa
            if (seen := {**seen, q.conversation: seen.get(q.conversation, 0) + 1})[q.conversation] <= limit
        ]
    runs["locomo"] = clean.run(qa, configs, progress="locomo grid")
    cache.save()
    groups = [q.conversation for q in qa]
    cv = cross_validate(runs["locomo"].grid, groups)
    runs["locomo"].cv = cv.per_question
    best_all = select(runs["locomo"].grid[:, :, K10], np.full(len(qa), 1 / len(qa)))
    masks = _masks(qa, False)
    loc: dict[str, Any] = {
        "in_sample_default": _fixed_block(runs["locomo"].grid[0], groups, masks, bootstrap, seed),
        "in_sample_best": {"config": best_all, **_figures(runs["locomo"].grid[best_all], masks)},
    }
    cv_fig = _figures(cv.per_question, masks)
    cv_fig["mean_over_folds"] = cv.mean_over_folds.tolist()
    ci = bootstrap_cv(runs["locomo"].grid, groups, masks=masks, n=bootstrap, seed=seed)
    if "mean_over_folds" in ci:  # none with --bootstrap 0
        cv_fig["ci_mean_over_folds"] = ci["mean_over_folds"].tolist()
    loc["cv"] = _with_ci(cv_fig, ci)
    loc["folds"] = {
        g: {
            "choice": cv.choice[g],
            "config": configs[cv.choice[g]],
            "train_r10": cv.train_means[g],
            "heldout": cv.fold_means[g].tolist(),
            "default_heldout": runs["locomo"].grid[0][np.asarray(groups) == g].mean(axis=0).tolist(),
        }
        for g in cv.choice
    }
    loc["baselines"] = {n: _fixed_block(s, groups, masks, bootstrap, seed) for n, s in runs["locomo"].baselines.items()}
    loc["rank_profile_default"] = _rank_profile(runs["locomo"])
    loc["recall_ms_p50"] = runs["locomo"].recall_ms_p50
    summary["locomo"] = loc

    # Later suites need only these configurations: as given, each fold's choice, the all-data choice.
    needed = sorted({0, best_all, *cv.choice.values()})
    sub = [configs[i] for i in needed]
    cols = {"default": 0, **{f"cfg{i}": j for j, i in enumerate(needed)}}
    fold_choice = dict(cv.choice)
    extra = load_frozen("locomo_dev_extra")
    check_evidence(extra, clean.turns)
    if "extra" in suites:
        runs["extra"] = clean.run(extra, sub)
        summary["extra"] = _suite_summary(runs["extra"], cols, fold_choice, temporal=True, n=bootstrap, seed=seed)
    if "messy" in suites:
        messy = store("messy", messy_turns(data, messy_seed))
        for name, questions in (("messy", qa), ("messy_extra", extra)):
            runs[name] = messy.run(questions, sub, progress=name)
            summary[name] = _suite_summary(
                runs[name], cols, fold_choice, temporal=name == "messy_extra", n=bootstrap, seed=seed
            )
        cache.save()
    for lang in ("en", "cn"):
        if f"mb_{lang}" not in suites:
            continue
        mb = store(f"memorybank_{lang}", memorybank_turns(data_dir / "memorybank" / f"memory_bank_{lang}.json"))
        questions = load_frozen(f"memorybank_{lang}")
        check_evidence(questions, mb.turns)
        runs[f"mb_{lang}"] = mb.run(questions, sub)
        summary[f"mb_{lang}"] = _suite_summary(
            runs[f"mb_{lang}"], cols, {"*": best_all}, temporal=True, n=bootstrap, seed=seed
        )
        cache.save()
    summary["needed_configs"] = needed
    summary["baseline_names"] = list(BASELINES)
    return summary, runs


def save_runs(path: Path, runs: dict[str, SuiteRun]) -> None:
    """Per-question arrays of every suite (for paired comparisons of later changes),
    and next to them ``tops.json``: the top-50 turn ids of the configuration as
    given and of each baseline, per question (for failure analysis)."""
    tops = {name: {"ids": [q.id for q in run.questions], **run.top} for name, run in runs.items()}
    path.with_name("tops.json").write_text(json.dumps(tops, ensure_ascii=False), encoding="utf-8")
    arrays: dict[str, np.ndarray] = {}
    for name, run in runs.items():
        arrays[f"{name}/grid"] = run.grid
        arrays[f"{name}/ids"] = np.asarray([q.id for q in run.questions])
        arrays[f"{name}/groups"] = np.asarray([q.conversation for q in run.questions])
        if run.cv is not None:
            arrays[f"{name}/cv"] = run.cv
        for b, s in run.baselines.items():
            arrays[f"{name}/baseline/{b}"] = s
    np.savez_compressed(path, **arrays)
