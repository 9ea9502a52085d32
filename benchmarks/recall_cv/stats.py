"""Leave-one-conversation-out selection and bootstrap intervals: plain numpy.

Inputs are per-question recall arrays: ``grid[c, q, k]`` (configuration,
question, cut-off) and ``groups[q]`` (the conversation a question is asked
of). Tuning = the configuration with the best mean recall@10 over the
tuning questions; ties go to the lowest index, so ``grid[0]`` (the
configuration as shipped) wins a tie.

Bootstrap: questions are resampled with replacement *within each
conversation* (the folds keep their sizes), and in every replicate the
selection is redone on the resampled training questions, so the interval
includes the noise of tuning, not only of scoring. The paired version
resamples the same questions for two grids (baseline, change) and reports
the interval of the difference of their cross-validated figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["K10", "CVResult", "bootstrap_cv", "bootstrap_fixed", "cross_validate", "paired_bootstrap_cv", "select"]

K10 = 1  # index of recall@10 in runner.KS


def select(grid10: np.ndarray, weights: np.ndarray) -> int:
    """Index of the configuration with the best weighted mean (first on ties)."""
    means = grid10 @ weights
    return int(np.flatnonzero(means >= means.max() - 1e-9)[0])


@dataclass
class CVResult:
    choice: dict[str, int]  # held-out conversation -> configuration index chosen on the others
    per_question: np.ndarray  # [Q, K]: each question scored by its fold's choice
    fold_means: dict[str, np.ndarray]  # held-out conversation -> [K]
    train_means: dict[str, float]  # held-out conversation -> tuning recall@10 of its choice

    @property
    def pooled(self) -> np.ndarray:
        return np.asarray(self.per_question.mean(axis=0))

    @property
    def mean_over_folds(self) -> np.ndarray:
        return np.asarray(np.mean(list(self.fold_means.values()), axis=0))


def cross_validate(grid: np.ndarray, groups: Sequence[str], tune: np.ndarray | None = None) -> CVResult:
    """Leave one group out: choose on the other groups' ``tune`` questions, score the group."""
    groups_arr = np.asarray(groups)
    tune_mask = np.ones(len(groups_arr), bool) if tune is None else np.asarray(tune, bool)
    per_question = np.zeros(grid.shape[1:], dtype=np.float64)
    choice, fold_means, train_means = {}, {}, {}
    for g in dict.fromkeys(groups_arr.tolist()):
        test = groups_arr == g
        train = (~test) & tune_mask
        w = train / train.sum()
        c = select(grid[:, :, K10], w)
        choice[g] = c
        per_question[test] = grid[c, test]
        fold_means[g] = grid[c, test].mean(axis=0)
        train_means[g] = float(grid[c, :, K10] @ w)
    return CVResult(choice, per_question, fold_means, train_means)


def _resample_weights(strata: list[np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    w = np.zeros(n)
    for idx in strata:
        w += np.bincount(rng.choice(idx, size=len(idx), replace=True), minlength=n)
    return w


def _strata(groups: Sequence[str]) -> tuple[np.ndarray, list[str], list[np.ndarray]]:
    arr = np.asarray(groups)
    names = list(dict.fromkeys(arr.tolist()))
    return arr, names, [np.flatnonzero(arr == g) for g in names]


def _cv_once(
    grid: np.ndarray, arr: np.ndarray, names: list[str], tune: np.ndarray, w: np.ndarray, masks: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Cross-validated figures under question weights ``w``: pooled, mean over folds, per mask."""
    scored = np.zeros(grid.shape[1:])
    fold = []
    for g in names:
        test = arr == g
        train_w = w * ((~test) & tune)
        c = select(grid[:, :, K10], train_w / max(train_w.sum(), 1e-12))
        scored[test] = grid[c, test]
        wt = w * test
        fold.append(scored[test].T @ wt[test] / max(wt.sum(), 1e-12))
    out = {"pooled": scored.T @ w / w.sum(), "mean_over_folds": np.mean(fold, axis=0)}
    for name, m in masks.items():
        wm = w * m
        out[name] = scored.T @ wm / max(wm.sum(), 1e-12)
    return out


def bootstrap_cv(
    grid: np.ndarray,
    groups: Sequence[str],
    *,
    tune: np.ndarray | None = None,
    masks: dict[str, np.ndarray] | None = None,
    n: int = 2000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """95% intervals (``[2, K]``: low, high) of the cross-validated figures."""
    arr, names, strata = _strata(groups)
    tune_mask = np.ones(len(arr), bool) if tune is None else np.asarray(tune, bool)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[np.ndarray]] = {}
    for _ in range(n):
        w = _resample_weights(strata, len(arr), rng)
        for key, value in _cv_once(grid, arr, names, tune_mask, w, masks or {}).items():
            draws.setdefault(key, []).append(value)
    return {key: np.percentile(np.stack(v), [2.5, 97.5], axis=0) for key, v in draws.items()}


def bootstrap_fixed(
    scores: np.ndarray,
    groups: Sequence[str],
    *,
    masks: dict[str, np.ndarray] | None = None,
    n: int = 2000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """95% intervals of plain means of per-question ``scores[q, k]`` (no tuning inside)."""
    arr, _, strata = _strata(groups)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[np.ndarray]] = {}
    for _ in range(n):
        w = _resample_weights(strata, len(arr), rng)
        draws.setdefault("pooled", []).append(scores.T @ w / w.sum())
        for name, m in (masks or {}).items():
            wm = w * m
            draws.setdefault(name, []).append(scores.T @ wm / max(wm.sum(), 1e-12))
    return {key: np.percentile(np.stack(v), [2.5, 97.5], axis=0) for key, v in draws.items()}


def paired_bootstrap_cv(
    baseline: np.ndarray,
    change: np.ndarray,
    groups: Sequence[str],
    *,
    tune: np.ndarray | None = None,
    n: int = 2000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Cross-validated change minus baseline: point estimate and 95% interval
    (``{"diff": [K], "ci": [2, K]}``), the same resampled questions for both."""
    arr, names, strata = _strata(groups)
    tune_mask = np.ones(len(arr), bool) if tune is None else np.asarray(tune, bool)
    ones = np.ones(len(arr))
    point = (
        _cv_once(change, arr, names, tune_mask, ones, {})["pooled"]
        - _cv_once(baseline, arr, names, tune_mask, ones, {})["pooled"]
    )
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n):
        w = _resample_weights(strata, len(arr), rng)
        diffs.append(
            _cv_once(change, arr, names, tune_mask, w, {})["pooled"]
            - _cv_once(baseline, arr, names, tune_mask, w, {})["pooled"]
        )
    return {"diff": point, "ci": np.percentile(np.stack(diffs), [2.5, 97.5], axis=0)}
