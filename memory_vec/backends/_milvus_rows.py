"""How a :class:`~memory_vec._model.records.MemoryRecord` is laid out as a Milvus row.

Filterable fields are columns; nullable ones are written as "" / 0.0 in
their column (Milvus 2.3 has no nullable scalars) and exactly in the
``attrs`` JSON, which is what :func:`from_row` reads back. ``owner`` is the
partition key: the user id of a private record, :data:`SHARED_OWNER` for an
agent or global one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, TypeVar

import numpy as np

from memory_vec._model.errors import InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec.backends._milvus_expr import SHARED_OWNER
from memory_vec.backends._milvus_schema import ID_BYTES, TEXT_BYTES

__all__ = ["REQUEST_BYTES", "from_row", "owner_of", "request_batches", "to_row"]

T = TypeVar("T")
#: Estimated bytes per upsert request, half of what a server accepts by default.
REQUEST_BYTES = 32 << 20


def owner_of(record: MemoryRecord) -> str:
    """The partition-key value of ``record``'s row."""
    return record.user_id if record.visibility == "private" else SHARED_OWNER


def to_row(record: MemoryRecord, vector: np.ndarray) -> dict[str, Any]:
    """The row of ``record``; :class:`InvalidInputError` if a column cannot hold a value."""
    if len(record.text.encode("utf-8")) > TEXT_BYTES:
        raise InvalidInputError(
            f"record {record.id!r}: text is {len(record.text.encode('utf-8'))} bytes; Milvus stores at most "
            f"{TEXT_BYTES} bytes (lower max_content_bytes)"
        )
    for name in ("id", "user_id", "session_id"):
        if len(getattr(record, name).encode("utf-8")) > ID_BYTES:
            raise InvalidInputError(f"record {record.id[:40]!r}: {name} is longer than {ID_BYTES} bytes")
    return {
        "id": record.id,
        "vector": vector.tolist(),
        "owner": owner_of(record),
        "user_id": record.user_id,
        "session_id": record.session_id,
        # Columns for filtering; the exact (nullable) values live in attrs.
        "agent_id": record.agent_id or "",
        "role": record.role,
        "kind": record.kind,
        "visibility": record.visibility,
        "timestamp": float(record.timestamp),
        "seq": int(record.seq),
        "importance": float(record.importance),
        "superseded": record.valid_to is not None,
        "valid_to": float(record.valid_to) if record.valid_to is not None else 0.0,
        "superseded_by": _clip(record.superseded_by or ""),
        "archived": bool(record.archived),
        "pinned": bool(record.pinned),
        "expire_at": float(record.expire_at)
        if record.expire_at is not None and math.isfinite(record.expire_at)
        else 0.0,
        "subject": _clip(record.subject or ""),
        "text": record.text,
        "metadata": dict(record.metadata),
        "attrs": {
            "agent_id": record.agent_id,
            "valid_to": record.valid_to,
            "superseded_by": record.superseded_by,
            "subject": record.subject,
            "expire_at": record.expire_at,
            "source_ids": list(record.source_ids),
            "recall_count": record.recall_count,
            "last_recalled_at": record.last_recalled_at,
        },
    }


def _clip(value: str) -> str:
    data = value.encode("utf-8")
    return value if len(data) <= ID_BYTES else data[:ID_BYTES].decode("utf-8", "ignore")


def from_row(row: dict[str, Any]) -> MemoryRecord:
    """The record stored in ``row`` (a query hit's entity or a query row)."""
    attrs = row.get("attrs") or {}
    if isinstance(attrs, (str, bytes)):
        attrs = json.loads(attrs)
    metadata = row.get("metadata") or {}
    if isinstance(metadata, (str, bytes)):
        metadata = json.loads(metadata)
    return MemoryRecord(
        id=row["id"],
        text=row["text"],
        role=row["role"],
        user_id=row["user_id"],
        session_id=row["session_id"],
        timestamp=float(row["timestamp"]),
        kind=row["kind"],
        seq=int(row["seq"]),
        agent_id=attrs.get("agent_id"),
        importance=float(row["importance"]),
        metadata=dict(metadata),
        valid_to=attrs.get("valid_to"),
        superseded_by=attrs.get("superseded_by"),
        visibility=row["visibility"],
        subject=attrs.get("subject"),
        source_ids=list(attrs.get("source_ids") or []),
        pinned=bool(row["pinned"]),
        expire_at=attrs.get("expire_at"),
        archived=bool(row["archived"]),
        recall_count=int(attrs.get("recall_count") or 0),
        last_recalled_at=attrs.get("last_recalled_at"),
    )


def request_batches(
    rows: list[dict[str, Any]], max_rows: int, max_bytes: int = REQUEST_BYTES
) -> Iterator[list[dict[str, Any]]]:
    """Consecutive batches of at most ``max_rows`` rows and (estimated) ``max_bytes``.

    A server refuses a request over 64 MiB (gRPC ``serverMaxRecvSize``; 600
    rows at the text and metadata limits are 79 MB, measured on 2.3.5), so
    rows at the limits go in smaller batches; small rows batch by count.
    """
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        n = _row_bytes(row)
        if batch and (len(batch) >= max_rows or size + n > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += n
    if batch:
        yield batch


def _row_bytes(row: dict[str, Any]) -> int:
    # An upper estimate of the row on the wire: strings, float32 vector, JSON fields, framing.
    strings = sum(len(v.encode("utf-8")) for v in row.values() if isinstance(v, str))
    documents = sum(len(json.dumps(row[name], ensure_ascii=False).encode("utf-8")) for name in ("metadata", "attrs"))
    return strings + documents + 4 * len(row["vector"]) + 256
