"""How a :class:`~memory_vec.records.MemoryRecord` is laid out as a Chroma row.

The text is the document. Every record field is a scalar metadata value;
nullable fields are written as a value plus ``<name>_is_null`` (Chroma has no
null). The caller's metadata is kept twice: as a JSON string
(``metadata_json``, the exact round trip) and its top-level scalars
flattened under ``m.`` for equality filters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..records import MemoryRecord

__all__ = ["FLAT", "clear_stale_keys", "decode", "encode", "zip_page"]

FLAT = "m."  # prefix of flattened caller-metadata keys

# Fields written as plain scalars, and nullable ones written as value + "<name>_is_null".
_PLAIN = ("role", "user_id", "session_id", "timestamp", "kind", "seq", "importance", "visibility",
          "pinned", "archived", "recall_count")
_NULLABLE_STR = ("agent_id", "superseded_by", "subject")
_NULLABLE_FLOAT = ("valid_to", "expire_at", "last_recalled_at")


def encode(record: MemoryRecord) -> dict[str, Any]:
    """The Chroma metadata of ``record`` (its text goes in as the document)."""
    meta: dict[str, Any] = {name: getattr(record, name) for name in _PLAIN}
    meta["seq"], meta["recall_count"] = int(record.seq), int(record.recall_count)
    meta["timestamp"], meta["importance"] = float(record.timestamp), float(record.importance)
    meta["pinned"], meta["archived"] = bool(record.pinned), bool(record.archived)
    for name in _NULLABLE_STR:
        value = getattr(record, name)
        meta[name], meta[f"{name}_is_null"] = ("" if value is None else value), value is None
    for name in _NULLABLE_FLOAT:
        value = getattr(record, name)
        meta[name], meta[f"{name}_is_null"] = (0.0 if value is None else float(value)), value is None
    meta["source_ids"] = json.dumps(list(record.source_ids), ensure_ascii=False)
    try:
        meta["metadata_json"] = json.dumps(record.metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata of record {record.id!r} is not JSON-serializable: {exc}") from exc
    for key, value in record.metadata.items():
        if isinstance(value, bool | str) or (isinstance(value, int | float) and math.isfinite(value)):
            meta[FLAT + key] = value
    return meta


def decode(row_id: str, document: str | None, meta: dict[str, Any]) -> MemoryRecord:
    """The record stored as (``row_id``, ``document``, ``meta``)."""
    fields: dict[str, Any] = {name: meta[name] for name in _PLAIN}
    for name in (*_NULLABLE_STR, *_NULLABLE_FLOAT):
        fields[name] = None if meta[f"{name}_is_null"] else meta[name]
    return MemoryRecord(
        id=row_id, text=document or "", source_ids=json.loads(meta["source_ids"]),
        metadata=json.loads(meta["metadata_json"]), **fields,
    )


def clear_stale_keys(
    collection: Any, ids: list[str], metadatas: list[dict[str, Any]], *, with_vectors: bool = False
) -> tuple[list[dict[str, Any]], np.ndarray | None]:
    """Metadata with stale keys set to ``None`` (and, on request, the stored vectors in ``ids`` order).

    Chroma merges metadata on upsert/update and deletes a key given as
    ``None``. Without this, a flattened caller-metadata key that the new
    version no longer has would keep matching equality filters.
    """
    include = ["metadatas", "embeddings"] if with_vectors else ["metadatas"]
    existing = collection.get(ids=ids, include=include)
    old_keys = {row_id: set(meta or {}) for row_id, meta in zip(existing["ids"], existing["metadatas"])}
    out = []
    for row_id, meta in zip(ids, metadatas):
        stale = old_keys.get(row_id, set()) - set(meta)
        out.append({**meta, **dict.fromkeys(stale)})
    vectors = None
    if with_vectors:
        row = {row_id: i for i, row_id in enumerate(existing["ids"])}
        stored = np.asarray(existing["embeddings"], dtype=np.float32)
        vectors = stored[[row[i] for i in ids]]
    return out, vectors


def zip_page(page: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(id, document, metadata) of each row of a ``collection.get`` answer."""
    ids = page["ids"]
    docs = page.get("documents") or [None] * len(ids)
    metas = page.get("metadatas") or [None] * len(ids)
    return zip(ids, docs, metas)
