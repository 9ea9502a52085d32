"""Whole-user and whole-session operations: export / import, clear, forget,
session history. Import validates everything before it writes anything."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from typing import Any

from memory_vec._model import validate as v
from memory_vec._model.errors import InvalidInputError, MemoryVecError, StateStoreError
from memory_vec._model.records import ForgetReceipt, MemoryRecord
from memory_vec._model.scope import Scope
from memory_vec._pipelines.engine import Engine
from memory_vec._pipelines.reembed_journal import ReembedJournal
from memory_vec.backends.base import RecordFilter
from memory_vec.state import StateMessage, WorkingState

__all__ = ["EXPORT_FORMAT", "Transfer"]

EXPORT_FORMAT = "memory-vec/1"
# Rows per backend call on import: a round trip costs about the same for 64
# rows as for 1,000 (Chroma, Milvus), so bulk writes use big ones.
BULK_BATCH = 1000
_RECORD_FIELDS = {f.name for f in fields(MemoryRecord)}
_STATE_FIELDS = {f.name for f in fields(WorkingState)} - {"user_id", "session_id"}
_MESSAGE_FIELDS = {f.name for f in fields(StateMessage)}
# What a long operation tells a watcher (a progress bar): the phase, records done, records in all.
Progress = Callable[[str, int, int], None]
# The namespace of the ids an import into another user gives its copy (any fixed uuid).
_COPY_IDS = uuid.UUID("6f0c1a52-5d1e-4a8e-9a43-44a1c0b1e0a4")


class Transfer:
    def __init__(self, engine: Engine) -> None:
        self.e = engine

    # ------------------------------------------------------------- export / import
    def export_memories(self, user_id: str) -> dict[str, Any]:
        e = self.e
        where = RecordFilter(user_id=user_id, include_superseded=True, include_archived=True)
        records = e.backend.scan(where)
        sessions = {s: e.state.load(user_id, s) for s in e.state.sessions(user_id)}
        return {
            "format": EXPORT_FORMAT,
            "user_id": user_id,
            "embedding_model": e.embedder.model_id,
            "records": [asdict(r) for r in records],
            "sessions": {s: _state_to_dict(st) for s, st in sessions.items()},
        }

    def import_memories(
        self, data: Any, user: str, *, allow_shared: bool = False, progress: Progress | None = None
    ) -> int:
        """Import into ``user``, all or nothing: every record and session is checked
        (format, the validation hook, ownership of existing ids) before anything is
        written. An export of another user becomes ``user``'s copy (see ``_rehomed``):
        the file's user is never written to. A shared record (visibility ``global``
        or ``agent``) reaches other users: only with ``allow_shared`` (an operator's
        restore), never from a user's file. ``progress(what, done, total)`` is told
        after each batch embedded and each batch stored."""
        e = self.e
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise InvalidInputError(f"not a memory-vec export (expected format {EXPORT_FORMAT!r})")
        data = _rehomed(data, v.check_id(data.get("user_id"), "user_id"), user)
        raw_records, raw_sessions = data.get("records"), data.get("sessions")
        if not isinstance(raw_records, list) or not isinstance(raw_sessions, dict):
            raise InvalidInputError("malformed memory-vec export: 'records' must be a list, 'sessions' a dict")
        records = self._checked_records(raw_records, user, allow_shared=allow_shared)
        self._check_ownership(records, user)
        try:
            states = [
                _state_from_dict(
                    user,
                    s,
                    d,
                    max_content_bytes=e.config.max_content_bytes,
                    max_metadata_bytes=e.config.max_metadata_bytes,
                )
                for s, d in raw_sessions.items()
            ]
        except (MemoryVecError, KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"import refused, nothing written: malformed session: {exc}") from exc
        # An older export into a session that went on: its seqs go on past every stored message.
        for state in states:
            seqs = [r.seq for r in records if r.kind == "message" and r.session_id == state.session_id]
            floor = max(e.next_stored_seq(Scope(user, state.session_id)), max(seqs, default=0) + 1)
            state.next_seq = max(state.next_seq, floor)
        if records:
            vectors = _embedded(e, records, progress)  # every vector before the first write: all or nothing
            _stored(e, records, vectors, progress)
        for state in states:
            e.state.replace(state)
        return len(records)

    def _checked_records(self, raw_records: list[Any], user: str, *, allow_shared: bool) -> list[MemoryRecord]:
        """Every record of the export, each checked (format, owner, visibility, size, the
        validation hook); one bad record refuses them all, naming up to ten."""
        e = self.e
        records, bad = [], {}
        for i, item in enumerate(raw_records):
            rid = item.get("id") if isinstance(item, dict) else None
            label = rid if isinstance(rid, str) else f"#{i}"
            try:
                record = _record_from_dict(item)
                if record.user_id != user:
                    raise InvalidInputError(f"belongs to {record.user_id!r}, not {user!r}")
                if record.visibility != "private" and not allow_shared:
                    raise InvalidInputError(
                        f"visibility {record.visibility!r} reaches other users; an operator's "
                        "restore passes allow_shared=True (CLI: --allow-shared)"
                    )
                if (
                    isinstance(record.text, str)
                    and len(record.text.encode("utf-8", "surrogatepass")) > e.config.max_content_bytes
                ):
                    raise InvalidInputError(f"text over max_content_bytes ({e.config.max_content_bytes})")
                e.store.validate([record])
                records.append(record)
            except (MemoryVecError, TypeError, ValueError) as exc:
                bad[label] = str(exc)
        if bad:
            shown = "; ".join(f"{k}: {why}" for k, why in list(bad.items())[:10])
            raise InvalidInputError(f"import refused, nothing written: {len(bad)} bad record(s): {shown}")
        return records

    def _check_ownership(self, records: Sequence[MemoryRecord], user: str) -> None:
        """No imported id, and no id an imported record links to, is another user's."""
        e = self.e
        ids = [r.id for r in records]
        if len(set(ids)) != len(ids):
            raise InvalidInputError("import refused, nothing written: duplicate record ids in the export")
        taken = [r.id for r in e.writer.get(ids) if r.user_id != user]
        if taken:
            raise InvalidInputError(
                f"import refused, nothing written: record id(s) {taken[:10]} belong to another user"
            )
        # A record's links (its sources, its successor) are followed by restore() and history():
        # they may name the user's own records, in the store or in this import, never another's.
        own = set(ids)
        linked = sorted({i for r in records for i in (*r.source_ids, r.superseded_by) if i and i not in own})
        foreign = [r.id for r in e.writer.get(linked) if r.user_id != user] if linked else []
        if foreign:
            raise InvalidInputError(
                f"import refused, nothing written: records link to id(s) {foreign[:10]} of another user"
            )

    # ------------------------------------------------------------- sessions
    def session_history(self, scope: Scope) -> list[MemoryRecord]:
        e = self.e
        where = RecordFilter(
            user_id=scope.user_id,
            session_id=scope.session_id,
            kinds=("message",),
            include_superseded=True,
            include_archived=True,
        )
        return sorted(e.writer.scan(where), key=lambda r: (r.seq, r.timestamp))

    def reset_working_state(self, scope: Scope) -> None:
        state = self.e.state.load(scope.user_id, scope.session_id)
        self.e.state.replace(
            WorkingState(scope.user_id, scope.session_id, next_seq=state.next_seq, folded_through=state.next_seq - 1)
        )

    def clear(self, scope: Scope) -> int:
        return self._remove(scope.user_id, scope.session_id)[0]

    def _remove(self, user_id: str, session_id: str | None) -> tuple[int, list[str], int]:
        """Delete the stored records, working state and dead letters of a user (or of one
        session of it): (records deleted, the sessions cleared, how many of them existed)."""
        e = self.e
        where = RecordFilter(user_id=user_id, session_id=session_id, include_superseded=True, include_archived=True)
        deleted = e.writer.delete(user_id, where=where)
        ReembedJournal(e.config).drop(user_id, session_id)  # a reembed to finish must not restore them
        sessions = [session_id] if session_id is not None else e.state.sessions(user_id)
        cleared = sum(e.state.clear(user_id, s) for s in sessions)
        # A refused record must not come back by a retry of the dead letters.
        letters = [
            d.record_id for d in e.store.dead_letters(user_id) if session_id is None or d.session_id == session_id
        ]
        e.store.drop_dead_letters(letters)
        return deleted, sessions, cleared

    def forget(self, user_id: str, session_id: str | None) -> ForgetReceipt:
        e = self.e
        deleted, sessions, cleared = self._remove(user_id, session_id)
        if session_id is None:
            e.state.forget_user(user_id)  # no row or key of the state names the user any more
        notes: list[str] = []
        # The vectors of the user's texts go from the caches too, the shared tier's included.
        try:
            e.forget_cached_vectors(user_id)
        except StateStoreError as exc:  # they expire within VECTOR_TTL_S; the receipt says so
            notes.append(f"cached vectors not dropped from the shared tier (they expire within minutes): {exc}")
        # The backend's check of its files counts too: deleted records still found there remain.
        report = e.store.purge()
        remaining = report.residue
        remaining += e.backend.count(
            RecordFilter(user_id=user_id, session_id=session_id, include_superseded=True, include_archived=True)
        )
        remaining += sum(1 for s in sessions if e.state.load(user_id, s).messages)
        return ForgetReceipt(
            user_id,
            session_id,
            deleted,
            cleared,
            remaining,
            disk_purged=report.purged,
            disk_notes=(*report.notes, *notes),
        )


