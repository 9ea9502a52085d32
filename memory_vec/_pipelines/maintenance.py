"""Maintenance operations on a stored collection.

``backfill_dates`` gives messages stored before dates were resolved (or
under ``resolve_dates=False``) their ``event_date`` metadata.

``reembed`` rebuilds every vector of a collection from the stored texts with
a new embedder (a model upgrade) or with the same one under another
stored-vector policy (``contextual_method`` / ``contextual_chars`` /
``contextual_weight``, e.g. a store made with the earlier default, the
``"text"`` method, moving to ``"pair"``). Afterwards the collection records
the new model id, policy and dimension, so the embedding-model guard accepts
the new embedder and policy (and refuses the old ones).
"""

from __future__ import annotations

import contextlib
import zoneinfo
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from memory_vec._model.errors import BackendError, EmbeddingModelMismatchError, InvalidInputError
from memory_vec._model.records import MemoryRecord, in_zone
from memory_vec._pipelines.embed_text import EmbedTextPolicy
from memory_vec._pipelines.reembed_journal import ReembedJournal
from memory_vec.backends.base import EVERY_RECORD, RecordFilter

if TYPE_CHECKING:
    from memory_vec._model.config import MemoryConfig
    from memory_vec._pipelines.parts import CoreParts
    from memory_vec.embeddings.base import Embedder

__all__ = ["BackfillResult", "ReembedResult", "backfill_dates", "reembed"]


class LiveCore(Protocol):
    """What these operations use of a :class:`~memory_vec.MemoryCore`."""

    @property
    def config(self) -> MemoryConfig: ...
    @property
    def _parts(self) -> CoreParts: ...
    def flush(self) -> None: ...


@dataclass(frozen=True)
class ReembedResult:
    """What ``reembed`` did."""

    records: int
    model_id: str
    dimension: int
    policy: str = ""  # the stored-vector policy's tag ("" for plain or text-contextual vectors)


def reembed(
    core_or_config: LiveCore | MemoryConfig,
    new_embedder: Embedder,
    *,
    batch_size: int = 256,
    progress: bool = False,
) -> ReembedResult:
    """Re-embed every stored record (messages, facts, summaries, history) with
    ``new_embedder``, under the config's stored-vector policy.

    Also the migration after a policy change with the same model: pass the
    embedder the store already uses (``memory-vec reembed --model <its id>``).

    All new vectors are computed before anything is deleted, so a failing
    embedder leaves the collection untouched. The rewrite itself (reset,
    then batched upserts) is not atomic, so the records and their new
    vectors are written to a journal under ``persist_dir`` first: if the
    rewrite fails part-way, running ``reembed`` again (same model) finishes
    it from the journal, whatever the collection still holds. Stop writers
    first: readers see a partly rewritten collection meanwhile.

    Example:
        >>> from memory_vec._pipelines.maintenance import reembed                 # doctest: +SKIP
        >>> reembed(MemoryConfig(backend="chroma"), get_embedder("all-MiniLM-L6-v2"))

    Args:
        core_or_config: a live :class:`~memory_vec.MemoryCore` (its embedder
            is switched to ``new_embedder`` afterwards) or a config naming
            the store.
        new_embedder: the embedder whose vectors the collection will hold.
        batch_size: texts per embedding call and records per write.
        progress: show tqdm progress bars (off by default; the CLI turns them on at a terminal).

    Raises:
        InvalidInputError: ``batch_size`` < 1, or a config for the in-process backend.
        BackendError: the backend cannot be reset (``BaseBackend.reset``).
    """
    if batch_size < 1:
        raise InvalidInputError(f"reembed: batch_size must be >= 1, got {batch_size}")
    from memory_vec._model.config import MemoryConfig

    core = None if isinstance(core_or_config, MemoryConfig) else core_or_config
    if core is None:
        config = core_or_config
        assert isinstance(config, MemoryConfig)
        if config.backend == "memory":
            raise InvalidInputError(
                "reembed: an in-process store lives only inside its MemoryCore; pass the MemoryCore instead"
            )
        from memory_vec._storage.store import open_store

        store = open_store(config)
    else:
        core.flush()  # background writes must be stored before we read everything back
        store = core._parts.store
        config = core.config
    backend = store.backend
    if not backend.resettable:  # checked before anything is embedded
        raise BackendError(
            f"reembed: the {backend.name!r} backend has no reset(dimension=, model_id=), which reembed "
            "needs to re-create the collection for the new model"
        )
    policy = EmbedTextPolicy.from_config(config)
    dimension, model_id = int(new_embedder.dimension), new_embedder.model_id
    space = policy.space_id(model_id)
    # A mismatch is expected: the store holds the old model's vectors; reads still work.
    with contextlib.suppress(EmbeddingModelMismatchError):
        backend.open(dimension=dimension, model_id=space)

    def embedded(found: list[MemoryRecord]) -> np.ndarray:  # the policy of every other write path
        plan = policy.plan_records(found)
        return plan.vectors(_embed_all(new_embedder, plan.texts, batch_size, progress))

    journal = ReembedJournal(config)
    resumed = journal.load(space)
    if resumed is not None:  # a rewrite that failed part-way: finish it, the collection may be half empty
        records, vectors = resumed
        known = {r.id for r in records}
        written_since = [r for r in backend.scan(EVERY_RECORD) if r.id not in known]  # writers were not stopped
        if written_since:
            records, vectors = [*records, *written_since], np.concatenate([vectors, embedded(written_since)])
    else:
        records = backend.scan(EVERY_RECORD)
        vectors = embedded(records)
        journal.save(space, records, vectors)
    backend.reset(dimension=dimension, model_id=space)
    for start in _progress(range(0, len(records), batch_size), progress, "storing", len(records), batch_size):
        backend.upsert(records[start : start + batch_size], vectors[start : start + batch_size])
    journal.done()
    if core is not None:
        core._parts.switch_embedder(new_embedder)  # also drops vectors of the old model cached by the core
    return ReembedResult(records=len(records), model_id=model_id, dimension=dimension, policy=policy.tag)


