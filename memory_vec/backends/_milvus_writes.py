"""The Milvus backend's writes: upsert, update, and what they keep for reads.

A mixin of :class:`~memory_vec.backends.milvus.MilvusBackend` (its state and
helpers are declared below for the type checker), split out to keep the
backend's module small.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_vec._model.errors import EmbeddingModelMismatchError, InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec.backends._milvus_expr import filter_expression
from memory_vec.backends._milvus_rows import chunks, request_batches, to_row

if TYPE_CHECKING:
    from memory_vec.backends._milvus_errors import Translate
    from memory_vec.backends._milvus_scan import RowReader

__all__ = ["MilvusWrites"]


class MilvusWrites:
    collection: str
    is_server: bool
    _mutex: threading.RLock
    _client: Any
    _dimension: int | None
    _model_id: str | None
    _pk_enabled: bool
    _dirty: bool
    _unflushed: int
    _batch: int
    _timeout: float

    if TYPE_CHECKING:

        def drop(self) -> None: ...
        def open(self, *, dimension: int, model_id: str) -> None: ...
        def _ready(self) -> Any: ...
        def _reader(self, client: Any) -> RowReader: ...
        def _read_one(self, client: Any, level: str) -> None: ...
        def _translate(self, action: str) -> Translate: ...

    def reset(self, *, dimension: int, model_id: str) -> None:
        """Delete every record and re-create the collection for another embedder (``reembed``)."""
        with self._mutex:
            self.drop()
            self.open(dimension=dimension, model_id=model_id)

    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        self._upsert(records, vectors, new=False)

    def insert_new(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        # A fresh id has no row in another partition: no read before the write.
        self._upsert(records, vectors, new=True)

    def _upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray, *, new: bool) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(records) != len(vectors):
            raise InvalidInputError(f"upsert got {len(records)} records and {len(vectors)} vectors")
        with self._mutex:
            client = self._ready()
            if len(records) and vectors.shape[1] != self._dimension:
                raise EmbeddingModelMismatchError(
                    f"vector dimension {vectors.shape[1]} does not match the collection's {self._dimension} "
                    f"({self._model_id!r})"
                )
            if not np.all(np.isfinite(vectors)):
                raise InvalidInputError("upsert got a vector with NaN or infinite values")
            # The last occurrence of an id wins, as in a sequence of upserts.
            latest = {r.id: i for i, r in enumerate(records)}
            rows = [to_row(records[i], vectors[i]) for i in latest.values()]
            moved = self._moved_ids(client, rows) if self._pk_enabled and not new else []
            self._dirty = self._dirty or bool(moved)  # a moved row leaves its old copy in the files
            self._write(client, rows, moved)
            if not self.is_server:
                self._unflushed += len(rows)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        """Change stored fields of existing records; the stored vectors are kept."""
        with self._mutex:
            client = self._ready()
            latest = {r.id: r for r in records}
            if not latest:
                return
            stored = {
                row["id"]: (row["vector"], row["owner"])
                for row in self._reader(client).rows_by_ids(
                    list(latest), ["id", "owner", "vector"], action="read records to update"
                )
            }
            rows = [to_row(latest[i], np.asarray(stored[i][0], dtype=np.float32)) for i in latest if i in stored]
            moved = [r["id"] for r in rows if self._pk_enabled and stored[r["id"]][1] != r["owner"]]
            self._dirty = self._dirty or bool(moved)
            self._write(client, rows, moved)

    def _moved_ids(self, client: Any, rows: list[dict[str, Any]]) -> list[str]:
        # A record whose partition-key value changes is deleted first: an upsert
        # only replaces rows inside the partition the new value hashes to.
        owners = {
            row["id"]: row["owner"]
            for row in self._reader(client).rows_by_ids(
                [r["id"] for r in rows], ["id", "owner"], action="read records before upsert"
            )
        }
        return [r["id"] for r in rows if r["id"] in owners and owners[r["id"]] != r["owner"]]

    def _write(self, client: Any, rows: list[dict[str, Any]], moved: list[str]) -> None:
        for doomed in chunks(moved, self._batch):
            with self._translate("move records between partitions"):
                client.delete(self.collection, filter=filter_expression(None, doomed), timeout=self._timeout)
        for chunk in request_batches(rows, self._batch):
            with self._translate(f"upsert {len(chunk)} records"):
                client.upsert(self.collection, chunk, timeout=self._timeout)