def _embedded(e: Engine, records: list[MemoryRecord], progress: Progress | None) -> Any:
    """The records' stored vectors, in batches when someone watches (each batch sees every record
    as a neighbour, so the vectors are those of one call)."""
    if progress is None:
        return e.record_vectors(records)
    import numpy as np

    parts = []
    for i in range(0, len(records), BULK_BATCH):
        parts.append(e.record_vectors(records[i : i + BULK_BATCH], known=records))
        progress("embedding", min(i + BULK_BATCH, len(records)), len(records))
    return np.concatenate(parts)


def _stored(e: Engine, records: list[MemoryRecord], vectors: Any, progress: Progress | None) -> None:
    for i in range(0, len(records), BULK_BATCH):
        e.writer.write(records[i : i + BULK_BATCH], vectors[i : i + BULK_BATCH], batch_size=BULK_BATCH)
        if progress is not None:
            progress("storing", min(i + BULK_BATCH, len(records)), len(records))


def _rehomed(data: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    """The export of ``source`` as ``target``'s: the user id of its records and
    sessions rewritten, and every id of the file mapped to a new one derived from
    (target, old id), so a copy on the store that still holds ``source``'s records
    takes none of theirs, links (sources, successor, the working state's messages)
    stay within the copy, and importing the same file again replaces the copy.
    Whatever is malformed is left as it is, for the checks that follow to refuse."""
    if source == target:
        return data
    records = data.get("records")
    if not isinstance(records, list):
        return {**data, "user_id": target}
    own = {
        r["id"] for r in records if isinstance(r, dict) and r.get("user_id") == source and isinstance(r.get("id"), str)
    }

    def moved(i: Any) -> Any:
        return _copy_id(target, i) if isinstance(i, str) and i in own else i

    copied: list[Any] = []
    for r in records:
        if not isinstance(r, dict) or r.get("user_id") != source:
            copied.append(r)  # another user's record: refused below, as it would be unchanged
            continue
        links = r.get("source_ids")
        copied.append(
            {
                **r,
                "user_id": target,
                "id": moved(r.get("id")),
                "superseded_by": moved(r.get("superseded_by")),
                **({"source_ids": [moved(i) for i in links]} if isinstance(links, list) else {}),
            }
        )
    sessions = data.get("sessions")
    if isinstance(sessions, dict):
        sessions = {name: _rehomed_session(d, target) for name, d in sessions.items()}
    return {**data, "user_id": target, "records": copied, "sessions": sessions}


def _rehomed_session(d: Any, target: str) -> Any:
    messages = d.get("messages") if isinstance(d, dict) else None
    if not isinstance(messages, list):
        return d
    rehomed = [
        {**m, "id": _copy_id(target, m["id"])} if isinstance(m, dict) and isinstance(m.get("id"), str) else m
        for m in messages
    ]
    return {**d, "messages": rehomed}


def _copy_id(target: str, old: str) -> str:
    return uuid.uuid5(_COPY_IDS, f"{target}\x00{old}").hex


def _record_from_dict(d: Any) -> MemoryRecord:
    if not isinstance(d, dict):
        raise InvalidInputError(f"a record must be an object, got {type(d).__name__}")
    unknown = set(d) - _RECORD_FIELDS
    if unknown:
        raise InvalidInputError(f"unknown record fields {sorted(unknown)}")
    return MemoryRecord(**d)


def _state_to_dict(state: WorkingState) -> dict[str, Any]:
    return {k: val for k, val in asdict(state).items() if k not in ("user_id", "session_id")}


def _state_from_dict(
    user: str, session: str, d: Any, *, max_content_bytes: int, max_metadata_bytes: int
) -> WorkingState:
    """One exported session, checked as ``add_messages`` checks a message: a
    state that would fail every later read of the session is refused here."""
    Scope(user, session)
    if not isinstance(d, dict) or set(d) - _STATE_FIELDS:
        raise InvalidInputError(f"session {session!r} must be an object with keys from {sorted(_STATE_FIELDS)}")
    raw = d.get("messages", [])
    if not isinstance(raw, list):
        raise InvalidInputError(f"session {session!r}: 'messages' must be a list")
    messages: list[StateMessage] = []
    for m in raw:
        if not isinstance(m, dict) or set(m) - _MESSAGE_FIELDS:
            raise InvalidInputError(
                f"session {session!r}: a message must be an object with keys from {sorted(_MESSAGE_FIELDS)}"
            )
        seq = _count(m.get("seq"), f"session {session!r}: message seq", low=1)
        if messages and seq <= messages[-1].seq:
            raise InvalidInputError(
                f"session {session!r}: message seqs must increase (got {seq} after {messages[-1].seq})"
            )
        timestamp = v.check_timestamp(m.get("timestamp"))
        if timestamp is None:
            raise InvalidInputError(f"session {session!r}: message {seq} has no timestamp")
        messages.append(
            StateMessage(
                seq,
                v.check_id(m.get("id"), "message id"),
                v.check_role(m.get("role")),
                v.check_content(m.get("content"), max_bytes=max_content_bytes),
                timestamp,
                _count(m.get("tokens", 0), "message tokens"),
                v.check_metadata({} if m.get("metadata") is None else m["metadata"], max_bytes=max_metadata_bytes),
            )
        )
    summary = d.get("summary", "")
    if not isinstance(summary, str) or v.has_lone_surrogate(summary):  # (an LLM's summary is kept as it came)
        raise InvalidInputError(f"session {session!r}: 'summary' must be text (valid Unicode)")
    last = messages[-1].seq if messages else 0
    next_seq = _count(d.get("next_seq", last + 1), f"session {session!r}: next_seq", low=last + 1)
    folded = _count(d.get("folded_through", 0), f"session {session!r}: folded_through")
    if folded >= next_seq:
        raise InvalidInputError(f"session {session!r}: folded_through {folded} is not below next_seq {next_seq}")
    updated_at = v.check_timestamp(d.get("updated_at", 0.0)) or 0.0
    return WorkingState(
        user,
        session,
        summary,
        _count(d.get("summary_tokens", 0), "summary_tokens"),
        messages,
        next_seq,
        folded,
        updated_at,
    )


def _count(value: Any, name: str, *, low: int = 0) -> int:
    # Bounded like a record's seq: a state store refuses more (after the records were written).
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= v.INT_MAX:
        raise InvalidInputError(f"{name} must be an integer from {low} to {v.INT_MAX}, got {value!r}")
    return value
