"""What an order question costs with ``split_order_questions`` (issue #17, per-turn cost).

An order question ("Did A happen before or after B?") is recalled whole and
once per event, so it costs two more recalls. This measures it the way
``backend_turns.py`` measures a turn: the same pre-filled store (``--own``
memories of the measured user among ``--size`` rows), the embedding model
taken out (vectors served from ``--vectors-cache``; each extra query's
embedding is then timed on the real model separately), split off and on as
twin users of one store, interleaved question by question.

Questions are made from the measured user's own stored texts with fixed
templates ("Which came first, A or B?", "Did A happen before or after B?"),
so every one of them splits.

    python benchmarks/order_questions.py --data ../shared/data/locomo/locomo_dev.json \
        --vectors-cache /tmp/turn_vectors.npy --backends memory chroma --questions 60
    python benchmarks/order_questions.py ... --kind relation   # "the day after X": dates off vs on
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.backend_turns import USER, DictEmbedder, fill, fill_data, make_core, release_stores, sessions_of
from benchmarks.settings_by_name import set_settings
from memory_vec._rules.event_order import event_order_parts
from memory_vec._rules.temporal import parse_relation

TEMPLATES = ("Which came first, {a} or {b}?", "Did {a} happen before or after {b}?")
# --kind relation: questions about the days around one event (``date_window_boost``, off vs default).
RELATION_TEMPLATES = ("What did I do the day after {a}?", "What happened the week before {a}?")


def phrase(text: str) -> str:
    """The first words of a stored text, without its speaker label: an event to ask about."""
    words = text.split(":", 1)[-1].split()
    return " ".join(words[:6]).strip(" ,.!?")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--vectors-cache", default=None)
    p.add_argument("--backends", nargs="+", default=["memory", "chroma"], choices=["memory", "chroma"])
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--own", type=int, default=300)
    p.add_argument("--per-user", type=int, default=10)
    p.add_argument("--questions", type=int, default=60)
    p.add_argument(
        "--kind",
        choices=["order", "relation"],
        default="order",
        help="order: split_order_questions off vs on; relation: date_window_boost 0 vs the default",
    )
    args = p.parse_args(argv)

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    pool = [t for c in data for s in sessions_of(c) for t in s]
    embedder = DictEmbedder(Path(args.vectors_cache) if args.vectors_cache else None)
    pool_vectors = embedder.embed_documents(pool)
    own = [phrase(t) for t in pool[: args.own]]
    if args.kind == "order":
        questions = [
            TEMPLATES[i % 2].format(a=own[(7 * i) % len(own)], b=own[(7 * i + 3) % len(own)])
            for i in range(args.questions)
        ]
        questions = [q for q in questions if event_order_parts(q)]
    else:
        questions = [RELATION_TEMPLATES[i % 2].format(a=own[(7 * i) % len(own)]) for i in range(args.questions)]
        questions = [q for q in questions if parse_relation(q)]
    # The real model's cost of one query embedding (what each extra event adds with the model in).
    embed_ms = []
    for q in questions[:20]:
        t0 = time.perf_counter()
        embedder.real.embed_query(q)
        embed_ms.append((time.perf_counter() - t0) * 1000)

    rows = []
    stores = []
    try:
        for backend in args.backends:
            records, vectors = fill_data(args.size, args.own, args.per_user, pool, pool_vectors, twins=1)
            off = make_core(backend, args.size, {}, embedder)
            fill(off, records, vectors)
            on = make_core(backend, args.size, {}, embedder, f"{USER}-1", off.persist)
            if args.kind == "order":
                set_settings(off.core.config, {"split_order_questions": False})  # on by default since this was written
                set_settings(on.core.config, {"split_order_questions": True})
            else:
                set_settings(off.core.config, {"date_window_boost": 0.0})
            stores += [off, on]
            for store in (off, on):  # warm: primes the vectors cache and the keyword index
                for q in questions[:3]:
                    store.core.recall(q, k=10)
            times: dict[str, list[float]] = {"off": [], "on": []}
            for n, q in enumerate(questions):
                for label, store in (("off", off), ("on", on))[:: 1 if n % 2 else -1]:
                    model0 = embedder.model_s
                    t0 = time.perf_counter()
                    store.core.recall(q, k=10)
                    times[label].append((time.perf_counter() - t0 - (embedder.model_s - model0)) * 1000)
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((backend, len(questions), med["off"], med["on"], med["on"] / med["off"]))
    finally:
        release_stores()
        for store in stores:
            shutil.rmtree(store.persist, ignore_errors=True)
    embedder.save()
    e = statistics.median(embed_ms)
    print(
        f"{args.size:,} stored ({args.own} of the measured user); one query embedding on the real model: "
        f"median {e:.1f} ms\n"
    )
    if args.kind == "relation":
        print("| store | questions | date_window_boost 0, ms | default, ms | ratio (model excluded) |")
        print("|---|---:|---:|---:|---:|")
        for backend, n, a, b, r in rows:
            print(f"| {backend} | {n} | {a:.1f} | {b:.1f} | {r:.2f} |")
        return 0
    print(
        "| store | questions | split off, ms | split on, ms | ratio (model excluded) | "
        "+ 2 query embeddings, ratio with the model |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for backend, n, a, b, r in rows:
        print(f"| {backend} | {n} | {a:.1f} | {b:.1f} | {r:.2f} | {(b + 3 * e) / (a + e):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
