"""Input checks run before anything is written. Each raises a named error."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from memory_vec._model.errors import (
    ContentTooLargeError,
    EmbeddingError,
    InvalidContentError,
    InvalidIdError,
    InvalidInputError,
    InvalidMetadataError,
    InvalidRoleError,
    InvalidTimestampError,
)
from memory_vec._model.queries import BackendLimits
from memory_vec._model.records import KINDS, ROLES, VISIBILITIES, MemoryRecord

MAX_ID_LENGTH = 256
# C0/C1 control characters except tab, newline, carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ID_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Year 1..9999 in epoch seconds, what datetime can represent.
_MIN_TS, _MAX_TS = -62135596800.0, 253402300799.0
#: Library limits every backend honours: JSON nesting, 64-bit integers.
MAX_METADATA_DEPTH = 16
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def check_id(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidIdError(f"{field} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidIdError(f"{field} must not be empty or whitespace")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdError(f"{field} is {len(value)} characters long; the maximum is {MAX_ID_LENGTH}")
    if _SURROGATE.search(value):
        raise InvalidIdError(f"{field} contains a lone surrogate (not valid Unicode text)")
    if _ID_CONTROL.search(value):
        raise InvalidIdError(f"{field} contains control characters")
    return value


def has_lone_surrogate(text: str) -> bool:
    """Text that cannot be encoded as UTF-8 (a bad decode), which every store refuses."""
    return _SURROGATE.search(text) is not None


def check_optional_id(value: Any, field: str) -> str | None:
    return None if value is None else check_id(value, field)


def check_role(role: Any) -> str:
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidRoleError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    return role


def check_content(content: Any, *, max_bytes: int, field: str = "content") -> str:
    if not isinstance(content, str):
        raise InvalidContentError(f"{field} must be a string, got {type(content).__name__}")
    if not content.strip():
        raise InvalidContentError(f"{field} must not be empty or whitespace only")
    if _SURROGATE.search(content):
        raise InvalidContentError(
            f"{field} contains a lone surrogate (e.g. from a bad decode); decode the input as UTF-8 first"
        )
    if _CONTROL.search(content):
        raise InvalidContentError(f"{field} contains control characters (other than tab and newline)")
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise ContentTooLargeError(
            f"{field} is {size} bytes; the maximum is {max_bytes} (MemoryConfig.max_content_bytes). "
            "Split the text, store a shorter version, or raise the limit."
        )
    return content


def check_timestamp(value: Any, *, field: str = "timestamp") -> float | None:
    """None, a datetime (naive = UTC) or epoch seconds, to epoch seconds."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidTimestampError(f"{field} must be a datetime or epoch seconds, got bool")
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        try:
            ts = float(value.timestamp())
        except (OverflowError, ValueError) as exc:
            raise InvalidTimestampError(f"{field} {value!r} cannot be converted to UTC: {exc}") from exc
        if not _MIN_TS <= ts <= _MAX_TS:
            # An aware datetime near year 1 or 9999 can fall outside them in UTC.
            raise InvalidTimestampError(f"{field} {value!r} is outside years 1-9999 in UTC")
        return ts
    if isinstance(value, (int, float)):
        ts = float(value)
        if not math.isfinite(ts):
            raise InvalidTimestampError(f"{field} must be finite, got {value!r}")
        if not _MIN_TS <= ts <= _MAX_TS:
            raise InvalidTimestampError(f"{field} {value!r} is outside years 1-9999")
        return ts
    raise InvalidTimestampError(f"{field} must be a datetime or epoch seconds, got {type(value).__name__}")


def _check_json_value(value: Any, path: str, depth: int = 0, *, limits: BackendLimits | None = None) -> None:
    max_depth = MAX_METADATA_DEPTH if limits is None else min(MAX_METADATA_DEPTH, limits.max_metadata_depth)
    if value is None or isinstance(value, (bool, str, int, float)):
        _check_json_scalar(value, path, limits)
        return
    if isinstance(value, (list, tuple, dict)) and depth >= max_depth:
        raise InvalidMetadataError(f"metadata{path} is nested deeper than {max_depth} levels")
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json_value(item, f"{path}[{i}]", depth + 1, limits=limits)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidMetadataError(f"metadata{path} has a non-string key {key!r}")
            if _SURROGATE.search(key):
                raise InvalidMetadataError(f"metadata{path} has a key with a lone surrogate")
            _check_json_value(item, f"{path}[{key!r}]", depth + 1, limits=limits)
        return
    raise InvalidMetadataError(
        f"metadata{path} is a {type(value).__name__}, which is not JSON-serializable; "
        "use str, int, float, bool, None, lists and dicts"
    )


