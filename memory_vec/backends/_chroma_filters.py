"""Translate a :class:`RecordFilter` into Chroma ``where`` dicts.

Values are data inside the dict, never syntax, so no id can change a
filter. The dicts only narrow on the fields stored as keys of their own
(see :mod:`._chroma_rows`); the caller's metadata is matched on the rows,
as everything is: the backend checks every returned row with
``RecordFilter.matches``.
"""

from __future__ import annotations

import math
from typing import Any

from memory_vec.backends.base import RecordFilter

__all__ = ["NothingMatches", "owner_wheres", "where_clause"]


class NothingMatches(Exception):
    """A filter that can match no row (e.g. ``kinds=()``); Chroma rejects ``$in: []``."""


def where_clause(f: RecordFilter) -> dict[str, Any] | None:
    """RecordFilter -> Chroma ``where`` dict; values are data, never syntax.

    Raises:
        NothingMatches: no row can match (the caller answers with nothing).
    """
    if any(isinstance(value, float) and not math.isfinite(value) for value in f.metadata.values()):
        raise NothingMatches  # stored metadata is JSON without NaN or infinity
    if f.ids is not None and not f.ids:
        raise NothingMatches
    owner = _owner_clause(f)
    return _and([*([owner] if owner is not None else []), *_field_clauses(f)])


def _owner_clause(f: RecordFilter) -> dict[str, Any] | None:
    """The user's (and session's) rows, or the rows shared with them."""
    scope: list[dict[str, Any]] = []
    if f.user_id is not None:
        scope.append({"user_id": {"$eq": f.user_id}})
    if f.session_id is not None:
        scope.append({"session_id": {"$eq": f.session_id}})
    owner = _and(scope)
    if owner is None or not f.include_shared:
        return owner
    shared: list[dict[str, Any]] = [owner, {"visibility": {"$eq": "global"}}]
    if f.agent_id is not None:
        agent = [
            {"visibility": {"$eq": "agent"}},
            {"agent_id": {"$eq": f.agent_id}},
            {"agent_id_is_null": {"$eq": False}},
        ]
        shared.append({"$and": agent})
    return {"$or": shared}


def _field_clauses(f: RecordFilter) -> list[dict[str, Any]]:
    clauses: list[dict[str, Any]] = []
    for name, values in (("kind", f.kinds), ("role", f.roles)):
        if values is not None:
            if not values:
                raise NothingMatches
            clauses.append({name: {"$in": list(values)}})
    bounds = [("timestamp", "$gte", f.since), ("timestamp", "$lte", f.until)]
    bounds += [("seq", "$gte", f.seq_min), ("seq", "$lte", f.seq_max)]
    for name, op, value in bounds:
        if value is not None:
            clauses.append({name: {op: float(value) if name == "timestamp" else int(value)}})
    if not f.include_superseded:
        clauses.append({"valid_to_is_null": {"$eq": True}})
    if not f.include_archived:
        clauses.append({"archived": {"$eq": False}})
    return clauses


def owner_wheres(f: RecordFilter) -> list[dict[str, Any] | None]:
    """User scope as one equality (plus the shared rows as another); the rest is checked on the rows.

    Chroma evaluates a compound where ($or, $in, flags) over the whole
    collection: at 30k rows the recall filter cost 130 ms, user_id alone
    27 ms (benchmarks/RESULTS.md). One kind is an equality too (the conflict
    check asks for facts only; widening through a user's messages cost 4
    queries); `$in` was slower than no clause (64 vs 28 ms).
    """
    one_kind = [{"kind": {"$eq": f.kinds[0]}}] if f.kinds is not None and len(f.kinds) == 1 else []
    owner: list[dict[str, Any]] = [{"user_id": {"$eq": f.user_id}}, *one_kind]
    if f.session_id is not None:
        owner.append({"session_id": {"$eq": f.session_id}})
    wheres = [_and(owner)]
    if f.include_shared:
        shared = ["global", "agent"] if f.agent_id is not None else ["global"]
        wheres.append(_and([{"visibility": {"$in": shared}}, *one_kind]))
    return wheres


def _and(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
