"""Pure helpers of :class:`~langchain_memory_vec.store.VectorSummaryStore`: no I/O.

How a LangGraph item becomes one memory-vec record and back, which user a
namespace belongs to, and the filter / namespace matching of LangGraph's
``InMemoryStore``. The store module does the backend and embedder calls.

Record layout (one record per item, in a collection of its own):

* ``id``: ``"lg-"`` + 40 hex digits of SHA-256 over ``[namespace, key]``, so
  equal keys in two namespaces (or users) never share a record.
* ``user_id``: the namespace element at :attr:`UserScope.position`.
* ``session_id``: the namespace joined with ``"."`` (LangGraph forbids ``"."``
  in labels, so the join is unambiguous), or a hash when that is too long.
* ``text``: the value as JSON, exactly what ``get`` returns.
* ``timestamp``: ``updated_at``; ``expire_at``: the TTL deadline.
* ``metadata``: the marker ``lg_store``, namespace, key, ``created_at``, the
  TTL in minutes and the indexed field paths (absent: not searchable by vector).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from langgraph.store.base import InvalidNamespaceError, Item, MatchCondition, SearchItem, TTLConfig
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from memory_vec._model.errors import (
    ConfigError,
    ContentTooLargeError,
    InvalidIdError,
    InvalidInputError,
    InvalidMetadataError,
)
from memory_vec._model.records import MemoryRecord, to_datetime
from memory_vec._model.validate import has_lone_surrogate
from memory_vec.backends.base import BackendLimits

__all__ = [
    "MARKER",
    "NamespaceScopeError",
    "StoredItem",
    "UserScope",
    "build_record",
    "check_filter",
    "check_index_paths",
    "check_keys",
    "check_ttl_config",
    "index_text",
    "matches_filter",
    "matches_namespace",
    "record_id",
]

MARKER = "lg_store"  # metadata key present (value 1) on every record this store writes
_FORMAT = 1
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_MAX_SESSION_BYTES = 256
_MAX_ID_CHARS = 256  # memory-vec's id length
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_TTL_KEYS = ("refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired")
_MAX_DEPTH = 100  # the value is stored as JSON text, not as engine metadata: only a sanity bound


class NamespaceScopeError(InvalidInputError, InvalidNamespaceError):
    """A namespace (prefix) does not name exactly one user, and the store is user-scoped."""


@dataclass(frozen=True)
class UserScope:
    """The rule that maps a namespace onto a memory-vec user: the element at ``position``.

    The default ``position=1`` reads ``("memories", user_id, ...)``. With
    ``allow_cross_user`` a search or namespace listing may span users (admin
    tools); writes and reads of one item always need the user element.
    """

    position: int = 1
    allow_cross_user: bool = False

    def user_of(self, namespace: tuple[str, ...]) -> str:
        """The owner of an item's namespace."""
        if len(namespace) <= self.position:
            raise NamespaceScopeError(
                f"Namespace {namespace!r} has no element at position {self.position}, which this store "
                f"reads as the user id (user_position={self.position}). Use a namespace such as "
                f"{_example(self.position)}, or build the store with another user_position."
            )
        return namespace[self.position]

    def user_of_prefix(self, path: Sequence[str], *, wildcards: bool, action: str) -> str | None:
        """The one user a search prefix (or a namespace-listing path) pins; ``None`` for every user."""
        if len(path) > self.position and not (wildcards and path[self.position] == "*"):
            return path[self.position]
        if self.allow_cross_user:
            return None
        raise NamespaceScopeError(
            f"{action} with prefix {tuple(path)!r} would span every user: this store reads the user id from "
            f"namespace position {self.position}, so the prefix must name it, e.g. {_example(self.position)}. "
            "To administer all users on purpose, build the store with allow_cross_user=True."
        )


def _example(position: int) -> tuple[str, ...]:
    return ("memories", "<user_id>") if position == 1 else (*(["<label>"] * position), "<user_id>")


def record_id(namespace: tuple[str, ...], key: str) -> str:
    """The record id of an item: a digest of (namespace, key), stable across processes."""
    raw = json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))
    return "lg-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _session_of(namespace: tuple[str, ...], limits: BackendLimits) -> str:
    joined = ".".join(namespace)
    cap = min(_MAX_SESSION_BYTES, limits.max_id_bytes or _MAX_SESSION_BYTES)
    if len(joined.encode("utf-8")) <= cap:
        return joined
    return "ns-" + hashlib.sha256(joined.encode("utf-8")).hexdigest()[:40]


