"""Vector queries on a Chroma collection: widening ANN queries, and exact scores of known ids.

Every returned row is checked with ``RecordFilter.matches``; the ``where``
dicts sent to Chroma only narrow the search (see :mod:`._chroma_filters`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._chroma_errors import Translate
from ._chroma_rows import decode
from .base import RecordFilter, ScoredRecord

__all__ = ["query_where", "score_ids"]


def query_where(collection: Any, q: np.ndarray, k: int, where: RecordFilter, narrows: list[dict[str, Any] | None],
                *, translate: Callable[[str], Translate]) -> list[ScoredRecord]:
    """The best k rows over one query per ``where`` in ``narrows``, each row checked against ``where``."""
    hits: dict[str, ScoredRecord] = {}
    for narrow in narrows:
        n = max(1, k)
        while True:
            with translate("query"):
                result = collection.query(query_embeddings=q, n_results=n, where=narrow,
                                          include=["metadatas", "documents", "distances"])
            rows = list(zip(result["ids"][0], result["documents"][0], result["metadatas"][0],
                            result["distances"][0]))
            matched = 0
            for row_id, doc, meta, dist in rows:
                record = decode(row_id, doc, meta)
                if where.matches(record):
                    matched += 1
                    # Chroma's cosine distance is 1 - cosine similarity.
                    hits[row_id] = ScoredRecord(record, float(np.clip(1.0 - dist, -1.0, 1.0)))
            # Superseded or filtered-out rows took places: widen until k match or none are left.
            if matched >= k or len(rows) < n:
                break
            n *= 4
    return sorted(hits.values(), key=lambda h: -h.similarity)[:k]


def score_ids(collection: Any, q: np.ndarray, where: RecordFilter, *, max_batch: int,
              translate: Callable[[str], Translate]) -> list[ScoredRecord]:
    """Every record among ``where.ids`` that matches ``where``, scored exactly against ``q``, best first.

    Scoring known ids (hybrid recall's keyword-only candidates): a get
    with their vectors and a local cosine is ~100x faster than an HNSW
    query restricted to ids (measured at 10k rows: 4 ms vs 450 ms).
    """
    wanted = list(dict.fromkeys(where.ids or ()))
    hits: list[ScoredRecord] = []
    qn = float(np.linalg.norm(q)) or 1.0
    with translate("query"):
        for start in range(0, len(wanted), max_batch):
            # No ``where`` here: Chroma's metadata filter is the slow part
            # (hundreds of ms at 10k rows); the rows are checked below.
            page = collection.get(ids=wanted[start:start + max_batch],
                                  include=["metadatas", "documents", "embeddings"])
            vectors = np.asarray(page["embeddings"], dtype=np.float32).reshape(len(page["ids"]), -1)
            norms = np.linalg.norm(vectors, axis=1)
            norms[norms == 0] = 1.0
            sims = (vectors @ q) / (norms * qn) if len(vectors) else np.zeros(0)
            for row_id, doc, meta, sim in zip(page["ids"], page["documents"], page["metadatas"], sims):
                record = decode(row_id, doc, meta)
                if where.matches(record):
                    hits.append(ScoredRecord(record, float(np.clip(sim, -1.0, 1.0))))
    hits.sort(key=lambda h: -h.similarity)
    return hits
