"""What storage is asked and what it answers: record filters, engine limits, hits.

Data types only, below every layer that does I/O: the input checks
(:mod:`memory_vec._model.validate`) use the limits, the rules and the pipelines
build filters, and every backend answers with these types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memory_vec._model.records import MemoryRecord

__all__ = ["BackendLimits", "MetadataValue", "PurgeReport", "RecordFilter", "ScoredRecord"]

MetadataValue = str | int | float | bool


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
        if not self._owner_matches(r) or not self._kind_matches(r) or not self._range_matches(r):
            return False
        if not self.include_superseded and r.valid_to is not None:
            return False
        if not self.include_archived and r.archived:
            return False
        return all(key in r.metadata and _same_value(r.metadata[key], value) for key, value in self.metadata.items())

    def _kind_matches(self, r: MemoryRecord) -> bool:
        return (self.kinds is None or r.kind in self.kinds) and (self.roles is None or r.role in self.roles)

    def _range_matches(self, r: MemoryRecord) -> bool:
        """Within the time and seq bounds that are set."""
        return (
            (self.since is None or r.timestamp >= self.since)
            and (self.until is None or r.timestamp <= self.until)
            and (self.seq_min is None or r.seq >= self.seq_min)
            and (self.seq_max is None or r.seq <= self.seq_max)
        )

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
