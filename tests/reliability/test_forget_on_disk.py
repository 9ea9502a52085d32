"""forget() leaves no trace of the user's text in any file under persist_dir.

Each test writes a marker for user "gone" (messages and metadata) plus data
of a user "stays", forgets "gone", then looks for the marker in every file:
the raw bytes, and decoded where a format could hide it from a byte search
(Parquet columns of Milvus Lite, every table of every SQLite file, the terms
of Chroma's full-text index). The other user's data must be intact: the same
records, counts and recall, also after the store is closed and reopened
(Chroma replays its log on open).
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore, release_stores
from memory_vec.backends.base import RecordFilter
from memory_vec.testing import DeterministicHashEmbedder, parts

EMBEDDER = DeterministicHashEmbedder(dimension=32)
EVERYTHING = {"include_superseded": True, "include_archived": True}
# Letters no other text here contains: the marker's trigrams are stored whole in
# Chroma's full-text index, where a byte search for the marker would miss them.
PREFIX = "qzxjv"


def _marker() -> str:
    return f"{PREFIX}{uuid.uuid4().hex[:8]}"


def _sqlite_traces(path: Path, marker: str) -> list[str]:
    found = []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [
            name
            for (name, sql) in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
            if not (sql or "").upper().startswith("CREATE VIRTUAL")
        ]
        trigrams = [PREFIX[i : i + 3].encode() for i in range(len(PREFIX) - 2)]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    raw = value if isinstance(value, bytes) else str(value).encode()
                    if marker.encode() in raw:
                        found.append(f"{path.name}:{table}")
                    elif table.endswith("_data") and any(t in raw for t in trigrams):  # an FTS5 index
                        found.append(f"{path.name}:{table} (full-text terms)")
    finally:
        conn.close()
    return found


def _parquet_traces(path: Path, marker: str) -> list[str]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return [
        f"{path.name}:{column}"
        for column in table.column_names
        if any(marker in str(v) for v in table.column(column).to_pylist())
    ]


def traces(root: Path, marker: str) -> list[str]:
    """Every place under ``root`` that still holds ``marker``."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if marker.encode() in data:
            found.append(str(path.relative_to(root)))
        if data.startswith(b"SQLite format 3\x00"):
            found += _sqlite_traces(path, marker)
        elif path.suffix == ".parquet":
            found += _parquet_traces(path, marker)
    return found


def _config(kind: str, root: Path) -> MemoryConfig:
    return MemoryConfig(
        backend=kind,
        state="sqlite",
        persist_dir=str(root),
        user_id="gone",
        collection=f"f_{uuid.uuid4().hex[:8]}",
        fact_extractor="none",
        score_threshold=0.0,
    )


def _kept(core: MemoryCore) -> list[tuple[str, str, dict[str, Any]]]:
    records = parts(core).backend.scan(RecordFilter(user_id="stays", **EVERYTHING))
    return sorted((r.id, r.text, r.metadata) for r in records)


def _check_keeper(keeper: MemoryCore, kept: list[tuple[str, str, dict[str, Any]]]) -> None:
    assert _kept(keeper) == kept
    assert parts(keeper).backend.count(RecordFilter(user_id="stays", **EVERYTHING)) == len(kept)
    hits = keeper.recall("the keeper's garden note number 17", k=3)
    assert hits and hits[0].text == "the keeper's garden note number 17 about tomatoes"


def test_forget_leaves_no_trace_in_the_sqlite_working_state(tmp_path: Path) -> None:
    marker = _marker()
    config = MemoryConfig(
        backend="memory",
        state="sqlite",
        persist_dir=str(tmp_path),
        user_id="gone",
        collection=f"f_{uuid.uuid4().hex[:8]}",
        fact_extractor="none",
    )
    core = MemoryCore(config, embedder=DeterministicHashEmbedder(dimension=32))
    keeper = MemoryCore(config.model_copy(update={"user_id": "stays"}), embedder=parts(core).embedder)
    try:
        for i in range(30):
            core.add_message("user", f"my secret word is {marker} number {i}")
        keeper.add_message("user", "the other user's note stays")
        assert traces(tmp_path, marker)  # it was on disk
        receipt = core.forget()
        assert receipt.remaining_after_scan == 0
        assert traces(tmp_path, marker) == []
        assert keeper.working_state().messages[0].content == "the other user's note stays"
    finally:
        release_stores()


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("kind", ["sqlite", "chroma", "milvus"])
def test_forget_leaves_no_trace_in_the_embedded_store(kind: str, tmp_path: Path) -> None:
    marker = _marker()
    config = _config(kind, tmp_path)
    core = MemoryCore(config, embedder=EMBEDDER)
    keeper = MemoryCore(config.model_copy(update={"user_id": "stays"}), embedder=EMBEDDER)
    try:
        for i in range(40):
            core.add_message("user", f"my secret word is {marker} number {i}")
            keeper.add_message("user", f"the keeper's garden note number {i} about tomatoes")
        core.remember(f"the locker code is {marker}", metadata={"note": f"hidden {marker}"})
        core.flush()
        flush = getattr(parts(core).backend, "flush", None)
        if callable(flush):  # Milvus: seal the rows into data files before the delete
            flush()
        kept = _kept(keeper)
        assert len(kept) == 40
        assert traces(tmp_path, marker)  # it was on disk

        receipt = core.forget()

        assert receipt.records_deleted == 41
        assert receipt.remaining_after_scan == 0
        assert traces(tmp_path, marker) == []
        _check_keeper(keeper, kept)
        keeper.add_message("user", "a note written after the forget")
        keeper.flush()  # recall counts (every row is stored inside its call)
        kept = _kept(keeper)
    finally:
        release_stores()
    # Reopened (Chroma replays its log from the vector index's checkpoint): same data, still no trace.
    reopened = MemoryCore(config.model_copy(update={"user_id": "stays"}), embedder=EMBEDDER)
    try:
        _check_keeper(reopened, kept)
        assert parts(reopened).backend.count(RecordFilter(user_id="gone", **EVERYTHING)) == 0
        assert traces(tmp_path, marker) == []
    finally:
        release_stores()


