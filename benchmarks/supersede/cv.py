"""Choose the learned judge's threshold: 5-fold cross-validation on the dev split, through the rules' path.

Each fold trains the judge on four fifths of dev (``train.fit``) and decides the
held-back fifth the way the write path does: the rule extractor's facts of
``old`` and ``new``, e5 cosines between them, :class:`ConflictResolver` with
``detector="learned"`` (behind the statement gate). Prints false overwrites and
missed updates per threshold; the held-out split is never read.

    python -m benchmarks.supersede.cv [--thresholds 0.5,0.55,...] [--cache /tmp/supersede_vectors.pkl]
"""

from __future__ import annotations

import argparse
import collections
import os
import pickle
import random
import sys
from pathlib import Path

import numpy as np

import memory_vec._rules.conflict as conflict
from benchmarks.supersede import train
from benchmarks.supersede.run import UPDATE_FAMILIES, Pair, load
from memory_vec._rules.conflict import ConflictAction, ConflictResolver, ExistingFact
from memory_vec._rules.extraction import RuleExtractor
from memory_vec._rules.supersede_model import SupersedeModel
from memory_vec.embeddings import get_embedder


def _vectors(pairs: list[Pair], extractor: RuleExtractor, cache: Path) -> dict[str, np.ndarray]:
    vectors: dict[str, np.ndarray] = pickle.loads(cache.read_bytes()) if cache.exists() else {}
    texts = {f.text for p in pairs for f in (*extractor.extract("user", p.old), *extractor.extract(p.new_role, p.new))}
    missing = sorted(texts - vectors.keys())
    if missing:
        vectors.update(zip(missing, get_embedder("multilingual-e5-small").embed_documents(missing)))
        cache.write_bytes(pickle.dumps(vectors))
    return vectors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--thresholds", default="0.5,0.55,0.6,0.65,0.7,0.75,0.8")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "supersede_vectors.pkl")
    args = ap.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    pairs, extractor = load("dev"), RuleExtractor()
    vectors = _vectors(pairs, extractor, args.cache)
    x, y, _ = train.dataset()  # dev rows, then one unrelated pair per dev row
    n = len(pairs)
    folds = [i % 5 for i in range(n)]
    random.Random(3).shuffle(folds)
    errors: collections.Counter[tuple[float, str, str]] = collections.Counter()
    for fold in range(5):
        rows = [i for i in range(n) if folds[i] != fold]
        weights, bias = train.fit(
            np.concatenate([x[rows], x[[n + i for i in rows]]]),
            np.concatenate([y[rows], y[[n + i for i in rows]]]),
            l2=1e-3,
        )
        for threshold in thresholds:
            model = SupersedeModel(weights, bias, threshold)
            conflict.shipped_model = lambda model=model: model  # the fold's judge, for this run only
            resolver = ConflictResolver(threshold=0.9, detector="learned")
            for i in (i for i in range(n) if folds[i] == fold):
                p = pairs[i]
                olds, news = extractor.extract("user", p.old), extractor.extract(p.new_role, p.new)
                superseded = any(
                    resolver.decide(
                        new,
                        [
                            ExistingFact(str(k), o.text, o.subject, float(vectors[o.text] @ vectors[new.text]))
                            for k, o in enumerate(olds)
                        ],
                    ).action
                    in (ConflictAction.UPDATE, ConflictAction.DELETE)
                    for new in news
                )
                side = "missed" if p.family in UPDATE_FAMILIES else "false"
                errors[(threshold, side, "n")] += 1
                errors[(threshold, side, "e")] += int(superseded != (p.label == "supersede"))
        print(f"fold {fold + 1}/5", file=sys.stderr)
    print("| threshold | false overwrites | missed updates |\n|---|---|---|")
    for t in thresholds:
        f = errors[(t, "false", "e")] / errors[(t, "false", "n")]
        m = errors[(t, "missed", "e")] / errors[(t, "missed", "n")]
        print(f"| {t:.2f} | {f:.3f} | {m:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