@dataclass
class StoredItem:
    """One decoded item with the record it came from."""

    record: MemoryRecord
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created: float
    ttl: float | None  # minutes
    fields: tuple[str, ...] | None  # indexed paths; None = not searchable by vector

    @classmethod
    def decode(cls, record: MemoryRecord) -> StoredItem | None:
        """The item of a record this store wrote; ``None`` for any other record
        (one that merely carries the marker, say a core's ``remember(metadata=...)``,
        is not an item and must not break a user's searches)."""
        meta = record.metadata
        if meta.get(MARKER) != _FORMAT:
            return None
        try:
            fields, ttl = meta.get("lg_fields"), meta.get("lg_ttl")
            namespace, value = json.loads(meta["lg_ns"]), json.loads(record.text)
            if not isinstance(value, dict) or not isinstance(namespace, list):
                return None
            return cls(
                record=record,
                namespace=tuple(str(label) for label in namespace),
                key=str(meta["lg_key"]),
                value=value,
                created=float(meta["lg_created"]),
                ttl=float(ttl) if ttl is not None else None,
                fields=tuple(json.loads(fields)) if fields else None,
            )
        except (KeyError, TypeError, ValueError):  # json.JSONDecodeError is a ValueError
            return None

    def expired(self, now: float) -> bool:
        return self.record.expire_at is not None and self.record.expire_at <= now

    def sort_key(self) -> tuple[float, tuple[str, ...], str]:
        """Listing order: oldest first, as ``InMemoryStore`` lists one namespace."""
        return (self.created, self.namespace, self.key)

    def to_item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=to_datetime(self.created),
            updated_at=self._updated(),
        )

    def to_search_item(self, score: float | None) -> SearchItem:
        return SearchItem(self.namespace, self.key, self.value, to_datetime(self.created), self._updated(), score)

    def _updated(self) -> datetime:
        return to_datetime(self.record.timestamp)


def index_text(value: Mapping[str, Any], fields: Iterable[str]) -> str:
    """The text embedded for an item: the texts at ``fields``, one per line ("" when none)."""
    texts: list[str] = []
    for path in fields:
        texts.extend(t for t in get_text_at_path(value, path if path == "$" else tokenize_path(path)) if t)
    return "\n".join(texts)


def check_index_paths(paths: Any, *, where: str) -> tuple[str, ...]:
    """Validated field paths of ``index=`` (a list of strings such as ``"text"``, ``"a.b[*].c"``, ``"$"``)."""
    if isinstance(paths, str) or not isinstance(paths, Sequence) or not all(isinstance(p, str) and p for p in paths):
        raise InvalidInputError(f"{where}: expected a list of field paths such as ['text'], got {paths!r}")
    for path in paths:
        if path != "$":
            try:
                tokenize_path(path)
            except Exception as exc:  # langgraph's parser raises plain exceptions
                raise InvalidInputError(f"{where}: cannot parse field path {path!r}: {exc}") from exc
    return tuple(paths)


