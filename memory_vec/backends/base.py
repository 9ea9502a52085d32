"""The backend protocol: a handful of methods every vector store implements.

A backend stores :class:`~memory_vec._model.records.MemoryRecord` rows with their
vectors and answers filtered nearest-neighbour queries. It knows nothing of
summaries, ranking or conflicts. Filters are structured
(:class:`RecordFilter`), never strings, so no user id can change a filter
expression; each backend translates them with its engine's safe mechanism.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar, runtime_checkable

import numpy as np

from memory_vec._model.errors import BackendError, EmbeddingModelMismatchError, InvalidInputError
from memory_vec._model.queries import BackendLimits, MetadataValue, PurgeReport, RecordFilter, ScoredRecord
from memory_vec._model.records import MemoryRecord

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "Backend",
    "BackendLimits",
    "BaseBackend",
    "MetadataValue",
    "PurgeReport",
    "RecordFilter",
    "ScoredRecord",
    "as_base_backend",
]

T = TypeVar("T")
P = ParamSpec("P")

#: Every record: superseded and archived ones too (a read by id, a whole-store scan).
EVERY_RECORD = RecordFilter(include_superseded=True, include_archived=True)


def checked_vectors(records: Sequence[MemoryRecord], vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as float32 rows, one per record, or :class:`InvalidInputError`."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(records) != len(vectors):
        raise InvalidInputError(f"upsert got {len(records)} records and vectors of shape {vectors.shape}")
    return vectors


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero), so a dot product is the cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def check_dimension(got: int, expected: int | None, model_id: str | None) -> None:
    if got != expected:
        raise EmbeddingModelMismatchError(
            f"vector dimension {got} does not match the collection's {expected} (model {model_id!r})"
        )


def not_opened_for_writes(kind: str, collection: str) -> EmbeddingModelMismatchError:
    return EmbeddingModelMismatchError(
        f"{kind} collection {collection!r} was not opened with a matching embedder; "
        "call reembed() or open it with the model it was built with"
    )


def oldest_first(records: list[MemoryRecord], limit: int | None) -> list[MemoryRecord]:
    """What ``scan`` returns: ``records`` oldest first, at most ``limit``."""
    records.sort(key=lambda r: (r.timestamp, r.seq, r.id))
    return records if limit is None else records[:limit]


def stacked(rows: Sequence[np.ndarray], dimension: int | None) -> np.ndarray:
    """``rows`` as one float32 matrix; shape ``(0, dimension)`` when there are none."""
    return np.stack(rows).astype(np.float32, copy=False) if rows else np.zeros((0, dimension or 0), np.float32)


@runtime_checkable
class Backend(Protocol):
    name: str

    def open(self, *, dimension: int, model_id: str) -> None: ...
    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None: ...
    def update(self, records: Sequence[MemoryRecord]) -> None: ...
    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]: ...
    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]: ...
    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]: ...
    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int: ...
    def count(self, where: RecordFilter | None = None) -> int: ...
    def close(self) -> None: ...


class BaseBackend:
    """Async twins and helpers shared by every backend.

    Subclasses implement the sync methods of :class:`Backend`. The async
    twins run them in a worker thread that keeps the caller's context; a
    backend with a native async client overrides them.
    """

    name = "base"
    #: Hard limits of the engine (see :class:`BackendLimits`).
    limits: BackendLimits = BackendLimits()
    #: What the conformance suite may expect of this engine.
    supports_multiprocess = False
    persistent = False

    # --- the sync protocol: what a subclass implements (see :class:`Backend`) ---------------
    def open(self, *, dimension: int, model_id: str) -> None:
        """Create the store for this embedder, or check the existing one."""
        raise NotImplementedError

    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        """Insert or replace records (and their vectors) by id."""
        raise NotImplementedError

    def update(self, records: Sequence[MemoryRecord]) -> None:
        """Change stored fields (not vectors) of existing records."""
        raise NotImplementedError

    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        """The ``k`` records matching ``where`` nearest to ``vector``, best first."""
        raise NotImplementedError

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        """The records among ``ids`` (that match ``where``), in ``ids`` order."""
        raise NotImplementedError

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        """Every record matching ``where``, oldest first."""
        raise NotImplementedError

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        """Delete the records among ``ids`` and/or matching ``where``; how many were deleted."""
        raise NotImplementedError

    def count(self, where: RecordFilter | None = None) -> int:
        """How many records match ``where`` (all records when None)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the client; the data stays."""
        raise NotImplementedError

    # --- optional -----------------------------------------------------------------------------
    def purge(self) -> PurgeReport:
        """After deletes (``forget``): remove what the engine still keeps of deleted
        records in its files (logs, free pages, old data files).

        The default does nothing and says so; a backend whose engine keeps
        deleted data on disk overrides it.
        """
        note = f"{self.name}: this backend has no purge; deleted records may remain in the engine's files"
        return PurgeReport(False, 0, (note,))

    def claim_working_state(self, identity: str, *, replace: bool = False) -> str:
        """Record in the engine which working state the store's processes use, if
        none is recorded yet (or ``replace``), and return the one recorded. A
        store other processes can write (a server) records it with the
        collection, so a process with another, private working state (another
        host's SQLite file) is refused at open instead of serving what another
        host superseded or forgot. The default records nothing (one process
        owns an embedded store): every identity is its own."""
        return identity

    def insert_new(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        """Store records whose ids were never stored (fresh ids of new messages
        and facts). A backend may skip what ``upsert`` does for rows that exist
        (Chroma: read the old metadata; Milvus: look for a row in another
        partition); storing a row twice this way must still leave one row.
        The default is ``upsert``."""
        self.upsert(records, vectors)

    #: Whether ``scan_vectors`` reads stored vectors back (``reembed``'s tools, the conformance suite).
    vector_reads = False

    def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]:
        """Every record matching ``where`` with its stored vector, rows aligned
        (shape (0, dimension) when none), in any order. Optional: a backend
        that implements it sets ``vector_reads = True``."""
        raise BackendError(f"the {self.name} backend cannot read stored vectors back (no scan_vectors)")

    def check_usable(self) -> None:
        """Raise when this process may not use the store at all (an embedded store
        inherited across a fork); no I/O. The store calls it before a write is
        validated, so such a write is refused before anything is written."""

    #: Whether ``reset`` re-creates the store (``reembed`` checks before it embeds anything).
    resettable = False

    def reset(self, *, dimension: int, model_id: str) -> None:
        """Drop every record and re-create the store for another model (``reembed``).
        Optional: a backend that implements it sets ``resettable = True``."""
        raise BackendError(
            f"the {self.name} backend has no reset(dimension=, model_id=), which reembed needs to "
            "re-create the collection for the new model"
        )

    # --- async twins -------------------------------------------------------------------------
    async def _in_thread(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        ctx = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(ctx.run, fn, *args, **kwargs))

    async def aupsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        await self._in_thread(self.upsert, records, vectors)

    async def aquery(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        return await self._in_thread(self.query, vector, k=k, where=where)

    async def aget(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        return await self._in_thread(self.get, ids, where=where)

    async def ascan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        return await self._in_thread(self.scan, where, limit=limit)

    async def adelete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        return await self._in_thread(self.delete, ids=ids, where=where)

    async def acount(self, where: RecordFilter | None = None) -> int:
        return await self._in_thread(self.count, where)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def as_base_backend(backend: Backend) -> BaseBackend:
    """``backend`` with every optional capability declared: itself when it derives
    from :class:`BaseBackend`, else wrapped so that the defaults apply (a backend
    written against the :class:`Backend` protocol alone)."""
    return backend if isinstance(backend, BaseBackend) else _ProtocolBackend(backend)


class _ProtocolBackend(BaseBackend):
    """A :class:`Backend` that is not a :class:`BaseBackend`, with the defaults of one."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name

    def open(self, *, dimension: int, model_id: str) -> None:
        self.inner.open(dimension=dimension, model_id=model_id)

    def upsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        self.inner.upsert(records, vectors)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        self.inner.update(records)

    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]:
        return self.inner.query(vector, k=k, where=where)

    def get(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]:
        return self.inner.get(ids, where=where)

    def scan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]:
        return self.inner.scan(where, limit=limit)

    def delete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int:
        return self.inner.delete(ids=ids, where=where)

    def count(self, where: RecordFilter | None = None) -> int:
        return self.inner.count(where)

    def close(self) -> None:
        self.inner.close()