def _check_json_scalar(value: str | float | None, path: str, limits: BackendLimits | None) -> None:
    if isinstance(value, str) and _SURROGATE.search(value):
        raise InvalidMetadataError(f"metadata{path} contains a lone surrogate")
    if isinstance(value, int) and not isinstance(value, bool):
        lo, hi = (INT_MIN, INT_MAX) if limits is None else (max(INT_MIN, limits.int_min), min(INT_MAX, limits.int_max))
        if not lo <= value <= hi:
            raise InvalidMetadataError(
                f"metadata{path} is {value}, outside the integers the backend stores ({lo} to {hi}); "
                "store it as a string"
            )
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidMetadataError(f"metadata{path} is {value!r}; JSON has no NaN or infinity")


def check_metadata(metadata: Any, *, max_bytes: int) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidMetadataError(f"metadata must be a dict, got {type(metadata).__name__}")
    _check_json_value(metadata, "")
    size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
    if size > max_bytes:
        raise InvalidMetadataError(
            f"metadata is {size} bytes as JSON; the maximum is {max_bytes} (MemoryConfig.max_metadata_bytes)"
        )
    copy: dict[str, Any] = json.loads(json.dumps(metadata))  # a private, plain-JSON copy
    return copy


def check_filters(filters: Any) -> dict[str, Any]:
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise InvalidMetadataError(f"filters must be a flat dict, got {type(filters).__name__}")
    for key, value in filters.items():
        if not isinstance(key, str) or not key:
            raise InvalidMetadataError(f"filter keys must be non-empty strings, got {key!r}")
        if not isinstance(value, (str, int, float, bool)) or (isinstance(value, float) and not math.isfinite(value)):
            raise InvalidMetadataError(
                f"filter {key!r} must be a str, int, finite float or bool (equality only), got {value!r}"
            )
    return dict(filters)


def check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidInputError(f"k must be an int between 1 and 1000, got {k!r}")
    return k


def check_vectors(vectors: Any, *, count: int, dimension: int | None, ids: Sequence[str]) -> None:
    """One finite vector per record, of the collection's dimension (a broken
    model's NaN or a wrong-sized vector is refused here, not by the engine)."""
    shape = getattr(vectors, "shape", None)
    if shape is None or len(shape) != 2 or shape[0] != count:
        raise EmbeddingError(f"expected {count} vector(s) as a 2-d array, got shape {shape}")
    if dimension is not None and shape[1] != dimension:
        raise EmbeddingError(
            f"vectors have dimension {shape[1]}, the collection holds dimension {dimension}: "
            "the embedder changed (use memory-vec reembed) or returned a wrong-sized vector"
        )
    import numpy as np  # here, not at the top: MemoryConfig (which imports this module) stays numpy-free

    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        bad = [ids[i] for i in np.flatnonzero(~finite)[:5]]
        raise EmbeddingError(f"the embedder returned a non-finite vector (NaN or infinity) for record(s) {bad}")


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def check_record(record: MemoryRecord, limits: BackendLimits, *, max_metadata_bytes: int = 1 << 20) -> None:
    """The single check every write path runs before anything is queued or
    written: the library's rules and the configured backend's hard limits.

    Raises a named :class:`~memory_vec._model.errors.InvalidInputError` subclass that
    names the record, the field, the value and the limit.
    """
    _check_record_ids(record, limits)
    _check_record_kinds(record)
    _check_record_text(record, limits)
    _check_record_numbers(record)
    _check_record_metadata(record, limits, max_metadata_bytes)
    _check_record_links(record)


def _check_record_ids(record: MemoryRecord, limits: BackendLimits) -> None:
    rid = record.id
    check_id(rid, "record id")
    for name in ("user_id", "session_id"):
        check_id(getattr(record, name), f"{name} of record {rid!r}")
    check_optional_id(record.agent_id, f"agent_id of record {rid!r}")
    if limits.max_id_bytes is None:
        return
    for name in ("id", "user_id", "session_id", "agent_id", "superseded_by", "subject"):
        value = getattr(record, name)
        if isinstance(value, str) and _utf8_len(value) > limits.max_id_bytes:
            raise InvalidIdError(
                f"record {rid!r}: {name} is {_utf8_len(value)} bytes; the backend stores at most {limits.max_id_bytes}"
            )