@dataclass(frozen=True)
class BackfillResult:
    """What ``backfill_dates`` did (or, with ``dry_run``, would do)."""

    checked: int  # messages looked at
    dated: int  # given an event_date
    dry_run: bool = False


def backfill_dates(
    core: LiveCore,
    *,
    user_id: str | None = None,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> BackfillResult:
    """Resolve the dates stored messages refer to ("yesterday", "上周五")
    against their own timestamps, as the write path does for new ones
    (``MemoryConfig.resolve_dates``), and store them as ``event_date``
    metadata. Vectors and texts are unchanged; a message that already has an
    ``event_date`` (resolved, or the caller's own) is left alone, so running
    it twice changes nothing.

    Args:
        core: the store's core (its time zone counts the days).
        user_id: one user's messages, or every user's (None).
        dry_run: count only; write nothing.
        progress: called as ``progress(what, done, total)`` every 256 messages
            ("checking", then "storing"), e.g. to draw a progress bar; none by default.
    """
    from memory_vec._rules.dates import event_span

    zone = zoneinfo.ZoneInfo(core.config.timezone)
    core.flush()
    where = RecordFilter(user_id=user_id, kinds=("message",), include_superseded=True, include_archived=True)
    records = [r for r in core._parts.backend.scan(where) if user_id is None or r.user_id == user_id]
    changed = []
    for done, record in enumerate(records, start=1):
        if progress is not None and (done % 256 == 0 or done == len(records)):
            progress("checking", done, len(records))
        if "event_date" in record.metadata:
            continue
        span = event_span(record.text, in_zone(record.timestamp, zone))
        if span is not None:
            changed.append(record.copy(metadata={**record.metadata, "event_date": span.iso()}))
    if changed and not dry_run:
        for start in range(0, len(changed), 256):
            # Merged into each row as it is stored now, not into the scanned copy: a
            # supersede or update made since the scan would be written over otherwise.
            dates = {r.id: r.metadata["event_date"] for r in changed[start : start + 256]}
            current = [
                r.copy(metadata={**r.metadata, "event_date": dates[r.id]})
                for r in core._parts.writer.get(list(dates))
                if "event_date" not in r.metadata
            ]
            if current:
                core._parts.writer.update(current)
            if progress is not None:
                progress("storing", min(start + 256, len(changed)), len(changed))
        core.flush()
    return BackfillResult(checked=len(records), dated=len(changed), dry_run=dry_run)


def _embed_all(embedder: Embedder, texts: Sequence[str], batch_size: int, progress: bool) -> np.ndarray:
    parts = [
        np.asarray(embedder.embed_documents(list(texts[start : start + batch_size])), dtype=np.float32)
        for start in _progress(range(0, len(texts), batch_size), progress, "embedding", len(texts), batch_size)
    ]
    if not parts:
        return np.zeros((0, int(embedder.dimension)), dtype=np.float32)
    return np.concatenate(parts)


def _progress(steps: range, enabled: bool, what: str, total: int, batch_size: int) -> Iterator[int]:
    if not enabled:
        yield from steps
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=f"reembed: {what}", unit="rec") as bar:
        for start in steps:
            yield start
            bar.update(min(batch_size, total - start))
