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
from memory_vec.backends._milvus_own_writes import OwnWrites
from memory_vec.backends._milvus_rows import chunks, owner_of, request_batches, to_row

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
    _own: OwnWrites | None
    _unflushed: int
    _batch: int
    _timeout: float

    _own_window: float

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
            if self._own is not None:  # this process's recent writes were to the dropped collection
                self._own = OwnWrites(self._own_window)
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
            self._remember([records[i] for i in latest.values()], vectors[list(latest.values())])
            if not self.is_server:
                self._unflushed += len(rows)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        """Change stored fields of existing records; the stored vectors are kept."""
        with self._mutex:
            client = self._ready()
            latest = {r.id: r for r in records}
            if not latest:
                return
            mine = {
                i: (v, _owner(self._own.record_of(i)))
                for i in latest
                if self._own is not None and (v := self._own.vector_of(i)) is not None
            }
            stored = {
                row["id"]: (row["vector"], row["owner"])
                for row in self._reader(client).rows_by_ids(
                    [i for i in latest if i not in mine], ["id", "owner", "vector"], action="read records to update"
                )
            }
            stored.update(mine)  # this process' recent version (the server may not show it yet)
            rows = [to_row(latest[i], np.asarray(stored[i][0], dtype=np.float32)) for i in latest if i in stored]
            moved = [r["id"] for r in rows if self._pk_enabled and stored[r["id"]][1] != r["owner"]]
            self._dirty = self._dirty or bool(moved)
            self._write(client, rows, moved)
            written = [latest[r["id"]] for r in rows]
            if written:
                self._remember(
                    written, np.stack([np.asarray(stored[r.id][0], dtype=np.float32) for r in written]), replaces=True
                )

    def _moved_ids(self, client: Any, rows: list[dict[str, Any]]) -> list[str]:
        # A record whose partition-key value changes is deleted first: an upsert
        # only replaces rows inside the partition the new value hashes to.
        owners = {
            row["id"]: row["owner"]
            for row in self._reader(client).rows_by_ids(
                [r["id"] for r in rows], ["id", "owner"], action="read records before upsert"
            )
        }
        if self._own is not None:
            owners.update({r["id"]: _owner(mine) for r in rows if (mine := self._own.record_of(r["id"])) is not None})
        return [r["id"] for r in rows if r["id"] in owners and owners[r["id"]] != r["owner"]]

    def _remember(self, records: Sequence[MemoryRecord], vectors: np.ndarray, *, replaces: bool = False) -> None:
        """Merge these writes into this process' reads until the server shows them
        (a write too big to remember is waited for once instead)."""
        if self._own is None or not records:
            return
        if self._own.fits(len(records)):
            self._own.wrote(records, vectors, replaces=replaces)
        else:
            self._read_one(self._client, "Session")

    def _write(self, client: Any, rows: list[dict[str, Any]], moved: list[str]) -> None:
        for doomed in chunks(moved, self._batch):
            with self._translate("move records between partitions"):
                client.delete(self.collection, filter=filter_expression(None, doomed), timeout=self._timeout)
        for chunk in request_batches(rows, self._batch):
            with self._translate(f"upsert {len(chunk)} records"):
                client.upsert(self.collection, chunk, timeout=self._timeout)


def _owner(record: MemoryRecord | None) -> str:
    return owner_of(record) if record is not None else ""
