"""How the SQLite backend stores a record and its vector: JSON text and float32 bytes.

A private module of :mod:`memory_vec.backends.sqlite`, split out to keep
the backend's module small.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import numpy as np

from memory_vec._model.errors import InvalidInputError
from memory_vec._model.records import MemoryRecord

__all__ = ["decode", "encode", "stack_vectors"]


def encode(record: MemoryRecord) -> str:
    """``record`` as JSON text; :class:`InvalidInputError` if it cannot be."""
    try:
        payload = json.dumps(dataclasses.asdict(record), ensure_ascii=False, allow_nan=False)
        payload.encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidInputError(f"record {record.id!r} cannot be stored as JSON: {exc}") from exc
    return payload


def decode(payload: str) -> MemoryRecord:
    return MemoryRecord(**json.loads(payload))


def stack_vectors(blobs: Sequence[bytes], dimension: int | None) -> np.ndarray:
    """Stored vectors (float32 bytes) as one writable ``(len(blobs), dimension)`` float32 array.

    ``dimension`` None (no collection open) takes the blobs' own length, 0 when there are none.
    """
    if dimension is None:
        dimension = len(blobs[0]) // 4 if blobs else 0
    if not blobs:
        return np.empty((0, dimension), dtype=np.float32)
    data = bytearray().join(blobs)  # one copy, and a writable buffer
    return np.frombuffer(data, dtype=np.float32).reshape(len(blobs), dimension)