def _check_record_kinds(record: MemoryRecord) -> None:
    rid = record.id
    if record.kind not in KINDS:
        raise InvalidInputError(f"record {rid!r}: kind must be one of {', '.join(KINDS)}; got {record.kind!r}")
    if record.role not in ROLES:
        raise InvalidRoleError(f"record {rid!r}: role must be one of {', '.join(ROLES)}; got {record.role!r}")
    if record.visibility not in VISIBILITIES:
        raise InvalidInputError(
            f"record {rid!r}: visibility must be one of {', '.join(VISIBILITIES)}; got {record.visibility!r}"
        )


def _check_record_text(record: MemoryRecord, limits: BackendLimits) -> None:
    rid = record.id
    if not isinstance(record.text, str) or not record.text.strip():
        raise InvalidContentError(f"record {rid!r}: text must be a non-empty string")
    if _SURROGATE.search(record.text) or _CONTROL.search(record.text):
        raise InvalidContentError(f"record {rid!r}: text contains control characters or lone surrogates")
    if limits.max_text_bytes is not None and _utf8_len(record.text) > limits.max_text_bytes:
        raise ContentTooLargeError(
            f"record {rid!r}: text is {_utf8_len(record.text)} bytes; the backend stores at most "
            f"{limits.max_text_bytes} (lower MemoryConfig.max_content_bytes)"
        )


def _check_record_numbers(record: MemoryRecord) -> None:
    rid = record.id
    for name in ("timestamp", "valid_to", "expire_at", "last_recalled_at"):
        value = getattr(record, name)
        if value is None and name == "timestamp":
            raise InvalidTimestampError(f"record {rid!r}: timestamp is missing")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise InvalidTimestampError(f"record {rid!r}: {name} must be epoch seconds, got {value!r}")
        check_timestamp(value, field=f"{name} of record {rid!r}")
    importance = record.importance
    if not isinstance(importance, (int, float)) or isinstance(importance, bool) or not 0.0 <= float(importance) <= 1.0:
        raise InvalidInputError(f"record {rid!r}: importance must be a number in [0, 1], got {importance!r}")
    for name in ("seq", "recall_count"):
        value = getattr(record, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT_MAX:
            raise InvalidInputError(f"record {rid!r}: {name} must be a non-negative integer, got {value!r}")
    for name in ("pinned", "archived"):  # (0 and 1 too: a store may give them back as numbers)
        if not isinstance(getattr(record, name), int) or getattr(record, name) not in (0, 1):
            raise InvalidInputError(f"record {rid!r}: {name} must be true or false, got {getattr(record, name)!r}")


def _check_record_metadata(record: MemoryRecord, limits: BackendLimits, max_metadata_bytes: int) -> None:
    rid = record.id
    if not isinstance(record.metadata, dict):
        raise InvalidMetadataError(f"record {rid!r}: metadata must be a dict, got {type(record.metadata).__name__}")
    _check_json_value(record.metadata, "", limits=limits)
    size = _utf8_len(json.dumps(record.metadata, ensure_ascii=False))
    cap = (
        max_metadata_bytes if limits.max_metadata_bytes is None else min(max_metadata_bytes, limits.max_metadata_bytes)
    )
    if size > cap:
        raise InvalidMetadataError(f"record {rid!r}: metadata is {size} bytes as JSON; the maximum is {cap}")


def _check_record_links(record: MemoryRecord) -> None:
    rid = record.id
    if not isinstance(record.source_ids, list) or not all(isinstance(s, str) for s in record.source_ids):
        raise InvalidInputError(f"record {rid!r}: source_ids must be a list of ids")
    for sid in record.source_ids:
        check_id(sid, f"source id of record {rid!r}")
    check_optional_id(record.superseded_by, f"superseded_by of record {rid!r}")
    if record.subject is not None and not isinstance(record.subject, str):
        raise InvalidInputError(f"record {rid!r}: subject must be a string or None, got {record.subject!r}")
