"""Translate a :class:`RecordFilter` into a Milvus boolean expression.

Why not pymilvus' ``filter_params`` templating: Milvus Lite 3.2.2 rejects
``{name}`` placeholders ("unexpected character '{'"), so the one mechanism
both Lite and the 2.3 server honour is a string literal. :func:`literal`
escapes with the only escapes both parsers accept (``\\\\``, ``\\"``,
``\\n``, ``\\r``, ``\\t``); every other character is passed through as-is,
which both grammars allow inside a double-quoted literal. Nothing a caller
supplies is ever pasted into an expression without going through it.

The expression may select a *superset* (metadata on numbers and bools is
not pushed down: Lite treats ``true == 1``, and the server does not treat
``3 == 3.0``); the backend re-checks every row with ``RecordFilter.matches``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memory_vec.backends.base import RecordFilter

__all__ = ["NOTHING", "SHARED_OWNER", "filter_expression", "literal", "literal_list"]

# Partition-key value of agent/global records. Ids cannot contain control
# characters (memory_vec._model.validate), so no user id can collide with it.
SHARED_OWNER = "\x1fshared"
# An expression that selects no row (used for empty id/kind/role lists).
NOTHING = 'id == "" and id != ""'

# Up to this many values, a field's alternatives are written as `==` (see filter_expression).
_EQUALITIES = 8
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def literal(value: str) -> str:
    """A double-quoted Milvus string literal that parses back to ``value``."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string for a filter literal, got {type(value).__name__}")
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


def literal_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(literal(v) for v in values) + "]"


def _number(value: float) -> str:
    return repr(float(value))


def filter_expression(
    where: RecordFilter | None, ids: Iterable[str] | None = None, *, partition_key: bool = True
) -> str:
    """The pushed-down expression for ``where`` (and extra ``ids``); "" selects all.

    ``partition_key``: the collection is partitioned by ``owner``, so naming
    the owners prunes partitions. Without one (2.3 servers) that clause only
    costs, and so does ``in`` against ``==`` alternatives: a 2.3.5 server read
    a user's 100 of 1M rows with their vectors in 33-36 ms with both, 22-23
    without (benchmarks/RESULTS.md).
    """
    parts: list[str] = []
    if ids is not None:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return NOTHING
        parts.append(f"id in {literal_list(ids)}")
    if where is None:
        return " and ".join(parts)
    if any(values is not None and not values for values in (where.ids, where.kinds, where.roles)):
        return NOTHING
    if where.ids is not None:
        parts.append(f"id in {literal_list(where.ids)}")
    owner = _owner_expression(where, partition_key)
    if owner:
        parts.append(owner)
    parts += _field_expressions(where, partition_key)
    return " and ".join(f"({p})" for p in parts)


def _field_expressions(where: RecordFilter, partition_key: bool) -> list[str]:
    parts = [
        _one_of(name, values, partition_key)
        for name, values in (("kind", where.kinds), ("role", where.roles))
        if values is not None
    ]
    bounds = [("timestamp >=", where.since), ("timestamp <=", where.until)]
    parts += [f"{test} {_number(value)}" for test, value in bounds if value is not None]
    seqs = [("seq >=", where.seq_min), ("seq <=", where.seq_max)]
    parts += [f"{test} {int(value)}" for test, value in seqs if value is not None]
    if not where.include_superseded:
        parts.append("superseded == false")
    if not where.include_archived:
        parts.append("archived == false")
    # Only strings compare identically on both engines; the rest is
    # checked client-side (see the module docstring).
    parts += [f"metadata[{literal(k)}] == {literal(v)}" for k, v in where.metadata.items() if isinstance(v, str)]
    return parts


def _one_of(field: str, values: Sequence[str], partition_key: bool) -> str:
    if partition_key or len(values) > _EQUALITIES:  # `in` stays where it was not measured slower
        return f"{field} in {literal_list(values)}"
    return " or ".join(f"{field} == {literal(v)}" for v in values)


def _owner_expression(where: RecordFilter, partition_key: bool) -> str:
    own: list[str] = []
    if where.user_id is not None:
        own.append(f"user_id == {literal(where.user_id)}")
    if where.session_id is not None:
        own.append(f"session_id == {literal(where.session_id)}")
    if not own:
        return ""  # every owner; shared records are a subset of that
    # `owner` is the partition key (the user id, or SHARED_OWNER for shared
    # records, which their writer still owns): naming it prunes partitions.
    prefix = ""
    if where.user_id is not None and partition_key:
        prefix = f"owner in {literal_list([where.user_id, SHARED_OWNER])} and "
    mine = " and ".join(own)
    if not where.include_shared:
        return prefix + mine
    shared = ['visibility == "global"']
    if where.agent_id is not None:
        shared.append(f'(visibility == "agent" and agent_id == {literal(where.agent_id)})')
    return f"{prefix}(({mine}) or {' or '.join(shared)})"