def _check_json(value: Any, path: str, depth: int = 0) -> None:
    if depth > _MAX_DEPTH:
        raise InvalidMetadataError(f"{path}: nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidMetadataError(f"{path}: key {k!r} is a {type(k).__name__}; JSON keys must be strings")
            if has_lone_surrogate(k):
                raise InvalidMetadataError(f"{path}: a key is not valid Unicode (a lone surrogate)")
            _check_json(v, f"{path}.{k}", depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_json(v, f"{path}[{i}]", depth + 1)
    elif isinstance(value, str) and has_lone_surrogate(value):
        raise InvalidMetadataError(f"{path}: the text is not valid Unicode (a lone surrogate)")
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidMetadataError(f"{path}: {value!r} is not valid JSON")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise InvalidMetadataError(f"{path}: a {type(value).__name__} is not JSON-serializable")


def _check_user(user_id: str, where: str, limits: BackendLimits) -> None:
    cap = min(_MAX_ID_CHARS * 4, limits.max_id_bytes or _MAX_ID_CHARS * 4)
    if len(user_id) > _MAX_ID_CHARS or len(user_id.encode("utf-8", "surrogatepass")) > cap:
        raise InvalidIdError(
            f"{where}: the user id (namespace element) {user_id[:40]!r}... is longer than "
            f"memory-vec ids may be ({_MAX_ID_CHARS} characters, {cap} UTF-8 bytes)"
        )
    if _CONTROL.search(user_id):
        raise InvalidIdError(f"{where}: the user id (namespace element) {user_id!r} contains control characters")


def build_record(
    namespace: tuple[str, ...],
    key: str,
    value: Mapping[str, Any],
    *,
    user_id: str,
    fields: tuple[str, ...] | None,
    ttl: float | None,
    created: float,
    now: float,
    limits: BackendLimits,
) -> tuple[MemoryRecord, str]:
    """The record of an item and the text to embed ("" when the item is not indexed).

    Raises before anything is written when the value is not JSON or the
    record breaks one of the backend's limits.
    """
    where = f"item {namespace!r}/{key!r}"
    if not isinstance(key, str):
        raise InvalidInputError(f"{where}: the key must be a string, got {type(key).__name__}")
    if any(has_lone_surrogate(label) for label in (*namespace, key) if isinstance(label, str)):
        raise InvalidInputError(f"{where}: the namespace and key must be valid Unicode (no lone surrogates)")
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where}: value must be a dict, got {type(value).__name__}")
    value = dict(value)
    _check_json(value, f"{where} value")
    if ttl is not None and (
        isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0 or not math.isfinite(ttl)
    ):
        raise InvalidInputError(f"{where}: ttl must be a positive number of minutes or None, got {ttl!r}")
    _check_user(user_id, where, limits)
    text = json.dumps(value, ensure_ascii=False)
    if limits.max_text_bytes is not None and len(text.encode("utf-8")) > limits.max_text_bytes:
        raise ContentTooLargeError(
            f"{where}: the value is {len(text.encode('utf-8'))} bytes as JSON; this backend stores at most "
            f"{limits.max_text_bytes}. Store large documents elsewhere and keep a reference here."
        )
    embed_text = index_text(value, fields) if fields else ""
    metadata: dict[str, Any] = {
        MARKER: _FORMAT,
        "lg_ns": json.dumps(list(namespace), ensure_ascii=False),
        "lg_key": key,
        "lg_created": created,
    }
    if embed_text and fields:
        metadata["lg_fields"] = json.dumps(list(fields), ensure_ascii=False)
    if ttl is not None:
        metadata["lg_ttl"] = float(ttl)
    meta_bytes = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
    if limits.max_metadata_bytes is not None and meta_bytes > limits.max_metadata_bytes:
        raise InvalidMetadataError(
            f"{where}: namespace and key take {meta_bytes} bytes of record metadata; "
            f"this backend allows {limits.max_metadata_bytes}"
        )
    record = MemoryRecord(
        id=record_id(namespace, key),
        text=text,
        role="user",
        user_id=user_id,
        session_id=_session_of(namespace, limits),
        timestamp=now,
        kind="item",
        metadata=metadata,
        expire_at=now + float(ttl) * 60.0 if ttl is not None else None,
    )
    return record, embed_text


# --- store options ---------------------------------------------------------------------------------
def check_keys(options: dict[str, Any], allowed: tuple[str, ...], name: str) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(f"VectorSummaryStore.{name}: unknown keys {unknown}; allowed: {', '.join(allowed)}")


def check_ttl_config(ttl: TTLConfig | None) -> TTLConfig | None:
    if ttl is None:
        return None
    options: dict[str, Any] = dict(ttl)
    check_keys(options, _TTL_KEYS, "ttl")
    if options.get("omit_expired") is False:
        raise ConfigError("VectorSummaryStore.ttl['omit_expired']: got False; this store always hides expired items")
    default = options.get("default_ttl")
    if default is not None and (isinstance(default, bool) or not isinstance(default, int | float) or default <= 0):
        raise ConfigError(f"VectorSummaryStore.ttl['default_ttl']: got {default!r}; expected minutes > 0 or None")
    return cast(TTLConfig, options)


# --- InMemoryStore's filter and namespace semantics ------------------------------------------------
def check_filter(filter: Mapping[str, Any] | None, depth: int = 0) -> None:
    """Reject unknown ``$`` operators before anything runs (``InMemoryStore`` raises ``ValueError`` too),
    a condition mixing operators with other keys, and nesting past the values' own depth bound."""
    if depth > _MAX_DEPTH:
        raise InvalidInputError(f"filter: nested deeper than {_MAX_DEPTH} levels")
    if filter is not None and not isinstance(filter, Mapping):
        raise InvalidInputError(f"filter: expected a dict, got {type(filter).__name__}")
    for field_name, value in (filter or {}).items():
        if isinstance(value, Mapping):
            keys = [str(k) for k in value]
            operators = [k for k in keys if k.startswith("$")]
            for op in operators:
                if op not in _OPERATORS:
                    raise InvalidInputError(f"filter: unsupported operator {op!r}; supported: {', '.join(_OPERATORS)}")
            if operators and len(operators) != len(keys):
                raise InvalidInputError(
                    f"filter: the condition on {field_name!r} mixes operators {operators} with "
                    f"other keys {[k for k in keys if not k.startswith('$')]}"
                )
            if not operators:
                check_filter(value, depth + 1)


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether a value passes a LangGraph search filter (every condition ANDed)."""
    return all(_compare(value.get(k), wanted) for k, wanted in (filter or {}).items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted))
        )
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    # InMemoryStore compares as floats; a missing or non-numeric field simply does not match here.
    try:
        a, b = float(actual), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def matches_namespace(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """``list_namespaces`` matching: a prefix or suffix path where ``"*"`` matches any label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise InvalidInputError(f"list_namespaces: unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)