def test_sqlite_backend_says_when_a_reader_kept_the_log(tmp_path: Path) -> None:
    marker = _marker()
    config = _config("sqlite", tmp_path).model_copy(update={"backend_timeout": 0.5})
    core = MemoryCore(config, embedder=EMBEDDER)
    try:
        for i in range(5):
            core.add_message("user", f"my secret word is {marker} number {i}")
        core.flush()
        reader = sqlite3.connect(tmp_path / "vectors.sqlite3")  # another process, reading
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM records").fetchone()
        receipt = core.forget()
        assert receipt.remaining_after_scan == 1  # the write-ahead log could not be truncated
        assert traces(tmp_path, marker)
        reader.close()
        report = parts(core).backend.purge()  # type: ignore[attr-defined]
        assert report.purged and report.residue == 0
        assert traces(tmp_path, marker) == []
    finally:
        release_stores()


@pytest.mark.integration
def test_chroma_purge_zeroes_the_unused_capacity_of_the_vector_index(tmp_path: Path) -> None:
    # hnswlib writes a new index at its full capacity, the unused part from uninitialised
    # memory, which can hold text the process handled before (seen: a forgotten user's log
    # entries after a re-open in the same process). Plant such bytes, as it would.
    import struct

    marker = _marker()
    config = _config("chroma", tmp_path)
    core = MemoryCore(config, embedder=EMBEDDER)
    try:
        for i in range(5):
            core.add_message("user", f"note {i}")
        core.flush()
        [folder] = [p.parent for p in tmp_path.rglob("header.bin")]
        _, _, capacity, count, per_element = struct.unpack_from("<iQQQQ", (folder / "header.bin").read_bytes())
        data = folder / "data_level0.bin"
        assert data.stat().st_size == capacity * per_element > count * per_element
        with data.open("r+b") as f:
            f.seek(data.stat().st_size - 200)
            f.write(f'"chroma:document":"my secret word is {marker}"'.encode())
        assert traces(tmp_path, marker) == ["chroma/" + str(data.relative_to(tmp_path / "chroma"))]
        core.forget(user_id="nobody")
        assert traces(tmp_path, marker) == []
        assert core.recall("note 3", k=1)[0].text == "note 3"
    finally:
        release_stores()


# --- Milvus Lite's rewrite: a crash at any step loses no acknowledged row -------------------------------

