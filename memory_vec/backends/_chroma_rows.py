"""How a :class:`~memory_vec._model.records.MemoryRecord` is laid out as a Chroma row.

The text is the document. Only the fields a ``where`` narrows on are metadata
keys of their own; everything else, the caller's metadata included, is one
JSON string, ``record_json`` (Chroma reads every key of a row as a row of its
own: docs/architecture.md, "A Chroma row keeps only the keys a filter narrows
on"). Nullable narrowing fields are a value plus ``<name>_is_null`` (Chroma
has no null). Rows of the first layout (every field a key) are still read; a
write turns a row into the current layout and drops its old keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memory_vec._model.errors import InvalidInputError
from memory_vec._model.records import MemoryRecord

__all__ = ["RECORD_JSON", "clear_stale_keys", "decode", "encode", "rewritten", "rows_with_vectors", "zip_page"]

RECORD_JSON = "record_json"

# Fields that narrow a where (see ._chroma_filters), kept as scalar keys.
_KEYS = ("role", "user_id", "session_id", "timestamp", "kind", "seq", "visibility", "archived")
# Fields that live in record_json only.
_PACKED = (
    "importance",
    "pinned",
    "recall_count",
    "superseded_by",
    "subject",
    "valid_to",
    "expire_at",
    "last_recalled_at",
    "source_ids",
    "metadata",
)
# The first layout's nullable fields, each a value plus "<name>_is_null".
_LEGACY_PLAIN = (
    "role",
    "user_id",
    "session_id",
    "timestamp",
    "kind",
    "seq",
    "importance",
    "visibility",
    "pinned",
    "archived",
    "recall_count",
)
_LEGACY_NULLABLE = ("agent_id", "superseded_by", "subject", "valid_to", "expire_at", "last_recalled_at")


def encode(record: MemoryRecord) -> dict[str, Any]:
    """The Chroma metadata of ``record`` (its text goes in as the document)."""
    meta: dict[str, Any] = {name: getattr(record, name) for name in _KEYS}
    meta["seq"], meta["timestamp"], meta["archived"] = int(record.seq), float(record.timestamp), bool(record.archived)
    meta["agent_id"], meta["agent_id_is_null"] = record.agent_id or "", record.agent_id is None
    meta["valid_to_is_null"] = record.valid_to is None
    packed = {name: getattr(record, name) for name in _PACKED}
    packed["source_ids"] = list(record.source_ids)
    try:
        meta[RECORD_JSON] = json.dumps(packed, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        try:  # name the culprit; only a refused record pays the second encoding
            json.dumps(record.metadata, allow_nan=False)
        except (TypeError, ValueError):
            raise InvalidInputError(f"metadata of record {record.id!r} is not JSON-serializable: {exc}") from exc
        raise InvalidInputError(f"record {record.id!r} has a field that is not JSON-serializable: {exc}") from exc
    return meta


def decode(row_id: str, document: str | None, meta: dict[str, Any]) -> MemoryRecord:
    """The record stored as (``row_id``, ``document``, ``meta``), in either layout."""
    packed = meta.get(RECORD_JSON)
    if packed is None:
        return _decode_first_layout(row_id, document, meta)
    fields: dict[str, Any] = {name: meta[name] for name in _KEYS}
    fields.update(json.loads(packed))
    return MemoryRecord(
        id=row_id, text=document or "", agent_id=None if meta["agent_id_is_null"] else meta["agent_id"], **fields
    )


def _decode_first_layout(row_id: str, document: str | None, meta: dict[str, Any]) -> MemoryRecord:
    fields: dict[str, Any] = {name: meta[name] for name in _LEGACY_PLAIN}
    for name in _LEGACY_NULLABLE:
        fields[name] = None if meta[f"{name}_is_null"] else meta[name]
    return MemoryRecord(
        id=row_id,
        text=document or "",
        source_ids=json.loads(meta["source_ids"]),
        metadata=json.loads(meta["metadata_json"]),
        **fields,
    )


def clear_stale_keys(
    old: dict[str, dict[str, Any] | None], ids: list[str], metadatas: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``metadatas`` (in ``ids`` order) with the keys only the stored rows ``old`` have set to ``None``.

    Chroma merges metadata on upsert/update and deletes a key given as
    ``None``. Without this, a row of the first layout rewritten in the
    current one would keep its ~20 old keys (read, and paid for, by every get).
    """
    return [{**meta, **dict.fromkeys(set(old.get(row_id) or {}) - set(meta))} for row_id, meta in zip(ids, metadatas)]


def rewritten(old: dict[str, tuple[Any, Any]], ids: list[str], encoded: dict[str, dict[str, Any]]) -> list[Any]:
    """The new metadata of stored rows ``ids`` (``old``: id -> (document, metadata)), stale keys cleared."""
    return clear_stale_keys({i: old[i][1] for i in ids}, ids, [encoded[i] for i in ids])


def zip_page(page: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(id, document, metadata) of each row of a ``collection.get`` answer."""
    ids = page["ids"]
    docs = page.get("documents") or [None] * len(ids)
    metas = page.get("metadatas") or [None] * len(ids)
    return zip(ids, docs, metas)


def rows_with_vectors(
    collection: Any, narrow: dict[str, Any] | None, *, page: int
) -> Iterator[tuple[str, Any, Any, Any]]:
    """(id, document, metadata, vector) of every row matching ``narrow``, ``page`` rows per get."""
    offset = 0
    while True:
        got = collection.get(where=narrow, include=["metadatas", "documents", "embeddings"], limit=page, offset=offset)
        yield from zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])
        if len(got["ids"]) < page:
            return
        offset += page
