"""Markdown tables of an :func:`~.evaluate.evaluate` summary (recall@10 unless named)."""

from __future__ import annotations

from typing import Any

__all__ = ["markdown"]

K10, K50 = 1, 3
SHORT = {"bm25": "BM25", "dense (plain vectors)": "dense (plain)", "dense (stored vectors)": "dense (stored)"}


def _ci(row: dict[str, Any] | None, key: str = "ci", k: int = K10) -> str:
    if not row or key not in row:
        return ""
    lo, hi = row[key][0][k], row[key][1][k]
    return f" [{lo:.3f}–{hi:.3f}]"


def _cell(block: dict[str, Any], cat: str | None, k: int = K10, ci: bool = False) -> str:
    if cat is None:
        return f"{block['overall'][k]:.3f}" + (_ci(block, k=k) if ci else "")
    row = block["per_category"].get(cat)
    return "-" if row is None else f"{row['r'][k]:.3f}" + (_ci(row, k=k) if ci else "")


def _diff_config(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items()) or "as given"


def _locomo(s: dict[str, Any]) -> list[str]:
    loc = s["locomo"]
    ins, cv, best = loc["in_sample_default"], loc["cv"], loc["in_sample_best"]
    base = loc["baselines"]
    lines = [
        f"#### LoCoMo dev, {ins['n']} questions (recall@10, 95% bootstrap intervals)",
        "",
        (
            "| category | n | in-sample (as given) | in-sample re-tuned (grid best) | cross-validated "
            "| CV − in-sample | BM25 | dense (plain) | dense (stored) |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cat in [None, *ins["per_category"]]:
        n = ins["n"] if cat is None else ins["per_category"][cat]["n"]
        a = ins["overall"][K10] if cat is None else ins["per_category"][cat]["r"][K10]
        c = cv["overall"][K10] if cat is None else cv["per_category"][cat]["r"][K10]
        lines.append(
            f"| {cat or '**overall**'} | {n} | {_cell(ins, cat, ci=True)} | {_cell(best, cat)} | "
            f"{_cell(cv, cat, ci=True)} | {c - a:+.3f} | " + " | ".join(_cell(base[b], cat) for b in SHORT) + " |"
        )
    mof = cv["mean_over_folds"]
    lines += [
        "",
        (
            f"Mean over the three folds (unweighted): R@10 {mof[K10]:.3f}"
            f"{_ci(cv, 'ci_mean_over_folds')}; pooled over questions {cv['overall'][K10]:.3f}. "
            f"Grid best on all three ({_diff_config(s['configs'][best['config']])}): "
            f"{best['overall'][K10]:.3f}."
        ),
        "",
        "| cut-off | in-sample (as given) | cross-validated |",
        "|---|---:|---:|",
    ]
    for i, k in enumerate(s["ks"]):
        lines.append(f"| R@{k} | {ins['overall'][i]:.3f}{_ci(ins, k=i)} | {cv['overall'][i]:.3f}{_ci(cv, k=i)} |")
    lines += [
        "",
        ("| held-out | chosen on the other two | their R@10 | held-out R@10 (chosen) | held-out R@10 (as given) |"),
        "|---|---|---:|---:|---:|",
    ]
    for g, f in loc["folds"].items():
        lines.append(
            f"| {g} | {_diff_config(f['config'])} | {f['train_r10']:.3f} | {f['heldout'][K10]:.3f} | "
            f"{f['default_heldout'][K10]:.3f} |"
        )
    return lines


def _suite_table(title: str, block: dict[str, Any], *, cv_label: str) -> list[str]:
    d = block["default"]
    lines = [
        f"#### {title} (recall@10; R@50 in the last columns)",
        "",
        (
            f"| type | n | ours (as given) | ours ({cv_label}) | BM25 | dense (plain) | dense (stored) | "
            "ours − best baseline | ours R@50 | best baseline R@50 |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cat in [*d["per_category"], None]:
        n = d["n"] if cat is None else d["per_category"][cat]["n"]
        base = [block["baselines"][b] for b in SHORT]
        best10 = max(float(_cell(b, cat)) for b in base)
        best50 = max(float(_cell(b, cat, K50)) for b in base)
        ours10 = float(_cell(d, cat))
        cv = _cell(block["cv"], cat, ci=True) if "cv" in block else "-"
        lines.append(
            f"| {cat or '**all**'} | {n} | {_cell(d, cat, ci=True)} | {cv} | "
            + " | ".join(_cell(b, cat) for b in base)
            + f" | {ours10 - best10:+.3f} | {_cell(d, cat, K50)} | {best50:.3f} |"
        )
    if "anchor_vs_target_r10" in block:
        a = block["anchor_vs_target_r10"]
        lines += [
            "",
            (
                f"Relative-date questions ({a['n']}), ours as given, recall@10 of the anchor turns (the event "
                f"the question names) {a['anchor']:.3f} vs the target turns (the answer) {a['target']:.3f}."
            ),
        ]
    return lines


def _profile(s: dict[str, Any]) -> list[str]:
    lines = [
        "#### Where the evidence of the LoCoMo questions sits (ours as given)",
        "",
        (
            "| category | evidence turns | in top 10 | 11–50 | not in top 50 | of those: in BM25 top 50 | "
            "in dense (plain) top 50 |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for cat, row in s["locomo"]["rank_profile_default"].items():
        lines.append(
            f"| {cat} | {row['evidence']} | {row['top10']:.2f} | {row['11-50']:.2f} | {row['missed']:.2f} | "
            f"{row['missed_bm25_top50']:.2f} | {row['missed_dense_top50']:.2f} |"
        )
    return lines


def _compare(c: dict[str, Any]) -> list[str]:
    lines = [
        f"#### Change vs `{c['baseline']}` (paired bootstrap, recall@10 difference)",
        "",
        "| suite | as given Δ [95%] | cross-validated Δ [95%] | counts (CV Δ ≥ 2 points or interval clears 0) |",
        "|---|---:|---:|---|",
    ]
    for suite, row in c.items():
        if suite == "baseline":
            continue
        cells = []
        for key in ("as_given", "cv"):
            if f"{key}_diff" in row:
                lo, hi = row[f"{key}_ci"][0][K10], row[f"{key}_ci"][1][K10]
                cells.append(f"{row[f'{key}_diff'][K10]:+.3f} [{lo:+.3f}–{hi:+.3f}]")
            else:
                cells.append("-")
        counts = "-"
        if "cv_diff" in row:
            d, lo, hi = row["cv_diff"][K10], row["cv_ci"][0][K10], row["cv_ci"][1][K10]
            moved = abs(d) >= 0.02 or lo > 0 or hi < 0
            counts = ("yes, up" if d > 0 else "yes, down") if moved else "no"
        lines.append(f"| {suite} | {cells[0]} | {cells[1]} | {counts} |")
    return lines


def markdown(s: dict[str, Any]) -> str:
    lines = [
        (
            f"Code: `{s['code']['memory_vec']}` (git {s['code']['git']}); settings {s['settings'] or 'defaults'}; "
            f"grid {len(s['configs']) - 1} points over {', '.join(s['grid'])}; "
            f"{s['bootstrap']} bootstrap replicates."
        ),
        "",
    ]
    stores = s.get("stores", {})
    if stores:
        lines += [
            "Stores: " + "; ".join(f"{n} {v['turns']} turns → {v['records']} records" for n, v in stores.items()) + ".",
            "",
        ]
    lines += [*_locomo(s), ""]
    tables = []
    if "extra" in s:
        tables.append(("Frozen extra LoCoMo questions (99)", s["extra"], "CV fold choice"))
    for lang in ("en", "cn"):
        if f"mb_{lang}" in s:
            tables.append((f"MemoryBank {lang} frozen questions", s[f"mb_{lang}"], "tuned on LoCoMo"))
    if "messy" in s:
        tables.append(("Messy chat: LoCoMo questions on the messy rewrite", s["messy"], "CV fold choice"))
        tables.append(("Messy chat: frozen extra questions on the messy rewrite", s["messy_extra"], "CV fold choice"))
    for title, block, label in tables:
        lines += [*_suite_table(title, block, cv_label=label), ""]
    lines += _profile(s)
    if "compare" in s:
        lines += ["", *_compare(s["compare"])]
    return "\n".join(lines) + "\n"