_CRASHING_CHILD = r"""
import json, os, sys
import pymilvus
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.backends.base import RecordFilter
from memory_vec.testing import DeterministicHashEmbedder, parts

config = MemoryConfig.model_validate_json(sys.argv[1])
point = sys.argv[2]
embedder = DeterministicHashEmbedder(dimension=32)
gone = MemoryCore(config, embedder=embedder)
keeper = MemoryCore(config.model_copy(update={"user_id": "stays"}), embedder=embedder)
for i in range(30):
    gone.add_message("user", f"my secret word is {sys.argv[3]} number {i}")
    keeper.add_message("user", f"the keeper's garden note number {i} about tomatoes")
gone.flush()
parts(gone).backend.flush()
rows = parts(keeper).backend.scan(RecordFilter(user_id="stays", include_superseded=True, include_archived=True))
print(json.dumps(sorted([r.id, r.text] for r in rows)), flush=True)

renames, insert = pymilvus.MilvusClient.rename_collection, pymilvus.MilvusClient.insert
calls = []

def crashing_rename(self, old, new, **kw):
    renames(self, old, new, **kw)
    calls.append(old)
    if (point, len(calls)) in {("swap", 1), ("drop", 2)}:
        os._exit(9)

def crashing_insert(self, name, data, **kw):
    result = insert(self, name, data, **kw)
    if point == "copy":
        os._exit(9)
    return result

pymilvus.MilvusClient.rename_collection = crashing_rename
pymilvus.MilvusClient.insert = crashing_insert
gone.forget()
os._exit(3)  # not reached: the purge crashed
"""


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("point", ["copy", "swap", "drop"])
def test_milvus_lite_rewrite_survives_a_crash_at_each_step(point: str, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from memory_vec.backends._milvus_rewrite import side_names

    marker = _marker()
    config = _config("milvus", tmp_path).model_copy(update={"backend_options": {"batch_size": 10}})
    child = subprocess.run(
        [sys.executable, "-c", _CRASHING_CHILD, config.model_dump_json(), point, marker],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert child.returncode == 9, child.stderr[-3000:]
    acknowledged = [tuple(pair) for pair in json.loads(child.stdout.splitlines()[0])]
    if point == "drop":  # also a crash in the middle of deleting the old collection's folder
        old = tmp_path / "milvus.db" / "collections" / side_names(config.collection)[1]
        (old / "schema.json").unlink()

    reopened = MemoryCore(config.model_copy(update={"user_id": "stays"}), embedder=EMBEDDER)
    try:
        stays = parts(reopened).backend.scan(RecordFilter(user_id="stays", **EVERYTHING))
        assert sorted((r.id, r.text) for r in stays) == acknowledged
        assert parts(reopened).backend.count(RecordFilter(user_id="gone", **EVERYTHING)) == 0
        leftovers = [p.name for p in (tmp_path / "milvus.db" / "collections").iterdir()]
        assert leftovers == [config.collection]
        receipt = reopened.forget(user_id="gone")  # the interrupted forget, run again
        assert receipt.remaining_after_scan == 0
        assert traces(tmp_path, marker) == []
        hits = reopened.recall("the keeper's garden note number 17", k=3)
        assert hits and hits[0].text == "the keeper's garden note number 17 about tomatoes"
    finally:
        release_stores()


@pytest.mark.slow
@pytest.mark.integration
def test_milvus_lite_reads_during_the_rewrite_see_every_row(tmp_path: Path) -> None:
    import threading

    import numpy as np

    from memory_vec.backends.milvus import MilvusBackend
    from memory_vec.testing.conformance import make_record

    backend = MilvusBackend(str(tmp_path / "milvus.db"), collection="gate", batch_size=50)
    backend.open(dimension=8, model_id="m")
    records = [make_record(f"r{i}", user_id="stays" if i % 2 else "gone") for i in range(200)]
    backend.upsert(records, np.random.default_rng(0).random((200, 8), dtype=np.float32))
    errors: list[BaseException] = []
    counts: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                counts.append(backend.count(RecordFilter(user_id="stays", **EVERYTHING)))
                backend.query(np.ones(8, dtype=np.float32), k=3, where=RecordFilter(user_id="stays"))
            except BaseException as exc:  # collected for the assertion
                errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    try:
        for t in readers:
            t.start()
        for _ in range(2):
            backend.delete(where=RecordFilter(user_id="gone", **EVERYTHING))
            assert backend.purge().purged
    finally:
        stop.set()
        for t in readers:
            t.join()
        backend.close()
    assert errors == []
    assert counts and set(counts) == {100}


@pytest.mark.slow
@pytest.mark.integration
def test_milvus_lite_rewrite_keeps_every_remaining_record_exactly(tmp_path: Path) -> None:
    import numpy as np

    from memory_vec.backends.milvus import MilvusBackend
    from memory_vec.testing.conformance import make_record

    backend = MilvusBackend(str(tmp_path / "milvus.db"), collection="exact", batch_size=7)
    backend.open(dimension=8, model_id="m")
    kept = [
        make_record(
            f"k{i}",
            user_id="stays",
            text=f"naïve café №{i} 🍅\nline two",
            metadata={"n": 2**63 - 1, "f": 0.1, "nested": {"a": [1, "x", None]}, "flag": True},
            valid_to=(1.8e9 if i % 3 == 0 else None),
            superseded_by=("k0" if i % 3 == 0 else None),
            visibility=("global" if i == 5 else "private"),
            importance=0.25,
            pinned=i == 2,
        )
        for i in range(20)
    ]
    doomed = [make_record(f"g{i}", user_id="gone") for i in range(20)]
    vectors = np.random.default_rng(1).random((40, 8), dtype=np.float32)
    backend.upsert(kept + doomed, vectors)
    before = backend.scan(RecordFilter(**EVERYTHING))
    try:
        backend.delete(where=RecordFilter(user_id="gone", **EVERYTHING))
        report = backend.purge()
        assert report.purged and report.residue == 0
        after = backend.scan(RecordFilter(**EVERYTHING))
        assert after == [r for r in before if r.user_id == "stays"]
        for record, vector in zip(kept, vectors[:20]):
            [hit] = backend.query(vector, k=1, where=RecordFilter(ids=(record.id,), **EVERYTHING))
            assert hit.similarity > 0.9999
        assert backend.purge().notes == ("milvus-lite: nothing deleted since the last purge",)
    finally:
        backend.close()
