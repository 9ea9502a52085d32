"""``MemoryCore``: orchestration of one turn. No memory rules live here;
they are in ``summary``, ``recall``, ``context`` and ``conflict``, which take
data and return decisions. This module wires them to the embedder, the
working-state store and the backend, and holds the write path; the read path
(recall, context) is the :class:`~memory_vec.recalling.MemoryRecall` mixin
and fact/memory management the :mod:`memory_vec.manage` mixins.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _validate as v
from .backends import RecordFilter, shared_backend
from .backends.base import Backend
from .config import MemoryConfig
from .embeddings import Embedder, get_embedder
from .errors import BackendError, ConfigError, InvalidInputError, SummaryRejectedError
from .facts import analyze
from .records import ForgetReceipt, MemoryContext, MemoryRecord, RecalledMemory, WriteEvent, WriteResult
from .recall.bm25 import IndexedDoc, registry as _text_indexes
from .state import NewMessage, StateStore, WorkingState, shared_state_store
from .summary import ExtractiveSummarizer, LLMSummarizer, Summarizer, plan_fold
from .tokens import TokenCounter, get_token_counter
from .trace import SummarizerCall, TurnTrace
from .manage import MemoryLifecycle, MemoryManagement
from .recalling import RECALL_KINDS, MemoryRecall
from .privacy import Redactor, RegexRedactor
from .writer import RecordWriter
from .conflict import ConflictResolver, FactExtractor, LLMExtractor, RuleExtractor

__all__ = ["MemoryCore", "MessageInput", "RECALL_KINDS"]

log = logging.getLogger("memory_vec")

@dataclass(frozen=True)
class MessageInput:
    """One message for :meth:`MemoryCore.add_messages`."""

    role: str
    content: str
    timestamp: Any = None
    metadata: Mapping[str, Any] | None = None


class _VectorCache:
    """Vectors of texts seen in the last turns, so one text embeds once."""

    def __init__(self, size: int = 64) -> None:
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vec = self._data.get(text)
            if vec is not None:
                self._data.move_to_end(text)
            return vec

    def put(self, text: str, vector: np.ndarray) -> None:
        with self._lock:
            self._data[text] = vector
            self._data.move_to_end(text)
            while len(self._data) > self._size:
                self._data.popitem(last=False)


_writers: dict[int, tuple[Backend, RecordWriter]] = {}
_writers_lock = threading.Lock()


def _shared_writer(backend: Backend, config: MemoryConfig) -> RecordWriter:
    with _writers_lock:
        held = _writers.get(id(backend))
        if held is None or held[0] is not backend:
            writer = RecordWriter(
                backend,
                background=config.background_writes,
                batch_size=config.write_batch_size,
                flush_interval=config.flush_interval,
            )
            held = _writers[id(backend)] = (backend, writer)
        return held[1]


class MemoryCore(MemoryRecall, MemoryManagement, MemoryLifecycle):
    """Conversation memory: rolling summary, vector recall, token budgets.

    Setup and a minimal turn::

        from memory_vec import MemoryConfig, MemoryCore

        core = MemoryCore(MemoryConfig(user_id="u1", session_id="s1"))
        core.add_message("user", "The budget cap is 5000.")
        ctx = core.build_context("what is the budget?")
        prompt = ctx.render_history() + "\\n" + ctx.render()

    Async use: every public method has an ``a``-prefixed twin
    (``await core.aadd_message(...)``, ``await core.abuild_context(...)``)
    that runs the same logic without blocking the event loop.

    Args:
        config: settings; ``MemoryConfig()`` gives offline defaults.
        embedder: an :class:`~memory_vec.embeddings.Embedder`; default from
            ``config.embedding_model``, shared per process.
        backend: a backend instance; default from ``config.backend``.
        state_store: a working-state store; default from ``config.state``.
        summarizer: a :class:`~memory_vec.summary.Summarizer`; default is
            :class:`LLMSummarizer` when ``llm`` is given, else extractive.
        llm: any ``prompt -> text`` callable for summaries (and extraction).
        token_counter: a :class:`~memory_vec.tokens.TokenCounter`.
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
        self.config = config or MemoryConfig()
        cfg = self.config
        self.counter: TokenCounter = token_counter or get_token_counter(cfg.tokenizer)
        self.embedder: Embedder = embedder or get_embedder(
            cfg.embedding_model, device=cfg.embedding_device, batch_size=cfg.embedding_batch_size
        )
        self.backend: Backend = backend or shared_backend(cfg)
        self.state: StateStore = state_store or shared_state_store(cfg)
        if summarizer is None:
            summarizer = (
                LLMSummarizer(llm, counter=self.counter) if llm is not None
                else ExtractiveSummarizer(counter=self.counter)
            )
        self.summarizer: Summarizer = summarizer
        self.redactor: Redactor | None = redactor or (RegexRedactor() if cfg.redact_pii else None)
        self.extractor: FactExtractor | None = extractor
        if extractor is None and cfg.fact_extractor == "rules":
            self.extractor = RuleExtractor()
        elif extractor is None and cfg.fact_extractor == "llm":
            if llm is None:
                raise ConfigError("MemoryConfig.fact_extractor: got 'llm' but no llm= was given; pass llm= or use 'rules'")
            self.extractor = LLMExtractor(llm)
        if cfg.conflict_judge and llm is None:
            raise ConfigError("MemoryConfig.conflict_judge: got True but no llm= was given")
        conflict_threshold = cfg.conflict_threshold
        if conflict_threshold is None:
            conflict_threshold = float(getattr(self.embedder, "conflict_threshold", 0.8))
        self.resolver = ConflictResolver(threshold=conflict_threshold, judge=llm if cfg.conflict_judge else None)
        self.backend.open(dimension=self.embedder.dimension, model_id=self.embedder.model_id)
        self.writer = _shared_writer(self.backend, cfg)
        self._cache = _VectorCache()
        self._query_cache = _VectorCache()
        self.last_trace: TurnTrace | None = None
        self._healed: set[tuple[str, str]] = set()
        self._reinforce: dict[str, tuple[int, float]] = {}
        self._reinforce_lock = threading.Lock()
        self._fold_locks: dict[tuple[str, str], threading.Lock] = {}
        self._fold_locks_guard = threading.Lock()

    # ------------------------------------------------------------------ helpers
    def _scope(self, user_id: str | None, session_id: str | None) -> tuple[str, str]:
        user = self.config.user_id if user_id is None else v.check_id(user_id, "user_id")
        session = self.config.session_id if session_id is None else v.check_id(session_id, "session_id")
        return user, session

    def _start(self, operation: str, user: str, session: str) -> TurnTrace:
        trace = TurnTrace(operation, user, session)
        self.last_trace = trace
        return trace

    def _embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        vectors: list[np.ndarray | None] = [self._cache.get(t) for t in texts]
        missing = [i for i, vec in enumerate(vectors) if vec is None]
        if missing:
            fresh = self.embedder.embed_documents([texts[i] for i in missing])
            for i, vec in zip(missing, fresh):
                vectors[i] = vec
                self._cache.put(texts[i], vec)
        return np.stack([vec for vec in vectors if vec is not None])

    def _embed_query(self, text: str) -> np.ndarray:
        if self.embedder.symmetric:
            cached = self._cache.get(text)
            if cached is None:
                cached = self.embedder.embed_documents([text])[0]
                self._cache.put(text, cached)
            return cached
        cached = self._query_cache.get(text)
        if cached is None:
            cached = self.embedder.embed_query(text)
            self._query_cache.put(text, cached)
        return cached

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
        results = self.add_messages(
            [MessageInput(role, content, timestamp, metadata)], session_id=session_id, user_id=user_id
        )
        return results[0]

    def add_messages(
        self,
        messages: Iterable[MessageInput | Mapping[str, Any] | tuple[str, str]],
        *,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> list[WriteResult]:
        """Store several messages in order with one embedding call.

        Everything is validated before anything is written.
        """
        user, session = self._scope(user_id, session_id)
        items = [self._coerce(m) for m in messages]
        if not items:
            return []
        now = time.time()
        checked = []
        for item in items:
            role = v.check_role(item.role)
            content = self._redact(v.check_content(item.content, max_bytes=self.config.max_content_bytes))
            ts = v.check_timestamp(item.timestamp)
            meta = v.check_metadata(item.metadata, max_bytes=self.config.max_metadata_bytes)
            checked.append((role, content, now if ts is None else ts, meta))

        trace = self._start("add_messages", user, session)
        if (user, session) not in self._healed:
            self._heal_session(self.state.load(user, session))
        extracted = [self._extract_facts(role, content, trace) for role, content, _, _ in checked]
        fact_texts = [
            f.text for facts in extracted for f in facts
            if not (f.transient and self.config.skip_transient) and self.extractor is not None
        ]
        t0 = time.perf_counter()
        # One embedding call per turn: messages and their facts together.
        contents = [c for _, c, _, _ in checked]
        recent = self.state.load(user, session).messages if self.config.contextual_embedding else []
        stored_texts = self._stored_texts(recent[-1].content if recent else None, contents)
        # Plain vectors where they differ and are needed: a user message is the
        # likely next recall query (cached), and without an extractor messages
        # are compared with each other for conflicts.
        plain_needed = [i for i, (role, c, _, _) in enumerate(checked)
                        if stored_texts[i] != c and (role == "user" or self.extractor is None)]
        all_vectors = self._embed_documents(stored_texts + [contents[i] for i in plain_needed] + fact_texts)
        n, n_plain = len(checked), len(plain_needed)
        vectors, fact_vectors = all_vectors[:n], all_vectors[n + n_plain:]
        plain_vectors = vectors.copy()
        plain_vectors[plain_needed] = all_vectors[n : n + n_plain]
        trace.timings["embed"] = time.perf_counter() - t0
        ids = [uuid.uuid4().hex for _ in checked]
        seqs = self.state.append(
            user,
            session,
            [
                NewMessage(rid, role, content, ts, self.counter.count(content), meta)
                for rid, (role, content, ts, meta) in zip(ids, checked)
            ],
        )
        records = [
            self._message_record(user, session, rid, seq, role, content, ts, meta)
            for rid, seq, (role, content, ts, meta) in zip(ids, seqs, checked)
        ]
        t0 = time.perf_counter()
        facts = self._resolve_facts(user, session, records, plain_vectors, extracted, fact_vectors, trace)
        trace.timings["conflict"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        to_write = records + facts.fact_records
        write_vectors = np.concatenate([vectors, np.asarray(facts.fact_vectors, dtype=np.float32)]) \
            if facts.fact_records else vectors
        durable = self.writer.write(to_write, write_vectors)
        if facts.updates:
            durable = self.writer.update(facts.updates) and durable
        self._after_write(user, to_write)
        trace.timings["write"] = time.perf_counter() - t0
        if not durable and not self.writer.background:
            trace.degraded = True
            trace.event(f"backend write failed; {self.writer.pending_count} records pending retry")
        summarized = self._maybe_fold(user, session, trace)
        trace.emit()
        return [
            WriteResult(
                facts.events.get(r.id, WriteEvent.ADDED), r.id, seq=r.seq,
                fact_ids=facts.fact_ids.get(r.id, []), superseded_ids=facts.superseded.get(r.id, []),
                duplicate_of=facts.duplicate_of.get(r.id), summarized=summarized, pending=not durable,
                reason=facts.reasons.get(r.id, ""),
            )
            for r in records
        ]

    def _after_write(self, user: str, records: Sequence[MemoryRecord]) -> None:
        """Keep the per-user keyword index in step with new records."""
        _text_indexes.feed(id(self.backend), user, [IndexedDoc.from_record(r) for r in records])

    def _after_delete(self, user: str) -> None:
        _text_indexes.invalidate(id(self.backend), user)

    @staticmethod
    def _coerce(m: MessageInput | Mapping[str, Any] | tuple[str, str]) -> MessageInput:
        if isinstance(m, MessageInput):
            return m
        if isinstance(m, tuple) and len(m) == 2:
            return MessageInput(m[0], m[1])
        if isinstance(m, Mapping):
            unknown = set(m) - {"role", "content", "timestamp", "metadata"}
            if unknown or "role" not in m or "content" not in m:
                raise InvalidInputError(
                    f"a message needs 'role' and 'content' (optional 'timestamp', 'metadata'); got keys {sorted(m)}"
                )
            return MessageInput(m["role"], m["content"], m.get("timestamp"), m.get("metadata"))
        raise InvalidInputError(f"a message must be a MessageInput, dict or (role, content); got {type(m).__name__}")

    def _message_record(
        self, user: str, session: str, record_id: str, seq: int, role: str, content: str, ts: float,
        metadata: dict[str, Any],
    ) -> MemoryRecord:
        return MemoryRecord(
            id=record_id, text=content, role=role, user_id=user, session_id=session, timestamp=ts,
            kind="message", seq=seq, agent_id=self.config.agent_id,
            importance=self._importance(role, content), metadata=metadata,
        )

    @staticmethod
    def _importance(role: str, content: str) -> float:
        value = analyze(content).value
        return round(min(1.0, value + (0.1 if role == "user" else 0.0)), 3)

    def _heal_session(self, state: WorkingState) -> None:
        """Once per session and process: re-store messages the working state
        holds but the backend lacks.

        The working state is appended before the vector write, so a process
        killed between the two (before the write was acknowledged) leaves a
        message in the state only. The state then serves as the write-ahead
        log: the message is embedded and stored again, so state and store agree.
        """
        key = (state.user_id, state.session_id)
        if key in self._healed:
            return
        self._healed.add(key)
        if not state.messages:
            return
        try:
            ids = [m.id for m in state.messages]
            present = {r.id for r in self.backend.get(ids)}
            present |= {r.id for r in self.writer.pending_records(RecordFilter(ids=tuple(ids)))}
            lost = [m for m in state.messages if m.id not in present]
            if not lost:
                return
            position = {m.id: i for i, m in enumerate(state.messages)}
            texts = [
                self._stored_texts(state.messages[position[m.id] - 1].content if position[m.id] else None,
                                   [m.content])[0]
                for m in lost
            ]
            vectors = self._embed_documents(texts)  # the same vectors a normal write stores
            records = [
                self._message_record(state.user_id, state.session_id, m.id, m.seq, m.role, m.content, m.timestamp,
                                     dict(m.metadata))
                for m in lost
            ]
            self.writer.write(records, vectors)
            self._after_write(state.user_id, records)
            log.warning("memory-vec: re-stored %d message(s) of %s/%s found only in the working state",
                        len(lost), state.user_id, state.session_id)
        except BackendError as exc:
            self._healed.discard(key)  # try again when the backend is back
            log.warning("memory-vec: could not check the session against the store: %s", exc)

    def _stored_texts(self, previous: str | None, contents: Sequence[str]) -> list[str]:
        """What each message's stored vector embeds: with ``contextual_embedding``
        also the message before it in the session (its last 500 characters);
        the record's text is unchanged."""
        if not self.config.contextual_embedding:
            return list(contents)
        out = []
        for content in contents:
            out.append(content if previous is None else f"{previous[-500:]}\n{content}")
            previous = content
        return out

    def _redact(self, text: str) -> str:
        """PII goes before anything is embedded or stored (``redact_pii``)."""
        return text if self.redactor is None else self.redactor.redact(text)

    def _fold_lock(self, user: str, session: str) -> threading.Lock:
        with self._fold_locks_guard:
            return self._fold_locks.setdefault((user, session), threading.Lock())

    def _maybe_fold(self, user: str, session: str, trace: TurnTrace) -> bool:
        """Fold the oldest chunk into the summary when over the trigger.

        The summarizer runs outside any store lock; the commit is a
        compare-and-set, so a concurrent fold of the same chunk is dropped
        instead of folded twice.
        """
        lock = self._fold_lock(user, session)
        if not lock.acquire(blocking=False):
            return False  # another thread of this process is folding
        try:
            cfg = self.config
            state = self.state.load(user, session)
            plan = plan_fold(
                state.messages,
                summary_tokens=state.summary_tokens,
                folded_through=state.folded_through,
                max_token_limit=cfg.max_token_limit,
                trigger_ratio=cfg.summary_trigger_ratio,
                target_ratio=cfg.fold_target_ratio,
                keep_recent=cfg.keep_recent_turns,
            )
            if plan is None:
                return False
            t0 = time.perf_counter()
            name = getattr(self.summarizer, "name", type(self.summarizer).__name__)
            try:
                summary = self.summarizer.summarize(state.summary, plan.messages, max_tokens=cfg.summary_max_tokens)
                if self.counter.count(summary) > cfg.summary_max_tokens:
                    raise SummaryRejectedError("summary over its token budget")
            except Exception as exc:  # any summarizer failure keeps the old summary
                trace.summarizer_calls.append(
                    SummarizerCall(name, len(plan.messages), time.perf_counter() - t0, False, str(exc))
                )
                trace.event(f"fold refused, previous summary kept, retried next turn: {exc}")
                log.warning("memory-vec: summary fold refused for %s/%s: %s", user, session, exc)
                return False
            trace.summarizer_calls.append(SummarizerCall(name, len(plan.messages), time.perf_counter() - t0, True))
            committed = self.state.commit_fold(
                user,
                session,
                expected_folded_through=plan.expected_folded_through,
                folded_through=plan.folded_through,
                summary=summary,
                summary_tokens=self.counter.count(summary),
            )
            if not committed:
                trace.event("fold skipped: another writer folded this session first")
            return committed
        finally:
            lock.release()

    # ------------------------------------------------------------------ working state
    def working_state(self, *, session_id: str | None = None, user_id: str | None = None) -> WorkingState:
        """The session's summary and unfolded recent messages."""
        user, session = self._scope(user_id, session_id)
        return self.state.load(user, session)

    def reset_working_state(self, *, session_id: str | None = None, user_id: str | None = None) -> None:
        """Empty the session's summary and recent window; stored records and
        the sequence counter stay (new messages keep increasing seqs)."""
        user, session = self._scope(user_id, session_id)
        state = self.state.load(user, session)
        self.state.replace(WorkingState(user, session, next_seq=state.next_seq, folded_through=state.next_seq - 1))

    def session_history(self, *, session_id: str | None = None, user_id: str | None = None) -> list[MemoryRecord]:
        """Every stored message of the session (superseded ones too), in order,
        including writes not yet flushed."""
        user, session = self._scope(user_id, session_id)
        where = RecordFilter(user_id=user, session_id=session, kinds=("message",), include_superseded=True,
                             include_archived=True)
        records = {r.id: r for r in self.backend.scan(where)}
        records.update({r.id: r for r in self.writer.pending_records(where)})
        return sorted(records.values(), key=lambda r: (r.seq, r.timestamp))

    async def aworking_state(self, **kwargs: Any) -> WorkingState:
        return await asyncio.to_thread(self.working_state, **kwargs)

    async def asession_history(self, **kwargs: Any) -> list[MemoryRecord]:
        return await asyncio.to_thread(self.session_history, **kwargs)

    # ------------------------------------------------------------------ removal
    def clear(self, *, session_id: str | None = None, user_id: str | None = None) -> int:
        """Forget this session: its working state and all its stored records.

        Returns the number of stored records deleted. Other sessions of the
        user keep their memories.
        """
        user, session = self._scope(user_id, session_id)
        where = RecordFilter(user_id=user, session_id=session, include_superseded=True, include_archived=True)
        self.writer.forget_where(where)
        deleted = self.backend.delete(where=where)
        _text_indexes.invalidate(id(self.backend), user)
        self.state.clear(user, session)
        return deleted

    def forget(self, *, user_id: str | None = None, session_id: str | None = None) -> ForgetReceipt:
        """Remove everything of a user (or one session of it), and verify.

        Vectors, facts, summaries, history and working state go. The receipt
        counts what was removed and what a follow-up scan still found (0).
        """
        user = self.config.user_id if user_id is None else v.check_id(user_id, "user_id")
        session = None if session_id is None else v.check_id(session_id, "session_id")
        where = RecordFilter(user_id=user, session_id=session, include_superseded=True, include_archived=True)
        self.writer.forget_where(where)
        deleted = self.backend.delete(where=where)
        _text_indexes.invalidate(id(self.backend), user)
        sessions = [session] if session is not None else self.state.sessions(user)
        cleared = sum(self.state.clear(user, s) for s in sessions)
        remaining = self.backend.count(where) + len(self.writer.pending_records(where))
        remaining += sum(1 for s in sessions if self.state.load(user, s).messages)
        return ForgetReceipt(user, session, deleted, cleared, remaining)

    # ------------------------------------------------------------------ lifecycle
    def flush(self) -> None:
        """Write every pending record; when it returns they are durable."""
        self.writer.flush()

    def close(self) -> None:
        """Flush pending writes. Shared clients stay open for other cores."""
        self._flush_reinforcement()
        self.writer.flush()

    def __enter__(self) -> MemoryCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ async twins
    async def aadd_message(self, role: str, content: str, **kwargs: Any) -> WriteResult:
        return await asyncio.to_thread(self.add_message, role, content, **kwargs)

    async def aadd_messages(self, messages: Iterable[Any], **kwargs: Any) -> list[WriteResult]:
        return await asyncio.to_thread(self.add_messages, list(messages), **kwargs)

    async def arecall(self, query: str, **kwargs: Any) -> list[RecalledMemory]:
        return await asyncio.to_thread(self.recall, query, **kwargs)

    async def abuild_context(self, query: str | None = None, **kwargs: Any) -> MemoryContext:
        return await asyncio.to_thread(self.build_context, query, **kwargs)

    async def aclear(self, **kwargs: Any) -> int:
        return await asyncio.to_thread(self.clear, **kwargs)

    async def aforget(self, **kwargs: Any) -> ForgetReceipt:
        return await asyncio.to_thread(self.forget, **kwargs)

    async def aflush(self) -> None:
        await asyncio.to_thread(self.flush)
