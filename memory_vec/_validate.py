"""Input checks run before anything is written. Each raises a named error."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from typing import Any

from .errors import (
    ContentTooLargeError,
    InvalidContentError,
    InvalidIdError,
    InvalidMetadataError,
    InvalidRoleError,
    InvalidTimestampError,
)
from .records import ROLES

MAX_ID_LENGTH = 256
# C0/C1 control characters except tab, newline, carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ID_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Year 1..9999 in epoch seconds, what datetime can represent.
_MIN_TS, _MAX_TS = -62135596800.0, 253402300799.0


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
        return value.timestamp()
    if isinstance(value, (int, float)):
        ts = float(value)
        if not math.isfinite(ts):
            raise InvalidTimestampError(f"{field} must be finite, got {value!r}")
        if not _MIN_TS <= ts <= _MAX_TS:
            raise InvalidTimestampError(f"{field} {value!r} is outside years 1-9999")
        return ts
    raise InvalidTimestampError(f"{field} must be a datetime or epoch seconds, got {type(value).__name__}")


def _check_json_value(value: Any, path: str) -> None:
    if value is None or isinstance(value, (bool, int, str)):
        if isinstance(value, str) and _SURROGATE.search(value):
            raise InvalidMetadataError(f"metadata{path} contains a lone surrogate")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidMetadataError(f"metadata{path} is {value!r}; JSON has no NaN or infinity")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json_value(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidMetadataError(f"metadata{path} has a non-string key {key!r}")
            _check_json_value(item, f"{path}[{key!r}]")
        return
    raise InvalidMetadataError(
        f"metadata{path} is a {type(value).__name__}, which is not JSON-serializable; "
        "use str, int, float, bool, None, lists and dicts"
    )


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
    return json.loads(json.dumps(metadata))  # a private, plain-JSON copy


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
        from .errors import InvalidInputError

        raise InvalidInputError(f"k must be an int between 1 and 1000, got {k!r}")
    return k
