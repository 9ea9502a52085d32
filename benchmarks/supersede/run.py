"""The supersede set through the real write path: false overwrites and missed updates.

Every pair of ``data/*.jsonl`` (see ``SPEC.md``) goes through the public API
as a user would send it: a fresh user on one in-process core, ``old`` then
``new`` with ``add_message``. The pair is predicted *supersede* when the second
write supersedes anything (``WriteResult.superseded_ids``), *keep* otherwise.

Rates, per family and language and pooled, with Wilson 95 % intervals:

* false overwrite: share of ``keep`` pairs that superseded (non-update families);
* missed update: share of ``supersede`` pairs that did not (update families).

    python -m benchmarks.supersede.run --split heldout [--detector rules|learned] [--embedder hash|e5]
    python -m benchmarks.supersede.run --split dev --errors 20     # show misjudged pairs

The held-out split is for measuring only: tune on ``dev``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
UPDATE_FAMILIES = ("update_explicit", "update_restate", "update_correction", "update_negation")
KEEP_FAMILIES = (
    "event",
    "entity",
    "other_person",
    "attribute",
    "additive",
    "past",
    "hypothetical",
    "reported",
    "question",
    "plan",
    "echo",
)


@dataclass(frozen=True)
class Pair:
    id: str
    lang: str
    family: str
    old_role: str
    old: str
    new_role: str
    new: str
    label: str


def load(split: str) -> list[Pair]:
    pairs = []
    files = sorted((HERE / "data").glob(f"{split}.jsonl")) + sorted((HERE / "data").glob(f"{split}.*.jsonl"))
    lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if not line.strip():
            continue
        d = json.loads(line)
        pairs.append(
            Pair(
                d["id"],
                d["lang"],
                d["family"],
                d["old"]["role"],
                d["old"]["text"],
                d["new"]["role"],
                d["new"]["text"],
                d["label"],
            )
        )
    return pairs


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def predict(pairs: list[Pair], *, embedder: str, detector: str | None) -> dict[str, tuple[bool, str]]:
    """pair id -> (superseded?, the reason the write gave)."""
    from memory_vec import MemoryConfig, MemoryCore

    settings: dict[str, Any] = {"embedding_model": embedder, "backend": "memory"}
    if detector is not None:
        settings["conflict_detector"] = detector
    core = MemoryCore(MemoryConfig(user_id="bench", session_id="s", **settings))
    out = {}
    start = 1_700_000_000.0
    try:
        for pair in pairs:
            user = f"u-{uuid.uuid4().hex[:12]}"
            core.add_message(pair.old_role, pair.old, user_id=user, timestamp=start)
            result = core.add_message(pair.new_role, pair.new, user_id=user, timestamp=start + 3600)
            out[pair.id] = (bool(result.superseded_ids), result.reason)
    finally:
        core.close()
    return out


def rates(pairs: list[Pair], predicted: dict[str, tuple[bool, str]]) -> dict[str, Any]:
    """Per (family, lang), per family pooled over languages, and pooled per side."""
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for p in pairs:
        wrong = predicted[p.id][0] != (p.label == "supersede")
        for key in ((p.family, p.lang), (p.family, "all"), (_side(p.family), p.lang), (_side(p.family), "all")):
            cells[key][0] += int(wrong)
            cells[key][1] += 1
    return {
        f"{fam}|{lang}": {"errors": k, "n": n, "rate": k / n, "ci95": wilson(k, n)}
        for (fam, lang), (k, n) in cells.items()
    }


def _side(family: str) -> str:
    return "UPDATES (missed)" if family in UPDATE_FAMILIES else "NON-UPDATES (false overwrite)"


def table(result: dict[str, Any], title: str) -> str:
    lines = [f"### {title}", "", "| family | en | zh | both |", "|---|---|---|---|"]

    def cell(key: str) -> str:
        c = result.get(key)
        if not c:
            return "—"
        lo, hi = c["ci95"]
        return f"{c['rate']:.3f} ({c['errors']}/{c['n']}; {lo:.2f}–{hi:.2f})"

    for fam in (*KEEP_FAMILIES, "NON-UPDATES (false overwrite)", *UPDATE_FAMILIES, "UPDATES (missed)"):
        bold = "**" if fam.isupper() or fam.startswith(("UPD", "NON")) else ""
        lines.append(f"| {bold}{fam}{bold} | {cell(fam + '|en')} | {cell(fam + '|zh')} | {cell(fam + '|all')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", default="heldout", choices=("dev", "heldout"))
    ap.add_argument("--embedder", default="multilingual-e5-small", help="embedding model (hash for a quick run)")
    ap.add_argument("--detector", default=None, help="conflict_detector setting (default: the library's)")
    ap.add_argument("--errors", type=int, default=0, help="print up to N misjudged pairs per family")
    ap.add_argument("--json", type=Path, default=None, help="write the rates as JSON here")
    args = ap.parse_args(argv)

    pairs = load(args.split)
    t0 = time.perf_counter()
    predicted = predict(pairs, embedder=args.embedder, detector=args.detector)
    seconds = time.perf_counter() - t0
    result = rates(pairs, predicted)
    title = f"{args.split}: {len(pairs)} pairs, detector={args.detector or 'default'}, embedder={args.embedder}"
    print(table(result, title))
    print(f"\n({seconds:.0f} s, {1000 * seconds / len(pairs):.1f} ms a pair)")
    if args.errors:
        shown: dict[str, int] = defaultdict(int)
        for p in pairs:
            got, reason = predicted[p.id]
            if got != (p.label == "supersede") and shown[p.family] < args.errors:
                shown[p.family] += 1
                print(f"[{p.family}/{p.lang}] {p.old!r} -> ({p.new_role}) {p.new!r}  => {got} ({reason})")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
