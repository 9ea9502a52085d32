"""Plot per-turn cost against stored memories, one line per backend (issue #15).

Reads one or more ``benchmarks/backend_turns.py --out`` files and draws, per
backend (variants such as ``chroma+exact`` as their own lines), the median
turn (model time excluded) with its p95 as a band, against the store's size
on log axes. A second panel shows each turn median as a ratio to the
in-process store's of the same run and size (the number the issue's targets
are stated in), so runs taken at different machine loads stay comparable.

Several files are read as rounds of one run: medians over them per backend
and size, and the median of each round's ratio.

Usage::

    python benchmarks/plot_turns.py /tmp/turns_small.json /tmp/turns_large.json \\
        --out benchmarks/plots/turn_cost_by_backend.png
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

ORDER = ["memory", "sqlite", "chroma", "chroma-server", "milvus-lite", "milvus-server"]
LABELS = {
    "memory": "in-process",
    "sqlite": "SQLite",
    "chroma": "Chroma embedded",
    "chroma-server": "Chroma server",
    "milvus-lite": "Milvus Lite",
    "milvus-server": "Milvus server",
}


def load(paths: list[Path]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[tuple[int, float]]]]:
    """Rows per backend label, and each label's (size, ratio to in-process of the same file and size).

    Several files are rounds of one method: a label and size measured in
    more than one gives one row of the medians (turn median, p95) and the
    median of the per-file ratios.
    """
    turns: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    per_file: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in paths:
        rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
        base = {r["size"]: r["turn_median_ms"] for r in rows if r["backend"] == "memory"}
        for r in rows:
            turns[r["backend"]][r["size"]].append(r)
            if r["size"] in base:
                per_file[r["backend"]][r["size"]].append(r["turn_median_ms"] / base[r["size"]])
    by_label = {
        label: [
            {
                **found[0],
                "size": size,
                "turn_median_ms": statistics.median(r["turn_median_ms"] for r in found),
                "turn_p95_ms": statistics.median(r["turn_p95_ms"] for r in found),
            }
            for size, found in sizes.items()
        ]
        for label, sizes in turns.items()
    }
    ratios = {label: [(size, statistics.median(q)) for size, q in sizes.items()] for label, sizes in per_file.items()}
    return by_label, ratios


def _key(label: str) -> tuple[int, str]:
    base = label.split("+")[0]
    return (ORDER.index(base) if base in ORDER else len(ORDER), label)


def plot(paths: list[Path], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    by_label, ratios = load(paths)
    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=90)
    colors = matplotlib.colormaps["tab10"]
    for i, label in enumerate(sorted(by_label, key=_key)):
        rows = sorted(by_label[label], key=lambda r: r["size"])
        base, _, variant = label.partition("+")
        name = LABELS.get(base, base) + (f" +{variant}" if variant else "")
        style = {
            "color": colors(ORDER.index(base) if base in ORDER else i),
            "marker": "o",
            "linestyle": "--" if variant else "-",
        }
        sizes = [r["size"] for r in rows]
        ax.plot(sizes, [r["turn_median_ms"] for r in rows], label=name, **style)
        if not variant:
            ax.fill_between(
                sizes,
                [r["turn_median_ms"] for r in rows],
                [r["turn_p95_ms"] for r in rows],
                color=style["color"],
                alpha=0.12,
            )
        points = sorted(ratios.get(label, []))
        if points and base != "memory":
            ax_ratio.plot([s for s, _ in points], [q for _, q in points], label=name, **style)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="stored memories (10x: other users' data grows)",
        ylabel="turn, ms (median; band to p95; model time excluded)",
        title="Per-turn cost by backend and store size",
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left")
    ax_ratio.axhline(2.0, color="black", linewidth=1, linestyle=":", label="target: 2x in-process")
    ax_ratio.set(
        xscale="log",
        yscale="log",
        xlabel="stored memories",
        ylabel="turn median / in-process (same run)",
        title="Ratio to the in-process store",
    )
    ax_ratio.grid(alpha=0.3, which="both")
    for axis in (ax.yaxis, ax_ratio.yaxis):  # plain numbers, not 4x10^1, on the log axes
        axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax_ratio.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="+", type=Path, help="backend_turns.py --out files")
    p.add_argument("--out", type=Path, default=Path("benchmarks/plots/turn_cost_by_backend.png"))
    args = p.parse_args(argv)
    print(plot(args.results, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
