"""Recall: ranking beyond cosine (decay, importance, hybrid BM25, neighbours)."""

from __future__ import annotations

from .ranking import Candidate, RankingPolicy, decay, dedupe_key, rank, similarity_to_score

__all__ = ["Candidate", "RankingPolicy", "decay", "dedupe_key", "rank", "similarity_to_score"]
