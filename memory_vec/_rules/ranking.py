"""Ranking of recall candidates: pure functions, no I/O.

Final score, in [0, 1]::

    relevance = (1 - bm25_weight) * similarity + bm25_weight * bm25   (hybrid)
              = similarity                                             (vector only)
    score     = relevance * (1 - wr - wi + wr * decay + wi * importance)

``similarity`` is cosine clipped to [0, 1] (negative cosine means unrelated
for normalized text embeddings). ``decay = 0.5 ** (age / half_life)`` with a
floor of ``importance`` for memories at or above ``importance_floor``, so
important memories never decay away; the lifecycle's forgetting uses this
same :func:`decay`. With both weights at 0 the score is the relevance.
"""

from __future__ import annotations

import math
import re
import unicodedata
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_vec._model.records import MemoryRecord, RecalledMemory

__all__ = ["Candidate", "ScorePolicy", "decay", "dedupe_key", "rank", "similarity_to_score"]

_SECONDS_PER_DAY = 86400.0


def similarity_to_score(cosine: float) -> float:
    """Cosine in [-1, 1] to a similarity score in [0, 1]."""
    if not math.isfinite(cosine):
        return 0.0
    return min(1.0, max(0.0, cosine))


def decay(
    age_seconds: float, *, half_life_days: float | None, importance: float = 0.0, importance_floor: float = 0.8
) -> float:
    """Exponential time decay in [0, 1]; important memories keep a floor."""
    if half_life_days is None:
        return 1.0
    value: float = 0.5 ** (max(age_seconds, 0.0) / (half_life_days * _SECONDS_PER_DAY))
    if importance >= importance_floor:
        value = max(value, importance)
    return value


@dataclass
class Candidate:
    record: MemoryRecord
    similarity: float  # cosine, [-1, 1]
    bm25: float | None = None  # normalized to [0, 1] within the query
    boost: float = 0.0  # additive relevance boost (e.g. the query names the speaker)


@dataclass(frozen=True)
class ScorePolicy:
    """What :func:`rank` scores by, resolved from a config for one read path
    (the public knobs are :class:`memory_vec.RankingPolicy`, in the config)."""

    half_life_days: float | None = None
    recency_weight: float = 0.0
    importance_weight: float = 0.0
    bm25_weight: float = 0.0
    importance_floor: float = 0.8
    threshold: float = 0.0
    collapse_duplicates: bool = True
    extra: dict[str, float] = field(default_factory=dict)


# Punctuation that is part of a number ("1.5", "-18", "5,000", "3/4", "10:30") is kept
# in the key as a letter of its own, so "1.5 mg" and "15 mg" never collapse.
_NUMBER_MARK = re.compile(r"(?<=\d)[.,:/](?=\d)|(?<![\w.,])[-−](?=\d)")
_MARK_LETTER = {".": "ǂ", ",": "ǁ", ":": "ǀ", "/": "ǃ", "-": "ʘ", "−": "ʘ"}


def dedupe_key(text: str) -> str:
    """Texts equal up to case, width, spacing and punctuation collapse
    (punctuation inside a number counts)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _NUMBER_MARK.sub(lambda m: _MARK_LETTER[m.group()], text)
    return re.sub(r"[\W_]+", "", text)


def rank(candidates: Sequence[Candidate], *, policy: ScorePolicy, now: float, k: int) -> list[RecalledMemory]:
    """Score, threshold, collapse near-identical texts, and keep the top k."""
    scored: list[tuple[float, float, int, dict[str, float]]] = []
    for position, c in enumerate(candidates):
        if c.record.expire_at is not None and c.record.expire_at <= now:
            continue  # expired but not yet removed by maintain(): never served
        sim = similarity_to_score(c.similarity)
        if c.bm25 is not None and policy.bm25_weight > 0:
            relevance = (1 - policy.bm25_weight) * sim + policy.bm25_weight * c.bm25
        else:
            relevance = sim
        relevance = min(1.0, relevance + c.boost)
        d = decay(
            now - c.record.timestamp,
            half_life_days=policy.half_life_days,
            importance=c.record.importance,
            importance_floor=policy.importance_floor,
        )
        wr, wi = policy.recency_weight, policy.importance_weight
        factor = (1 - wr - wi) + wr * d + wi * c.record.importance
        score = max(0.0, min(1.0, relevance * factor))
        if score < policy.threshold:
            continue
        components = {
            "similarity": sim,
            "relevance": relevance,
            "decay": d,
            "importance": c.record.importance,
            "factor": factor,
        }
        if c.bm25 is not None:
            components["bm25"] = c.bm25
        if c.boost:
            components["boost"] = c.boost
        scored.append((score, c.record.timestamp, position, components))
    # Best first; ties: newer first, a message before a fact with its very text (what
    # the user said, not a copy), then candidate order (deterministic on every backend).
    scored.sort(key=lambda row: (-row[0], -row[1], candidates[row[2]].record.kind != "message", row[2]))
    out: list[RecalledMemory] = []
    seen: set[str] = set()
    for score, _, position, components in scored:
        record = candidates[position].record
        if policy.collapse_duplicates:
            # A fact and the message it was extracted from say the same thing.
            keys = {dedupe_key(record.text), f"id:{record.id}", *(f"id:{i}" for i in record.source_ids)}
            if keys & seen:
                continue
            seen |= keys
        hit = RecalledMemory.from_record(record, score=score, similarity=components["similarity"])
        hit.components = components
        out.append(hit)
        if len(out) >= k:
            break
    return out


def __getattr__(name: str) -> Any:
    # 0.1 exported this class as memory_vec.recall.RankingPolicy; that name is now the public
    # config model (memory_vec.RankingPolicy), so the old one works under it until 0.3.
    if name == "RankingPolicy":
        warnings.warn(
            "memory_vec.recall.RankingPolicy is memory_vec._rules.ranking.ScorePolicy since memory-vec 0.2 "
            "(memory_vec.RankingPolicy is now the config's ranking knobs); the old name goes in 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        return ScorePolicy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
