"""New messages and facts reach the backend through ``insert_new`` (fresh ids:
no read of old rows before the write, issue #15 target 3); anything that may
already be stored goes through ``upsert`` or ``update``."""

from __future__ import annotations

import numpy as np

from memory_vec import MemoryRecord
from memory_vec._model.errors import BackendUnavailableError
from memory_vec.backends import InMemoryBackend


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


def test_after_a_failed_insert_the_heal_upserts(make_core) -> None:  # type: ignore[no-untyped-def]
    # The failed call may have stored the rows before its reply was lost:
    # they are not known to be fresh any more, so heal stores them by upsert.
    backend = CallLog()
    core = make_core(backend=backend)
    backend.down = True
    lost = core.add_message("user", "the locker code is 4417")
    assert lost.pending and backend.methods() == ["insert_new"]
    backend.down = False
    core.add_message("user", "and the door code is 9921")
    assert ("upsert", [lost.id]) in backend.calls
    assert [r.id for r in backend.get([lost.id])] == [lost.id]
