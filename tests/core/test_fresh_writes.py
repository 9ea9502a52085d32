"""New messages and facts reach the backend through ``insert_new`` (fresh ids:
no read of old rows before the write, issue #15 target 3); anything that may
already be stored goes through ``upsert`` or ``update``."""

from __future__ import annotations

import numpy as np
import pytest

from memory_vec import MemoryRecord
from memory_vec._model.errors import BackendUnavailableError
from memory_vec._storage.writer import RecordWriter, WriterSettings
from memory_vec.backends import InMemoryBackend, RecordFilter


class CallLog(InMemoryBackend):
    """The in-process backend, noting which write method got which ids."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[str]]] = []
        self.down = False

    def insert_new(self, records, vectors) -> None:  # type: ignore[no-untyped-def]
        self.calls.append(("insert_new", [r.id for r in records]))
        if self.down:
            raise BackendUnavailableError("down")
        InMemoryBackend.upsert(self, records, vectors)  # not self.upsert: count one call

    def upsert(self, records, vectors) -> None:  # type: ignore[no-untyped-def]
        self.calls.append(("upsert", [r.id for r in records]))
        super().upsert(records, vectors)

    def update(self, records) -> None:  # type: ignore[no-untyped-def]
        self.calls.append(("update", [r.id for r in records]))
        super().update(records)

    def methods(self) -> list[str]:
        return [name for name, _ in self.calls]


def _record(i: int, **fields) -> MemoryRecord:  # type: ignore[no-untyped-def]
    fields.setdefault("text", f"note {i}")
    return MemoryRecord(id=f"r{i}", role="user", user_id="u1", session_id="s1", timestamp=1_700_000_000.0 + i, **fields)


def _vectors(n: int) -> np.ndarray:
    return np.eye(n, 8, dtype=np.float32) + 0.1


def test_a_turn_is_one_insert_of_fresh_rows_and_a_supersede_an_update(make_core) -> None:  # type: ignore[no-untyped-def]
    backend = CallLog()
    core = make_core(backend=backend)
    first = core.add_messages([("user", "The budget is 5000 dollars."), ("assistant", "Noted.")])
    assert backend.methods() == ["insert_new"]
    assert set(backend.calls[0][1]) == {r.id for r in first} | set(first[0].fact_ids)
    backend.calls.clear()
    second = core.add_messages([("user", "Actually the budget is now 8000 dollars."), ("assistant", "Updated.")])
    assert second[0].superseded_ids
    # The old fact and message are existing rows: an update, first (a crash after it leaves
    # the new message unstored, and heal re-derives it whole); then the new rows in one insert.
    assert backend.methods() == ["update", "insert_new"]
    assert set(backend.calls[0][1]) == set(second[0].superseded_ids)
    assert "8000" in " ".join(r.text for r in core.recall("what is the budget", k=3))


def test_an_import_may_meet_stored_ids_so_it_upserts(make_core) -> None:  # type: ignore[no-untyped-def]
    backend = CallLog()
    core = make_core(backend=backend)
    core.add_message("user", "I live in Lisbon.")
    exported = core.export_memories()
    backend.calls.clear()
    assert core.import_memories(exported) >= 1
    assert backend.methods() == ["upsert"]


def test_a_fresh_record_patched_before_its_flush_is_inserted_patched() -> None:
    backend = CallLog()
    backend.open(dimension=8, model_id="m")
    writer = RecordWriter(backend, WriterSettings(background=True, flush_interval=60))
    try:
        writer.write([_record(1), _record(2)], _vectors(2), new=True, deferred=True)
        writer.update([_record(1, archived=True)], deferred=True)  # e.g. superseded within the same turn
        writer.flush()
        assert backend.methods() == ["insert_new"]
        [stored] = backend.get(["r1"], where=RecordFilter(include_archived=True))
        assert stored.archived
    finally:
        writer.close()


def test_after_a_failed_insert_the_retry_upserts() -> None:
    # The failed call may have stored the rows before its reply was lost:
    # they are not known to be fresh any more.
    backend = CallLog()
    backend.open(dimension=8, model_id="m")
    writer = RecordWriter(backend)
    backend.down = True
    assert writer.write([_record(1)], _vectors(1), new=True) is False
    backend.down = False
    writer.flush()
    assert backend.methods() == ["insert_new", "upsert"]
    assert [r.id for r in backend.get(["r1"])] == ["r1"]


@pytest.mark.parametrize("new", [True, False])
def test_a_later_write_of_the_same_id_decides_how_it_is_stored(new: bool) -> None:
    backend = CallLog()
    backend.open(dimension=8, model_id="m")
    writer = RecordWriter(backend, WriterSettings(background=True, flush_interval=60))
    try:
        writer.write([_record(1)], _vectors(1), new=not new, deferred=True)
        writer.write([_record(1, text="note 1, again")], _vectors(1), new=new, deferred=True)
        writer.flush()
        assert backend.methods() == ["insert_new" if new else "upsert"]
        assert [r.text for r in backend.get(["r1"])] == ["note 1, again"]
    finally:
        writer.close()
