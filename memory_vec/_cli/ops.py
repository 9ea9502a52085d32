"""Store operations behind the ``memory-vec`` CLI: exit codes, record views,
stats and consolidation. Decisions come from the pure modules
(:func:`memory_vec._rules.lifecycle.plan_consolidation`); this module applies them
through the core's and the backend's public methods.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from memory_vec._model.errors import (
    BackendError,
    DependencyMissingError,
    MemoryNotFoundError,
    SchemaMismatchError,
    StateStoreError,
    StoreLockedError,
)
from memory_vec._model.records import MemoryRecord, to_datetime
from memory_vec.backends import RecordFilter

if TYPE_CHECKING:
    from memory_vec._core import MemoryCore
    from memory_vec._model.config import MemoryConfig

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "compact_store",
    "exit_code",
    "record_dict",
    "store_stats",
]

EXIT_OK = 0
EXIT_NOT_FOUND = 1  # not found / nothing matched
EXIT_BAD_INPUT = 2  # bad input or config
EXIT_UNAVAILABLE = 3  # backend unavailable


def exit_code(exc: BaseException) -> int:
    """The CLI exit code of one of our errors."""
    if isinstance(exc, MemoryNotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(exc, SchemaMismatchError):  # the store was built for another model/schema: a config matter
        return EXIT_BAD_INPUT
    if isinstance(exc, (BackendError, StoreLockedError, StateStoreError, DependencyMissingError)):
        return EXIT_UNAVAILABLE
    return EXIT_BAD_INPUT


def record_dict(r: MemoryRecord) -> dict[str, Any]:
    """A record as JSON-ready data, with its time in ISO 8601 (UTC)."""
    return {**asdict(r), "time": to_datetime(r.timestamp).isoformat()}


def store_stats(core: MemoryCore, config: MemoryConfig, *, user_id: str | None) -> dict[str, Any]:
    """Counts over the whole store, or over one user when ``user_id`` is given."""
    records = core._parts.backend.scan(RecordFilter(user_id=user_id, include_superseded=True, include_archived=True))
    kinds = Counter(r.kind for r in records)
    stats: dict[str, Any] = {
        "backend": config.backend,
        "location": config.url or config.persist_dir,
        "collection": config.collection,
        "embedding_model": core._parts.embedder.model_id,
        "dimension": core._parts.embedder.dimension,
        "user_id": user_id,
        "records": len(records),
        "current": sum(1 for r in records if r.valid_to is None and not r.archived),
        "superseded": sum(1 for r in records if r.valid_to is not None),
        "archived": sum(1 for r in records if r.archived),
        "pinned": sum(1 for r in records if r.pinned),
        "by_kind": {k: kinds.get(k, 0) for k in ("message", "fact", "summary")},
        "users": len({r.user_id for r in records}),
        "sessions": len({(r.user_id, r.session_id) for r in records}),
    }
    if records:
        stats["oldest"] = to_datetime(min(r.timestamp for r in records)).isoformat()
        stats["newest"] = to_datetime(max(r.timestamp for r in records)).isoformat()
    return stats


def compact_store(
    core: MemoryCore,
    *,
    user_id: str | None,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Merge each user's current duplicate facts into one survivor (``MemoryCore.compact``).

    Groups come from :func:`memory_vec._rules.lifecycle.plan_consolidation`; merged
    records are superseded by the survivor, not deleted, so ``show`` lists
    them in the history and ``restore`` can undo a merge. The caller's
    metadata is left untouched; provenance is the survivor's ``source_ids``.
    """
    from memory_vec._rules.lifecycle import plan_consolidation

    if user_id is None:
        users = sorted({r.user_id for r in core._parts.backend.scan(RecordFilter(kinds=("fact",)))})
    else:
        users = [user_id]
    merges_out: list[dict[str, Any]] = []
    for done, user in enumerate(users, start=1):
        records = core._parts.backend.scan(RecordFilter(user_id=user, kinds=("fact",)))
        by_id = {r.id: r for r in records}
        plan = plan_consolidation(records)
        merges_out += [
            {"user_id": user, "survivor": m.survivor, "merged": list(m.merged), "text": by_id[m.survivor].text}
            for m in plan
        ]
        if plan and not dry_run:
            core.compact(user_id=user)
        if progress is not None:
            progress("users", done, len(users))
    return {
        "users": len(users),
        "merged": sum(len(m["merged"]) for m in merges_out),
        "merges": merges_out,
        "dry_run": dry_run,
    }
