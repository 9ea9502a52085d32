"""The backend protocol: a handful of methods every vector store implements.

A backend stores :class:`~memory_vec.records.MemoryRecord` rows with their
vectors and answers filtered nearest-neighbour queries. It knows nothing of
summaries, ranking or conflicts. Filters are structured
(:class:`RecordFilter`), never strings, so no user id can change a filter
expression; each backend translates them with its engine's safe mechanism.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, runtime_checkable

import numpy as np

from ..records import MemoryRecord

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "Backend", "BackendLimits", "BaseBackend", "MetadataValue", "PurgeReport", "RecordFilter", "ScoredRecord",
    "reads_vectors",
]

MetadataValue = str | int | float | bool
T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class RecordFilter:
    """Which records an operation may touch. Every condition is ANDed.

    Ownership: a record matches when it belongs to ``user_id`` (and
    ``session_id`` when given), or, with ``include_shared``, when it was
    written as shared (visibility ``global``, or ``agent`` with the same
    ``agent_id``; ``agent_id`` selects nothing else). ``user_id=None`` means
    every user (admin operations only).
    """

    user_id: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    include_shared: bool = False
    kinds: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    since: float | None = None
    until: float | None = None
    seq_min: int | None = None
    seq_max: int | None = None
    include_superseded: bool = False
    include_archived: bool = False
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    ids: tuple[str, ...] | None = None

    def matches(self, r: MemoryRecord) -> bool:
        """Reference semantics; every backend must agree with this."""
        if self.ids is not None and r.id not in self.ids:
            return False
        if not self._owner_matches(r):
            return False
        if self.kinds is not None and r.kind not in self.kinds:
            return False
        if self.roles is not None and r.role not in self.roles:
            return False
        if self.since is not None and r.timestamp < self.since:
            return False
        if self.until is not None and r.timestamp > self.until:
            return False
        if self.seq_min is not None and r.seq < self.seq_min:
            return False
        if self.seq_max is not None and r.seq > self.seq_max:
            return False
        if not self.include_superseded and r.valid_to is not None:
            return False
        if not self.include_archived and r.archived:
            return False
        for key, value in self.metadata.items():
            if key not in r.metadata or not _same_value(r.metadata[key], value):
                return False
        return True

    def _owner_matches(self, r: MemoryRecord) -> bool:
        if (self.user_id is None or r.user_id == self.user_id) and (
            self.session_id is None or r.session_id == self.session_id
        ):
            return True
        if not self.include_shared:
            return False
        if r.visibility == "global":
            return True
        return r.visibility == "agent" and self.agent_id is not None and r.agent_id == self.agent_id


def _same_value(stored: Any, wanted: MetadataValue) -> bool:
    # True == 1 in Python; a filter on True must not match the integer 1.
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return type(stored) is type(wanted) and stored == wanted
    return bool(stored == wanted)


@dataclass(frozen=True)
class BackendLimits:
    """Hard limits of an engine, checked before anything is written.

    The write path validates every record against the configured backend's
    limits, so a record the engine would reject never reaches the writer
    queue (where it would block others). ``None`` means no limit of its own.
    """

    #: UTF-8 bytes of a record's text.
    max_text_bytes: int | None = None
    #: UTF-8 bytes of an id (record, user, session, agent) as stored.
    max_id_bytes: int | None = None
    #: UTF-8 bytes of the metadata as JSON (the caller's metadata).
    max_metadata_bytes: int | None = None
    #: Integers anywhere in metadata (engines store 64-bit integers).
    int_min: int = -(2**63)
    int_max: int = 2**63 - 1
    #: Nesting depth of metadata (dicts and lists).
    max_metadata_depth: int = 16


@dataclass(frozen=True)
class ScoredRecord:
    """A query hit: the record and its cosine similarity in [-1, 1]."""

    record: MemoryRecord
    similarity: float


@dataclass(frozen=True)
class PurgeReport:
    """What a backend's ``purge()`` did to its files after deletes.

    Attributes:
        purged: the engine's files this process controls hold no copy of a
            deleted record any more. False where the library cannot reach
            them (a server's disk: see ``notes``) or the engine has no purge.
        residue: copies of deleted records the backend's own check still
            found in its files after the purge (0 when clean; counted only
            where the backend can look).
        notes: what was done, and what remains with how to remove it.
    """

    purged: bool
    residue: int = 0
    notes: tuple[str, ...] = ()


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
    #: A write is a local transaction, cheaper inline than handed to the writer's
    #: thread: ``background_writes=None`` keeps it in the turn.
    local_writes = False

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

    def insert_new(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        """Store records whose ids were never stored (fresh ids of new messages
        and facts). A backend may skip what ``upsert`` does for rows that exist
        (Chroma: read the old metadata; Milvus: look for a row in another
        partition); storing a row twice this way must still leave one row.
        The default is ``upsert``."""
        self.upsert(records, vectors)

    # Optional, for the local replica of a user's scope (memory_vec.replica):
    #   def scan_vectors(self, where: RecordFilter) -> tuple[list[MemoryRecord], np.ndarray]
    # every record matching ``where`` with its stored vector, rows aligned
    # (shape (0, dimension) when none), in any order.
    # Optional, not defined here so that wrappers (guard, replica) pass it through:
    #   def check_usable(self) -> None
    # raise when this process may not use the store at all (an embedded store
    # inherited across a fork); no I/O. The store calls it before a write is
    # validated, so such a write is refused, not queued and lost at the flush.

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


def insert_new_of(backend: object) -> Callable[[Sequence[MemoryRecord], np.ndarray], None]:
    """``backend.insert_new`` when it has one, else its ``upsert`` (a backend
    written against the protocol alone)."""
    method = getattr(backend, "insert_new", None)
    return method if callable(method) else backend.upsert  # type: ignore[attr-defined, no-any-return]


def reads_vectors(backend: object) -> bool:
    """Whether ``backend`` has the optional ``scan_vectors`` (a wrapper says so for its engine)."""
    flag = getattr(backend, "vector_reads", None)
    return flag if isinstance(flag, bool) else callable(getattr(backend, "scan_vectors", None))
