"""Vector queries on a Chroma collection: widening ANN queries, and exact scores of known ids.

Every returned row is checked with ``RecordFilter.matches``; the ``where``
dicts sent to Chroma only narrow the search (see :mod:`._chroma_filters`).

Small scopes are scored exactly (``exact_limit``): Chroma's filtered HNSW
search walks the graph of the whole collection looking for the few allowed
ids, so its cost grows with everyone's rows, while the metadata filter alone
(``get`` of the ids) and a get by ids stay cheap. A scope of at most
``exact_limit`` rows is read with its vectors and scored here instead:
complete, exact, and independent of other users' data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from memory_vec.backends._chroma_errors import Translate
from memory_vec.backends._chroma_rows import decode
from memory_vec.backends.base import RecordFilter, ScoredRecord

__all__ = ["query_where", "score_ids", "score_rows"]


def query_where(
    collection: Any,
    q: np.ndarray,
    k: int,
    where: RecordFilter,
    narrows: list[dict[str, Any] | None],
    *,
    translate: Callable[[str], Translate],
    exact_limit: int = 0,
    max_batch: int = 1000,
) -> list[ScoredRecord]:
    """The best k rows over one query per ``where`` in ``narrows``, each row checked against ``where``.

    A narrow matching at most ``exact_limit`` rows is scored exactly (module doc).
    """
    hits: dict[str, ScoredRecord] = {}
    for narrow in narrows:
        if exact_limit > 0 and narrow is not None:
            with translate("query"):
                ids = collection.get(where=narrow, include=[], limit=exact_limit + 1)["ids"]
            if len(ids) <= exact_limit:
                for hit in score_rows(collection, q[0], ids, where, max_batch=max_batch, translate=translate, k=k):
                    hits[hit.record.id] = hit
                continue
        n = max(1, k)
        while True:
            with translate("query"):
                result = collection.query(
                    query_embeddings=q, n_results=n, where=narrow, include=["metadatas", "documents", "distances"]
                )
            rows = list(zip(result["ids"][0], result["documents"][0], result["metadatas"][0], result["distances"][0]))
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


def score_ids(
    collection: Any, q: np.ndarray, where: RecordFilter, *, max_batch: int, translate: Callable[[str], Translate]
) -> list[ScoredRecord]:
    """Every record among ``where.ids`` that matches ``where``, scored exactly against ``q``, best first.

    Scoring known ids (hybrid recall's keyword-only candidates): a get
    with their vectors and a local cosine is ~100x faster than an HNSW
    query restricted to ids (measured at 10k rows: 4 ms vs 450 ms).
    """
    return score_rows(
        collection, q, list(dict.fromkeys(where.ids or ())), where, max_batch=max_batch, translate=translate
    )


def score_rows(
    collection: Any,
    q: np.ndarray,
    wanted: list[str],
    where: RecordFilter,
    *,
    max_batch: int,
    translate: Callable[[str], Translate],
    k: int | None = None,
) -> list[ScoredRecord]:
    """The rows among ``wanted`` (distinct ids) that match ``where``, scored exactly against ``q``, best first.

    With ``k``, only the best k matching rows: the vectors of all are read
    first, then the texts and metadata best first until k match (reading a
    row's metadata costs several times its vector).
    """
    if k is not None and len(wanted) > k:
        vectors_only = True
    else:
        vectors_only, k = False, None
    include = ["embeddings"] if vectors_only else ["metadatas", "documents", "embeddings"]
    scored: list[tuple[float, str]] = []
    rows: dict[str, tuple[Any, Any]] = {}
    qn = float(np.linalg.norm(q)) or 1.0
    with translate("query"):
        for start in range(0, len(wanted), max_batch):
            # No ``where`` here: the ids are known; the rows are checked below.
            page = collection.get(ids=wanted[start : start + max_batch], include=include)
            if not page["ids"]:
                continue  # every id of the page deleted meanwhile (another process's forget)
            vectors = np.asarray(page["embeddings"], dtype=np.float32).reshape(len(page["ids"]), -1)
            norms = np.linalg.norm(vectors, axis=1)
            norms[norms == 0] = 1.0
            sims = (vectors @ q) / (norms * qn) if len(vectors) else np.zeros(0)
            scored += zip(sims.tolist(), page["ids"])
            if not vectors_only:
                rows.update(zip(page["ids"], zip(page["documents"], page["metadatas"])))
        scored.sort(key=lambda row: -row[0])
        hits: list[ScoredRecord] = []
        for start in range(0, len(scored), k or len(scored) or 1):
            chunk = scored[start : start + (k or len(scored))]
            if vectors_only:
                page = collection.get(ids=[row_id for _, row_id in chunk], include=["metadatas", "documents"])
                rows = dict(zip(page["ids"], zip(page["documents"], page["metadatas"])))
            for sim, row_id in chunk:
                if row_id not in rows:
                    continue  # deleted in between
                record = decode(row_id, *rows[row_id])
                if where.matches(record):
                    hits.append(ScoredRecord(record, float(np.clip(sim, -1.0, 1.0))))
            if k is not None and len(hits) >= k:
                return hits[:k]
    return hits
