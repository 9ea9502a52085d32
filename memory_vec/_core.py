"""``MemoryCore``: the public facade. It builds the parts (embedder, store,
summarizer, extractor) and hands each call to a pipeline; no memory rule
and no state of its own live here.

Pipelines: :mod:`~memory_vec._pipelines.write` (validate -> extract -> embed ->
append -> resolve -> write -> fold), :mod:`~memory_vec._pipelines.read`
(candidates -> rank -> neighbours -> assemble), :mod:`~memory_vec._pipelines.management`
(single memories), :mod:`~memory_vec._pipelines.transfer` (export/import, clear,
forget) and :mod:`~memory_vec._pipelines.upkeep` (maintenance, reinforcement). The
stateful parts belong to the :class:`~memory_vec._storage.store.Store`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from memory_vec._model import validate as v
from memory_vec._model.config import MemoryConfig
from memory_vec._model.errors import ConfigError, CrossUserImportError
from memory_vec._model.records import (
    DeleteResult,
    ForgetReceipt,
    MemoryContext,
    MemoryRecord,
    MessageInput,
    MessageLike,
    RecalledMemory,
    RecheckedSupersede,
    WriteResult,
)
from memory_vec._model.trace import TurnTrace, run_in_thread
from memory_vec._pipelines.engine import Engine
from memory_vec._pipelines.management import Management
from memory_vec._pipelines.parts import CoreParts
from memory_vec._pipelines.read import RECALL_KINDS, ReadPath
from memory_vec._pipelines.resolution import FactResolution
from memory_vec._pipelines.transfer import Transfer
from memory_vec._pipelines.upkeep import MaintenanceReport, Upkeep
from memory_vec._pipelines.write import WritePath
from memory_vec._rules.conflict import ConflictResolver, FactExtractor, LLMExtractor, RuleExtractor
from memory_vec._rules.privacy import Redactor, RegexRedactor
from memory_vec._rules.summary import ExtractiveSummarizer, LLMSummarizer, Summarizer
from memory_vec._rules.tokens import TokenCounter, get_token_counter
from memory_vec._storage.store import DeadLetterRetry, Store, build_store, open_store
from memory_vec._storage.writer import RecordWriter
from memory_vec.backends.base import Backend
from memory_vec.embeddings import Embedder, get_embedder
from memory_vec.state import StateStore, WorkingState
from memory_vec.state.base import DeadLetter

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["RECALL_KINDS", "MemoryCore", "MessageInput"]

P = ParamSpec("P")
T = TypeVar("T")


def _warn_part(name: str, *, instead: str | None = None) -> None:
    """0.1's ``MemoryCore.<part>`` properties: they work until 0.3, with this warning."""
    warnings.warn(
        f"MemoryCore.{name} is internal and deprecated since memory-vec 0.2 (removed in 0.3): "
        f"use {instead or f'memory_vec.testing.parts(core).{name}'}",
        DeprecationWarning,
        stacklevel=3,
    )


