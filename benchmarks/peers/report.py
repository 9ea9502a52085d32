"""The results table (Markdown) and the three plots (PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.locomo_recall import CATEGORIES, KS

__all__ = ["markdown", "plots"]


def _f(value: Any, fmt: str = "{:.3f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def markdown(results: dict[str, Any]) -> str:
    systems = results["systems"]
    sizes = results["sizes"]
    lines = [
        "### Recall on LoCoMo dev (k = 5 / 10 / 25 / 50)",
        "",
        "| system | R@5 | R@10 | R@25 | R@50 | query p50 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in systems.items():
        r = row.get("recall")
        if r is None:
            lines.append(f"| {name} | n/a | n/a | n/a | n/a | n/a |")
        else:
            lines.append(
                f"| {name} | " + " | ".join(f"{r[f'r@{k}']:.3f}" for k in KS) + f" | {r['query_ms_p50']:.1f} |"
            )
    lines += [
        "",
        "Recall@10 per category (questions):",
        "",
        "| system | " + " | ".join(f"{c} ({n})" for c, n in _cat_counts(systems)) + " |",
        "|---|" + "---:|" * len(CATEGORIES),
    ]
    for name, row in systems.items():
        r = row.get("recall")
        if r is None:
            continue
        per = r["per_category"]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{per[c]['r@10']:.3f}" if c in per else "-" for c in CATEGORIES.values())
            + " |"
        )
    head = " | ".join(f"{s:,} p50 / p95" for s in sizes)
    lines += [
        "",
        (
            "### Per turn (save + load), model time excluded; prompt tokens and LLM calls over the "
            f"{results['demo_turns']}-turn demo"
        ),
        "",
        (
            f"| system | {head} | embedded texts / turn | prompt tokens (sum) | vs full history "
            "| LLM calls / turn | tracemalloc peak MB | RSS delta MB |"
        ),
        "|---|" + "---:|" * (len(sizes) + 6),
    ]
    for name, row in systems.items():
        lat = {r["size"]: r for r in row.get("latency", [])}
        cells = [f"{lat[s]['p50_ms']:.1f} / {lat[s]['p95_ms']:.1f}" if s in lat else "n/a" for s in sizes]
        emb = next(iter(lat.values()))["embedded_texts_per_turn"] if lat else None
        d = row.get("demo")
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {_f(emb, '{:.1f}')} | "
            + (
                f"{d['total_tokens']:,} | {d['total_tokens'] / d['full_total']:.1%} | {d['llm_calls_per_turn']:.2f} | "
                f"{d['tracemalloc_peak_mb']:.1f} | {d['rss_delta_mb']:.1f} |"
                if d
                else "n/a | n/a | n/a | n/a | n/a |"
            )
        )
    return "\n".join(lines)


def _cat_counts(systems: dict[str, Any]) -> list[tuple[str, int]]:
    for row in systems.values():
        if row.get("recall"):
            per = row["recall"]["per_category"]
            return [(c, per[c]["n"] if c in per else 0) for c in CATEGORIES.values()]
    return [(c, 0) for c in CATEGORIES.values()]


_NAMES: list[str] = []


def _style(name: str) -> dict[str, Any]:
    import matplotlib

    if name not in _NAMES:
        _NAMES.append(name)
    ours = name.startswith("ours")
    return {
        "linewidth": 2.2 if ours else 1.2,
        "linestyle": "-" if ours else "--",
        "marker": "o" if ours else ".",
        "color": matplotlib.colormaps["tab20"](_NAMES.index(name) % 20),
    }


def plots(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    systems = results["systems"]
    _NAMES[:] = list(systems)
    paths = []
    # 1. prompt tokens per turn by turn number
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=90)
    full_drawn = False
    for name, row in systems.items():
        d = row.get("demo")
        if not d:
            continue
        if not full_drawn:
            ax.plot(
                range(1, d["turns"] + 1),
                d["full_per_turn"],
                color="black",
                linewidth=1,
                label="(every earlier message)",
            )
            full_drawn = True
        if name != "full history":
            ax.plot(range(1, d["turns"] + 1), d["tokens_per_turn"], label=name, **{**_style(name), "marker": None})
    ax.set(
        xlabel="turn",
        ylabel="prompt tokens (memory + new message)",
        title=f"Prompt tokens per turn, {results['demo_turns']}-turn demo (cl100k)",
    )
    ax.legend(fontsize=6.5, loc="upper left")
    ax.grid(alpha=0.3)
    paths.append(_save(fig, out / "peers_tokens_per_turn.png"))
    # 2. latency by history size
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=90)
    for name, row in systems.items():
        lat = row.get("latency")
        if lat:
            ax.plot([r["size"] for r in lat], [r["p50_ms"] for r in lat], label=name, **_style(name))
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="stored turns",
        ylabel="save + load p50, ms (model time excluded)",
        title="Per-turn latency by history size",
    )
    ax.legend(fontsize=6.5, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    paths.append(_save(fig, out / "peers_latency_by_size.png"))
    # 3. recall@k curves
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=90)
    for name, row in systems.items():
        r = row.get("recall")
        if r:
            ax.plot(KS, [r[f"r@{k}"] for k in KS], label=name, **_style(name))
    ax.set(
        xscale="log",
        xticks=list(KS),
        xticklabels=[str(k) for k in KS],
        xlabel="k (turns)",
        ylabel="recall@k",
        title="LoCoMo dev recall@k (same e5 embedder; our three backends overlap)",
    )
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(fontsize=6.5, loc="lower right")
    ax.grid(alpha=0.3)
    paths.append(_save(fig, out / "peers_recall_at_k.png"))
    return paths


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
