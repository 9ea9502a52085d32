"""A row the background writer stores *while* a read runs is read right
(memory_vec/_storage/pending_reads.py): neither lost (a new row: not in the backend's
answer, no longer queued) nor served in its old version (a supersede: the
backend answered before the write, the queue dropped it after).

Seen for real: the Milvus server with writes off the turn served a
superseded budget next to the new one in 1 run of 2 of
tests/reliability/test_conflict_backends.py. Here the writer's flush runs
inside the backend call, after the backend has its answer, so the
interleaving happens every time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from memory_vec import MemoryRecord
from memory_vec._model.errors import BackendUnavailableError
from memory_vec._storage.writer import RecordWriter, WriterSettings
from memory_vec.backends import InMemoryBackend, RecordFilter

CURRENT = RecordFilter(user_id="u1")  # superseded rows excluded


class StoresDuringReads(InMemoryBackend):
    """The reference backend; ``during`` runs inside a read, after its answer is taken."""

    during: Callable[[], None] | None = None
    asking: str | None = None  # run ``during`` only in a read that names this id

    def _then(self, answer: Any, ids: Any = None) -> Any:
        if self.asking is not None and self.asking not in (ids or ()):
            return answer
        during, self.during = self.during, None
        if during is not None:
            during()
        return answer

    def query(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> Any:
        return self._then(super().query(vector, k=k, where=where), where.ids)

    def get(self, ids: Any, *, where: RecordFilter | None = None) -> Any:
        return self._then(super().get(ids, where=where), ids)

    def scan(self, where: RecordFilter) -> Any:
        return self._then(super().scan(where), where.ids)


def _record(i: int, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{i}",
        text=f"the budget is {i}000",
        role="user",
        user_id="u1",
        session_id="s1",
        timestamp=1_700_000_000.0 + i,
        **fields,
    )


def _r1_stored(backend: InMemoryBackend) -> RecordWriter:
    """A background writer over ``backend`` that has stored r1."""
    backend.open(dimension=4, model_id="m")
    writer = RecordWriter(backend, WriterSettings(background=True, flush_interval=60))
    writer.write([_record(1)], np.ones((1, 4), dtype=np.float32))
    writer.flush()
    return writer


def _supersede_r1(writer: RecordWriter) -> None:
    """Queue (not store) r1 superseded by r2, and r2."""
    writer.update([_record(1, valid_to=1_700_000_002.0, superseded_by="r2")], deferred=True)
    writer.write([_record(2)], np.ones((1, 4), dtype=np.float32), new=True, deferred=True)


@pytest.fixture
def queued() -> Iterator[tuple[StoresDuringReads, RecordWriter]]:
    """r1 stored; then, queued (not stored): r1 superseded by r2, and r2."""
    backend = StoresDuringReads()
    writer = _r1_stored(backend)
    _supersede_r1(writer)
    assert writer.pending_count == 2
    backend.during = writer.flush
    yield backend, writer
    writer.close()


def test_a_query_while_the_writer_stores_serves_the_new_value_only(
    queued: tuple[StoresDuringReads, RecordWriter],
) -> None:
    backend, writer = queued
    hits = writer.query(np.ones(4, dtype=np.float32), k=5, where=CURRENT)
    assert writer.pending_count == 0 and backend.during is None  # the write did happen during the read
    assert [h.record.id for h in hits] == ["r2"]


@pytest.mark.parametrize("read", ["get", "scan"])
def test_get_and_scan_while_the_writer_stores_serve_the_new_value_only(
    queued: tuple[StoresDuringReads, RecordWriter], read: str
) -> None:
    backend, writer = queued
    rows = writer.get(["r1", "r2"], where=CURRENT) if read == "get" else writer.scan(CURRENT)
    assert writer.pending_count == 0 and backend.during is None
    assert [r.id for r in rows] == ["r2"]
    everything = RecordFilter(user_id="u1", include_superseded=True)
    backend.during = None
    rows = writer.get(["r1", "r2"], where=everything) if read == "get" else writer.scan(everything)
    assert {r.id: r.superseded_by for r in rows} == {"r1": "r2", "r2": None}


def test_a_queued_row_that_leaves_the_queue_unstored_is_not_served(
    queued: tuple[StoresDuringReads, RecordWriter],
) -> None:
    """Forgotten (or refused) while the read ran: the backend has no row, the
    queue no longer has it: the read leaves it out."""
    backend, writer = queued
    backend.during = lambda: writer.forget(["r2"])
    rows = writer.get(["r2"])
    assert backend.during is None and writer.pending_count == 1
    assert rows == []


def test_a_recall_count_written_back_never_makes_a_superseded_value_current(make_core: Any) -> None:
    """maintain() writes the recall counters back as whole rows; a turn
    supersedes one of them while the writer reads them (seen in review: the
    old budget written back as current, for good)."""
    backend = StoresDuringReads()
    core = make_core(backend=backend, background_writes=True, flush_interval=60)
    first = core.add_message("user", "The budget is 5000 dollars.")
    core.flush()
    ctx = core.build_context("what is the budget", session_id="s2")  # served memories are counted
    assert any("5000" in h.text for h in ctx.relevant)
    turns: list[Any] = []
    backend.asking = first.id  # the counters' read (the message was served)
    backend.during = lambda: turns.append(core.add_message("user", "Actually the budget is now 8000 dollars."))
    core.maintain()
    assert backend.during is None and set(first.fact_ids) <= set(turns[0].superseded_ids)
    core.flush()
    assert backend.get([first.fact_ids[0]])[0].superseded_by == turns[0].fact_ids[0]
    served = [h.text for h in core.recall("what is the budget", k=10)]
    assert any("8000" in t for t in served) and not any("5000" in t for t in served)


def test_a_keyword_only_hit_superseded_during_recall_is_not_served(make_core: Any) -> None:
    """The keyword index keeps superseded rows; their cosine is fetched by id.
    The writer stores the supersede during that fetch: the old value must
    not come back from it."""
    backend = StoresDuringReads()
    core = make_core(backend=backend, background_writes=True, flush_interval=60)
    first = core.add_message("user", "The budget is 5000 dollars.")
    core.flush()
    second = core.add_message("user", "Actually the budget is now 8000 dollars.")
    assert second.pending and set(first.fact_ids) <= set(second.superseded_ids)
    backend.asking, backend.during = first.fact_ids[0], core.store.writer.flush
    served = [h.text for h in core.recall("budget 5000 dollars", k=10)]
    assert backend.during is None  # stored inside the by-id cosine fetch
    assert any("8000" in t for t in served) and not any("5000" in t for t in served)


def test_recall_counts_handed_over_before_a_supersede_never_write_over_it() -> None:
    """The writer merges the counts into the row as stored when it writes
    them, after its queue: a supersede queued after the counts stays, and
    the superseded row is not counted (before, the row was read when the
    counts were handed over and queued back whole: the old value current again)."""
    backend = InMemoryBackend()
    writer = _r1_stored(backend)
    writer.count_recalls({"r1": (2, 1_700_000_100.0)})
    _supersede_r1(writer)
    writer.count_recalls({"r2": (1, 1_700_000_200.0), "never-stored": (1, 1_700_000_200.0)})
    writer.count_recalls({"r2": (2, 1_700_000_150.0)})
    writer.flush()
    rows = {r.id: r for r in backend.get(["r1", "r2"], where=RecordFilter(include_superseded=True))}
    assert (rows["r1"].superseded_by, rows["r1"].recall_count) == ("r2", 0)
    assert (rows["r2"].valid_to, rows["r2"].recall_count, rows["r2"].last_recalled_at) == (None, 3, 1_700_000_200.0)
    writer.close()


def test_recall_counts_wait_out_an_outage() -> None:
    class DownOnce(InMemoryBackend):
        down = 0

        def get(self, ids: Any, *, where: RecordFilter | None = None) -> Any:
            if self.down:
                self.down -= 1
                raise BackendUnavailableError("connection refused")
            return super().get(ids, where=where)

    backend = DownOnce()
    backend.open(dimension=4, model_id="m")
    writer = RecordWriter(backend, WriterSettings(background=False))
    writer.write([_record(1)], np.ones((1, 4), dtype=np.float32))
    backend.down = 1
    writer.count_recalls({"r1": (1, 1_700_000_100.0)})  # synchronous: tried now, kept
    assert isinstance(writer.last_error, BackendUnavailableError) and backend.get(["r1"])[0].recall_count == 0
    writer.count_recalls({"r1": (2, 1_700_000_050.0)})
    assert (backend.get(["r1"])[0].recall_count, backend.get(["r1"])[0].last_recalled_at) == (3, 1_700_000_100.0)
    writer.close()