def _twin(
    method: Callable[Concatenate[MemoryCore, P], T],
) -> Callable[Concatenate[MemoryCore, P], Coroutine[Any, Any, T]]:
    """The async twin of a sync method: its signature (for type checkers and
    ``inspect``), run in a worker thread that keeps the caller's context."""
    name = method.__name__

    @functools.wraps(method)
    async def twin(self: MemoryCore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await run_in_thread(getattr(self, name), *args, **kwargs)

    twin.__name__, twin.__qualname__ = f"a{name}", f"MemoryCore.a{name}"
    return twin


class MemoryCore:
    """Conversation memory: rolling summary, vector recall, token budgets.

    Setup and a minimal turn::

        from memory_vec import MemoryConfig, MemoryCore

        core = MemoryCore(MemoryConfig(user_id="u1", session_id="s1"))
        core.add_message("user", "The budget cap is 5000.")
        ctx = core.build_context("what is the budget?")
        prompt = ctx.render_history() + "\\n" + ctx.render()

    Async use: every public method has an ``a``-prefixed twin
    (``await core.aadd_message(...)``, ``await core.abuild_context(...)``)
    that runs the same logic in a worker thread, never blocking the loop,
    with the same arguments. ``with MemoryCore(...) as core:`` and
    ``async with MemoryCore(...) as core:`` close the core on exit.

    Stores: cores built from equal configs share one
    :class:`~memory_vec._storage.store.Store` per process (one client, one writer, one
    keyword index); their ``write_batch_size`` must agree (else ``ConfigError``).
    A ``backend=`` or ``state_store=`` passed in gets a store of its own,
    owned by this core and closed by :meth:`close`.

    Args:
        config: settings; ``MemoryConfig()`` gives offline defaults.
        embedder: an :class:`~memory_vec.embeddings.Embedder`; default from
            ``config.embedding_model``, shared per process.
        backend: a backend instance; default from ``config.backend``.
        state_store: a working-state store; default from ``config.state``.
        summarizer: a :class:`~memory_vec._rules.summary.Summarizer`; default is
            :class:`LLMSummarizer` when ``llm`` is given, else extractive.
        llm: any ``prompt -> text`` callable for summaries (and extraction).
        token_counter: a :class:`~memory_vec._rules.tokens.TokenCounter`.
        extractor: a :class:`~memory_vec._rules.conflict.FactExtractor`.
        redactor: a :class:`~memory_vec._rules.privacy.Redactor` applied before storage.
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        embedder: Embedder | None = None,
        backend: Backend | None = None,
        state_store: StateStore | None = None,
        summarizer: Summarizer | None = None,
        llm: Callable[[str], str] | None = None,
        token_counter: TokenCounter | None = None,
        extractor: FactExtractor | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = cfg = config or MemoryConfig()
        counter = token_counter or get_token_counter(cfg.tokenizer)
        embedder = embedder or get_embedder(
            cfg.embedding_model, device=cfg.embedding_device, batch_size=cfg.embedding_batch_size
        )
        if extractor is None and cfg.fact_extractor == "rules":
            extractor = RuleExtractor()
        elif extractor is None and cfg.fact_extractor == "llm":
            if llm is None:
                raise ConfigError(
                    "MemoryConfig.fact_extractor: got 'llm' but no llm= was given; pass llm= or use 'rules'"
                )
            extractor = LLMExtractor(llm)
        if cfg.conflict_judge and llm is None:
            raise ConfigError("MemoryConfig.conflict_judge: got True but no llm= was given")
        if summarizer is None:
            summarizer = (
                LLMSummarizer(llm, counter=counter) if llm is not None else ExtractiveSummarizer(counter=counter)
            )
        threshold = cfg.conflict_threshold
        if threshold is None:
            threshold = float(getattr(embedder, "conflict_threshold", 0.8))
        self._owns_store = backend is not None or state_store is not None
        store = build_store(cfg, backend=backend, state=state_store) if self._owns_store else open_store(cfg)
        self._engine = engine = Engine(
            cfg,
            store=store,
            embedder=embedder,
            counter=counter,
            summarizer=summarizer,
            extractor=extractor,
            resolver=ConflictResolver(
                threshold=threshold,
                judge=llm if cfg.conflict_judge else None,
                detector=cfg.conflict_detector,
                judge_timeout=cfg.conflict_judge_timeout,
                judge_budget=cfg.conflict_judge_budget,
            ),
            redactor=redactor or (RegexRedactor() if cfg.redact_pii else None),
        )
        resolution = FactResolution(engine)
        self._writes = WritePath(engine, resolution)
        self._upkeep = Upkeep(engine)
        self._reads = ReadPath(engine, writes=self._writes, upkeep=self._upkeep)
        self._memories = Management(engine, resolution)
        self._transfer = Transfer(engine)
        #: The parts, for the package's own tools (CLI, reembed); tests use memory_vec.testing.parts.
        self._parts = CoreParts(engine)
        self._heal_what_the_earlier_engine_left()

    def _heal_what_the_earlier_engine_left(self) -> None:
        """A store 0.2's first engine left with acknowledged turns unwritten (its
        unflushed file or leases name their sessions): store them now, before any read,
        so recall from another session finds them. Nothing is lost if this fails: the
        turns stay in the working state's log, healed when their session is next used
        or by ``maintain()``."""
        sessions = self._engine.store.take_pending_of_earlier_engine()
        for user_id, session_id in sessions:
            self._writes.heal(self._engine.scope(user_id, session_id))
        if sessions:
            self._engine.store.clear_pending_of_earlier_engine()

    # ------------------------------------------------------------------ parts (deprecated)
    # 0.1 exposed the core's internals; tests and tools now use memory_vec.testing.parts(core).
    # Each property keeps working until 0.3, with a DeprecationWarning naming the replacement.
    @property
    def store(self) -> Store:
        _warn_part("store")
        return self._parts.store

    @property
    def backend(self) -> Backend:
        _warn_part("backend")
        return self._parts.backend

    @property
    def state(self) -> StateStore:
        _warn_part("state")
        return self._parts.state

    @property
    def writer(self) -> RecordWriter:
        _warn_part("writer")
        return self._parts.writer

    @property
    def embedder(self) -> Embedder:
        _warn_part("embedder")
        return self._parts.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        _warn_part("embedder", instead="memory_vec.testing.parts(core).switch_embedder(embedder)")
        self._parts.switch_embedder(embedder)

    @property
    def counter(self) -> TokenCounter:
        _warn_part("counter")
        return self._parts.counter

    @property
    def summarizer(self) -> Summarizer:
        _warn_part("summarizer")
        return self._parts.summarizer

    @summarizer.setter
    def summarizer(self, summarizer: Summarizer) -> None:
        _warn_part("summarizer", instead="MemoryCore(..., summarizer=...)")
        self._engine.summarizer = summarizer

    @property
    def extractor(self) -> FactExtractor | None:
        _warn_part("extractor")
        return self._parts.extractor

    @property
    def resolver(self) -> ConflictResolver:
        _warn_part("resolver")
        return self._parts.resolver

    @property
    def threshold(self) -> float:
        """The minimum final score recall keeps (see ``score_threshold``)."""
        return self._reads.threshold

    @property
    def last_trace(self) -> TurnTrace | None:
        """The last trace of *this thread or asyncio task* on this core."""
        return self._engine.traces.get()

    # ------------------------------------------------------------------ writes
    def add_message(
        self,
        role: str,
        content: str,
        *,
        timestamp: Any = None,
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> WriteResult:
        """Store one message: working buffer, vector store, maybe a fold.

        Args:
            role: ``user``, ``assistant``, ``system`` or ``tool``.
            content: the text (stored as given; never replaced by a summary).
            timestamp: datetime (naive = UTC) or epoch seconds; default now.
            metadata: a JSON-serializable dict, returned unchanged by recall.
            session_id, user_id: override the config's scope for this call.
        """
        return self.add_messages(
            [MessageInput(role, content, timestamp, metadata)], session_id=session_id, user_id=user_id
        )[0]

    def add_messages(
        self, messages: Iterable[MessageLike], *, session_id: str | None = None, user_id: str | None = None
    ) -> list[WriteResult]:
        """Store several messages in order with one embedding call.
        Everything is validated before anything is written."""
        return self._writes.add_messages(messages, self._engine.scope(user_id, session_id))

    # ------------------------------------------------------------------ reads
    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        since: Any = None,
        until: Any = None,
        user_id: str | None = None,
        include_shared: bool | None = None,
    ) -> list[RecalledMemory]:
        """The most relevant memories for ``query``, best first.

        Args:
            query: the text to recall for (usually the new user message).
            k: how many; default ``config.recall_k``.
            scope: ``"user"`` (all of the user's sessions, default) or
                ``"session"`` (only ``session_id`` or the config's session).
            filters: equality conditions on the caller's metadata.
            since, until: time range (datetime or epoch seconds), inclusive.
            include_shared: also recall agent/global shared memories.

        Scores are in [0, 1], higher is better; memories under
        ``score_threshold`` are dropped. Never returns another user's
        private memories.
        """
        at = self._engine.scope(user_id, session_id)
        hits, _ = self._reads.recall(
            query, at, k=k, recall_scope=scope, filters=filters, since=since, until=until, include_shared=include_shared
        )
        return hits

    def build_context(
        self,
        query: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        k: int | None = None,
    ) -> MemoryContext:
        """Summary, recent turns and relevant memories, each within budget;
        ``MemoryContext.trace`` says how it was made. When the backend is
        unreachable the context still comes back, with ``degraded=True``."""
        return self._reads.build_context(query, self._engine.scope(user_id, session_id), k=k)

    def working_state(self, *, session_id: str | None = None, user_id: str | None = None) -> WorkingState:
        """The session's summary and unfolded recent messages."""
        scope = self._engine.scope(user_id, session_id)
        return self._engine.state.load(scope.user_id, scope.session_id)

    def reset_working_state(self, *, session_id: str | None = None, user_id: str | None = None) -> None:
        """Empty the session's summary and recent window; stored records and
        the sequence counter stay (new messages keep increasing seqs)."""
        self._transfer.reset_working_state(self._engine.scope(user_id, session_id))

    def session_history(self, *, session_id: str | None = None, user_id: str | None = None) -> list[MemoryRecord]:
        """Every stored message of the session (superseded ones too), in order,
        including writes not yet flushed."""
        return self._transfer.session_history(self._engine.scope(user_id, session_id))

    # ------------------------------------------------------------------ single memories
    def remember(
        self,
        text: str,
        *,
        importance: float = 1.0,
        metadata: dict[str, Any] | None = None,
        subject: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        visibility: str = "private",
        expire_at: Any = None,
    ) -> WriteResult:
        """Store an explicit memory ("remember that I prefer window seats") as a
        pinned fact; it goes through the conflict check like any fact."""
        return self._memories.remember(
            text,
            self._engine.scope(user_id, session_id),
            importance=importance,
            metadata=metadata,
            subject=subject,
            visibility=visibility,
            expire_at=expire_at,
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """One memory of the caller's user (current or not); MemoryNotFoundError otherwise."""
        return self._memories.own(memory_id, user_id)

    def update(self, memory_id: str, text: str, *, user_id: str | None = None) -> WriteResult:
        """Replace a memory's text: the old version is superseded, kept as
        history. Returns the new memory's id (``WriteResult.id``)."""
        return self._memories.update(memory_id, text, user_id=user_id)

    def delete(self, memory_id: str, *, user_id: str | None = None) -> DeleteResult:
        """Physically delete one memory of the caller's user, with the facts derived
        from it; what it superseded is current again (see :class:`DeleteResult`)."""
        return self._memories.delete(memory_id, user_id=user_id)

    def pin(self, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """Pinned memories are never evicted, archived or decayed away."""
        return self._memories.set_pinned(memory_id, True, user_id=user_id)

    def unpin(self, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        return self._memories.set_pinned(memory_id, False, user_id=user_id)

    def history(self, memory_id: str, *, user_id: str | None = None) -> list[MemoryRecord]:
        """The supersede chain through this memory, oldest first."""
        return self._memories.history(memory_id, user_id=user_id)

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """Undo a supersede: this memory is current again, its successor is not."""
        return self._memories.restore(memory_id, user_id=user_id)

    # ------------------------------------------------------------------ whole users
    def export_memories(self, *, user_id: str | None = None) -> dict[str, Any]:
        """Everything of one user as a JSON-serializable dict (records with their
        history, working state of every session)."""
        return self._transfer.export_memories(self._engine.scope(user_id).user_id)

    def import_memories(
        self,
        data: dict[str, Any],
        *,
        user_id: str | None = None,
        allow_shared: bool = False,
        allow_other_user: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> int:
        """Restore an export into this core's user, all or nothing.

        An export of the same user comes back exactly (ids, texts, times,
        validity, working state). An export of another user becomes a copy
        owned by this core's user: user ids rewritten, ids mapped to new ones
        (importing the same file again replaces the copy); the user named in
        the file is never written to, its summary and recent turns stay.

        Args:
            data: what ``export_memories`` returned (or its JSON, loaded).
            user_id: the user to import into; another than the config's
                ``user_id`` is an operator's path (restoring someone else's
                data) and needs ``allow_other_user=True``.
            allow_shared: also restore shared records (global / agent
                visibility), which reach other users: an operator's restore.
            allow_other_user: allow ``user_id`` to name a user other than the
                core's own; refused by default with :class:`CrossUserImportError`.
            progress: called as ``progress(what, done, total)`` after each batch
                ("embedding", then "storing"), e.g. to draw a progress bar; none by default.

        Returns:
            The number of records written.
        """
        own = self.config.user_id
        user = own if user_id is None else v.check_id(user_id, "user_id")
        if user != own and not allow_other_user:
            raise CrossUserImportError(
                f"import into user {user!r} refused, nothing written: this core belongs to user {own!r}. "
                "Importing into another user is an operator's path: pass allow_other_user=True "
                "(CLI: memory-vec import FILE --user USER)"
            )
        return self._transfer.import_memories(data, user, allow_shared=allow_shared, progress=progress)

    def clear(self, *, session_id: str | None = None, user_id: str | None = None) -> int:
        """Forget this session: its working state and all its stored records.
        Returns the number of stored records deleted."""
        scope = self._engine.scope(user_id, session_id)
        deleted = self._transfer.clear(scope)
        self._writes.forget_healed(scope.user_id, scope.session_id)
        return deleted

    def forget(self, *, user_id: str | None = None, session_id: str | None = None) -> ForgetReceipt:
        """Remove everything of a user (or one session of it), and verify.

        Vectors, facts, summaries, history, working state and dead letters
        go. The receipt counts what was removed and what a follow-up scan
        still found (0)."""
        user = self._engine.scope(user_id).user_id
        session = v.check_optional_id(session_id, "session_id")
        receipt = self._transfer.forget(user, session)
        self._writes.forget_healed(user, session)
        return receipt

    # ------------------------------------------------------------------ upkeep
    def maintain(
        self, *, user_id: str | None = None, now: float | None = None, lifecycle: bool = True, consolidate: bool = True
    ) -> MaintenanceReport:
        """Re-store what a killed process left only in the working state (every
        session of the user), then apply TTLs, caps, forgetting and consolidation."""
        restored = self._writes.heal_user(self._engine.scope(user_id).user_id)
        report = self._upkeep.maintain(user_id=user_id, now=now, lifecycle=lifecycle, consolidate=consolidate)
        report.restored = restored
        return report

    def recheck_superseded(self, *, user_id: str | None = None, apply: bool = False) -> list[RecheckedSupersede]:
        """Superseded memories that today's statement model would keep current (a store
        written by 0.1's rules: events, past, reported or hypothetical values taken for
        updates). A dry run unless ``apply``; with it, they are current again."""
        return self._memories.recheck_superseded(user_id, apply=apply)

    def compact(self, *, user_id: str | None = None) -> dict[str, list[str]]:
        """Merge a user's near-duplicate facts into one each (provenance kept)."""
        return self._upkeep.compact(user_id=user_id)

    def dead_letters(self, *, user_id: str | None = None) -> list[DeadLetter]:
        """Records the backend refused (kept for inspection, retry or drop)."""
        user = None if user_id is None else v.check_id(user_id, "user_id")
        return self._engine.store.dead_letters(user)

    def retry_dead_letters(self, record_ids: Sequence[str] | None = None) -> DeadLetterRetry:
        return self._engine.store.retry_dead_letters(record_ids)

    def drop_dead_letters(self, record_ids: Sequence[str] | None = None) -> int:
        return self._engine.store.drop_dead_letters(record_ids)

    def flush(self) -> None:
        """Run pending background folds and write pending recall counts (every
        record write is durable when its call returns)."""
        self._writes.folds.drain()
        self._engine.flush()

    def close(self) -> None:
        """Flush pending writes. A shared store stays open for other cores; a
        store this core owns (backend=/state_store= given) is closed."""
        self._writes.folds.close()
        self._upkeep.flush_reinforcement()
        if self._owns_store:
            self._engine.writer.close()
        else:
            self._engine.flush()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ async twins
    # Each has its sync method's signature and runs it in a worker thread (see _twin).
    aadd_message = _twin(add_message)

    async def aadd_messages(
        self, messages: Iterable[MessageLike], *, session_id: str | None = None, user_id: str | None = None
    ) -> list[WriteResult]:
        return await run_in_thread(self.add_messages, list(messages), session_id=session_id, user_id=user_id)

    arecall = _twin(recall)
    abuild_context = _twin(build_context)
    aworking_state = _twin(working_state)
    areset_working_state = _twin(reset_working_state)
    asession_history = _twin(session_history)
    aremember = _twin(remember)
    aget = _twin(get)
    aupdate = _twin(update)
    adelete = _twin(delete)
    apin = _twin(pin)
    aunpin = _twin(unpin)
    ahistory = _twin(history)
    arestore = _twin(restore)
    aexport_memories = _twin(export_memories)
    aimport_memories = _twin(import_memories)
    aclear = _twin(clear)
    aforget = _twin(forget)
    amaintain = _twin(maintain)
    acompact = _twin(compact)
    arecheck_superseded = _twin(recheck_superseded)
    adead_letters = _twin(dead_letters)
    aretry_dead_letters = _twin(retry_dead_letters)
    adrop_dead_letters = _twin(drop_dead_letters)
    aflush = _twin(flush)
    aclose = _twin(close)
