"""Answer a filtered vector query on Milvus, completely.

The approximate search is widened while client-side checks drop rows
(metadata on numbers is not pushed down, see :mod:`._milvus_expr`).

Exact fallback: an approximate search with a narrow filter (one user among
many, no partition key) can return fewer rows than match; a 2.3.5 server
returned 1.6 of a user's 10 rows at 10k. When a search returns fewer than
it asked for, there are no more rows than it asked for, so
:func:`search` reads them all with their vectors (a user's memories, not
the collection; at most ``exact_limit``) and scores them exactly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memory_vec._model.records import MemoryRecord
from memory_vec.backends._milvus_expr import filter_expression
from memory_vec.backends._milvus_rows import from_row
from memory_vec.backends._milvus_scan import RowReader
from memory_vec.backends._milvus_schema import OUTPUT
from memory_vec.backends.base import RecordFilter, ScoredRecord

__all__ = ["search"]

log = logging.getLogger("memory_vec")

_MAX_TOPK = 16384  # Milvus' limit on limit/offset


def search(
    reader: RowReader, q: np.ndarray, k: int, where: RecordFilter, *, search_params: dict[str, Any], exact_limit: int
) -> list[ScoredRecord]:
    """The ``k`` matching records nearest to ``q`` by cosine, best first."""
    if k <= 0:
        return []
    if where.ids is not None:
        # Known ids (hybrid recall's keyword candidates): read them with their
        # vectors and score here; a search filtered to ids evaluates the
        # filter over every row of the collection.
        rows = list(reader.matching(where, None, OUTPUT, with_vectors=True))
        return top_k([record for record, _ in rows], [row["vector"] for _, row in rows], q, k)
    expr = filter_expression(where, partition_key=reader.partition_key)
    limit = min(k, _MAX_TOPK)
    while True:
        params = dict(search_params)
        if "ef" in params:  # HNSW refuses ef below the number of results asked for
            params["ef"] = max(int(params["ef"]), limit)
        with reader.translate("search"):
            result = reader.client.search(
                reader.collection,
                data=[q.tolist()],
                limit=limit,
                filter=expr,
                output_fields=OUTPUT,
                search_params={"metric_type": "COSINE", "params": params},
                consistency_level=reader.level,
                timeout=reader.timeout,
            )
        raw = list(result[0]) if result else []
        hits = []
        for hit in raw:
            record = from_row(hit.get("entity") or hit)
            if where.matches(record):
                hits.append(ScoredRecord(record, float(hit["distance"])))
        if len(raw) < limit and exact_limit:
            exact = _exact_if_short(reader, q, k, where, exact_limit)
            if exact is not None:
                # A few rows apart is a race (a row applied between the two reads);
                # the interim index misses most of a scope (39 of 200).
                if reader.is_server and len(exact) >= 20 and len(hits) <= len(exact) // 2:
                    _say_search_was_short(len(raw), len(exact))
                return exact
        # Client-side checks may drop rows (metadata on numbers); widen until k or exhausted.
        if len(hits) >= k or len(raw) < limit or limit >= _MAX_TOPK:
            hits.sort(key=lambda h: -h.similarity)
            return hits[:k]
        limit = min(limit * 4, _MAX_TOPK)


_told_short = threading.Event()


def _say_search_was_short(returned: int, matching: int) -> None:
    """Once per process: a server search missed matching rows, so every such read costs a scan."""
    if _told_short.is_set():
        return
    _told_short.set()
    log.warning(
        "memory-vec: the Milvus server's filtered search returned %d rows where at least %d match; each "
        "such query now reads the scope's rows and scores them here (complete, but slower). On Milvus 2.3 "
        "the interim index of growing segments does this: start the server with "
        "queryNode.segcore.interimIndex.enableIndex=false (README, troubleshooting).",
        returned,
        matching,
    )


def _exact_if_short(
    reader: RowReader, q: np.ndarray, k: int, where: RecordFilter, exact_limit: int
) -> list[ScoredRecord] | None:
    """Score every matching row after a search came back short (None: too many rows to).

    One filtered read of the rows with their vectors: a separate count
    first cost as much again on Milvus Lite (~170 ms per filtered read at
    100k rows), and on a server both are a few milliseconds.
    """
    records: list[MemoryRecord] = []
    vectors: list[list[float]] = []
    for record, row in reader.matching(where, None, OUTPUT, with_vectors=True):
        if len(records) >= exact_limit:
            return None
        records.append(record)
        vectors.append(row["vector"])
    return top_k(records, vectors, q, k)


def top_k(
    records: Sequence[MemoryRecord], vectors: Sequence[Sequence[float]], q: np.ndarray, k: int
) -> list[ScoredRecord]:
    """The ``k`` records whose vectors are nearest to ``q`` by cosine, best first (stable on ties)."""
    if not records:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
    scores = (matrix @ q) / np.maximum(norms, 1e-12)
    top = np.argsort(-scores, kind="stable")[:k]
    return [ScoredRecord(records[i], float(scores[i])) for i in top]
