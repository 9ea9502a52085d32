"""Bulk writes reach the backend in big calls (issue #15, target 4): an
import or a many-message ``add_messages`` costs a few round trips, not one
per 64 rows, and stores everything it acknowledged."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from memory_vec import MemoryRecord
from memory_vec._pipelines.transfer import BULK_BATCH, EXPORT_FORMAT
from memory_vec.backends import InMemoryBackend


class CallCountingBackend(InMemoryBackend):
    """The in-process backend, counting its upsert calls and their sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.upserts: list[int] = []

    def upsert(self, records, vectors) -> None:  # type: ignore[no-untyped-def]
        self.upserts.append(len(records))
        super().upsert(records, vectors)


def _export(n: int) -> dict:  # type: ignore[type-arg]
    records = [
        MemoryRecord(
            id=f"r{i:05d}",
            text=f"note number {i} about topic {i % 17}",
            role="user",
            user_id="u1",
            session_id=f"s{i // 100}",
            timestamp=1_700_000_000.0 + i,
            kind="message",
            seq=i % 100 + 1,
        )
        for i in range(n)
    ]
    return {
        "format": EXPORT_FORMAT,
        "user_id": "u1",
        "embedding_model": "",
        "records": [asdict(r) for r in records],
        "sessions": {},
    }


def test_import_writes_in_bulk_batches_and_stores_every_record(make_core) -> None:  # type: ignore[no-untyped-def]
    backend = CallCountingBackend()
    core = make_core(backend=backend)
    n = 2 * BULK_BATCH + 300
    assert core.import_memories(_export(n)) == n
    assert backend.upserts == [BULK_BATCH, BULK_BATCH, 300]  # not n / 64 calls
    assert backend.count() == n
    assert {r.id for r in core.recall("note number 1234 about topic 10", k=3)} >= {"r01234"}


def test_many_messages_in_one_call_are_one_backend_write(make_core) -> None:  # type: ignore[no-untyped-def]
    backend = CallCountingBackend()
    core = make_core(backend=backend)
    messages = [
        ("user" if i % 2 == 0 else "assistant", f"message {i}: the {i}th thing we talked about") for i in range(150)
    ]
    results = core.add_messages(messages)
    assert len(results) == 150 and not any(r.pending for r in results)
    assert len(backend.upserts) == 1 and backend.upserts[0] >= 150
    stored = backend.get([r.id for r in results])
    assert len(stored) == 150
    # a small call still goes in one write, and later small calls do not inherit the big size
    core.add_messages([("user", "one more"), ("assistant", "noted")])
    assert backend.upserts[-1] >= 2 and len(backend.upserts) == 2


def test_writer_batch_size_overrides_the_settings_for_one_write() -> None:
    from memory_vec._storage.writer import RecordWriter

    backend = CallCountingBackend()
    backend.open(dimension=4, model_id="m")
    writer = RecordWriter(backend, batch_size=64)
    try:
        records = [
            MemoryRecord(
                id=f"w{i}",
                text=f"t{i}",
                role="user",
                user_id="u",
                session_id="s",
                timestamp=1.0 + i,
                kind="message",
                seq=i + 1,
            )
            for i in range(500)
        ]
        vectors = np.eye(4, dtype=np.float32)[np.arange(500) % 4]
        assert writer.write(records, vectors, batch_size=200) is True  # stored before it returns
        assert backend.upserts[-3:] == [200, 200, 100]
        assert backend.count() == 500
    finally:
        writer.close()
