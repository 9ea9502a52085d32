"""What a Chroma read costs per metadata key of a row (why `_chroma_rows` keeps a dozen keys).

Embedded Chroma stores every metadata key of a row as a row of its own in
SQLite and reads them back one by one, so a ``get`` of records by id costs
more the more keys each row has. This builds one collection per key count
(``--keys``) with ``--rows`` rows of random 384-d vectors and a short text,
then times, interleaved, ``collection.get(ids=<--batch random ids>,
include=["metadatas", "documents"])`` and the same get with the vectors
only, ``--reps`` times, and prints the medians.

The last two layouts are the library's own: the first layout (every record
field a key, the caller's metadata as ``metadata_json`` plus flattened
``m.`` keys, ~30 keys in a LoCoMo turn) and the current one
(``memory_vec.backends._chroma_rows.encode`` of the same record).

    python benchmarks/chroma_keys.py --rows 10000 --batch 200 --reps 40
    python benchmarks/chroma_keys.py --updates --keys   # ChromaBackend.update only (see --help)
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_vec._model.records import MemoryRecord  # noqa: E402
from memory_vec.backends._chroma_rows import encode  # noqa: E402


def _record(i: int) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{i}",
        text=f"message number {i} about the lemon tart and the chess club",
        role="user",
        user_id=f"u{i % 1000}",
        session_id=f"s{i % 7}",
        timestamp=1.7e9 + i,
        seq=i,
        metadata={
            "speaker": "Priya",
            "dia_id": f"D{i % 30}:{i % 17}",
            "session_date": "2023-05-08",
            "dates": ["2023-05-07"],
            "lang": "en",
            "turn": i % 40,
        },
    )


def _first_layout(record: MemoryRecord) -> dict[str, Any]:
    """A row of the first layout (``_chroma_rows.encode`` at 54a5f26): every field a key, metadata flattened."""
    meta: dict[str, Any] = {
        name: getattr(record, name)
        for name in (
            "role",
            "user_id",
            "session_id",
            "timestamp",
            "kind",
            "seq",
            "importance",
            "visibility",
            "pinned",
            "archived",
            "recall_count",
        )
    }
    for name in ("agent_id", "superseded_by", "subject", "valid_to", "expire_at", "last_recalled_at"):
        value = getattr(record, name)
        meta[name], meta[f"{name}_is_null"] = ("" if value is None else value), value is None
    meta["source_ids"] = json.dumps(list(record.source_ids))
    meta["metadata_json"] = json.dumps(record.metadata, ensure_ascii=False)
    for key, value in record.metadata.items():
        if isinstance(value, bool | str | int | float):
            meta[f"m.{key}"] = value
    return meta


def _synthetic(n_keys: int) -> Any:
    return lambda record: {f"k{j}": (record.seq or 0) + j for j in range(n_keys)}


def time_updates(rows: int, reps: int) -> dict[str, float]:
    """Median ms of ``ChromaBackend.update`` of one record at ``rows`` rows: text kept, and text changed."""
    from memory_vec.backends import RecordFilter
    from memory_vec.backends.chroma import ChromaBackend

    records = [_record(i) for i in range(rows)]
    vectors = np.random.default_rng(1).standard_normal((rows, 384)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        backend = ChromaBackend(path=Path(tmp) / "chroma", collection="updates")
        backend.open(dimension=384, model_id="bench")
        backend.upsert(records, vectors)
        timings: dict[str, list[float]] = {"text kept": [], "text changed": []}
        everything = RecordFilter(include_superseded=True, include_archived=True)
        for rep in range(reps):
            kept, changed = backend.get([f"r{2 * rep}", f"r{2 * rep + 1}"], where=everything)
            t = time.perf_counter()
            backend.update([kept.copy(recall_count=kept.recall_count + 1, importance=0.9)])
            timings["text kept"].append(time.perf_counter() - t)
            t = time.perf_counter()
            backend.update([changed.copy(text=changed.text + " (edited)")])
            timings["text changed"].append(time.perf_counter() - t)
        backend.close()
    return {name: statistics.median(t) * 1e3 for name, t in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--keys", type=int, nargs="*", default=[3, 10, 20, 32])
    parser.add_argument(
        "--updates", action="store_true", help="also time ChromaBackend.update of one record (text kept / changed)"
    )
    args = parser.parse_args()
    if args.updates:
        medians = time_updates(args.rows, args.reps)
        print(
            f"ChromaBackend.update of one record at {args.rows} rows, median of {args.reps}: "
            + ", ".join(f"{name} {ms:.1f} ms" for name, ms in medians.items()),
            flush=True,
        )

    import chromadb

    layouts: list[tuple[str, Any]] = [(f"{n} synthetic int keys", _synthetic(n)) for n in args.keys]
    layouts += [("first layout (memory-vec before f5162bc)", _first_layout), ("current layout (_chroma_rows)", encode)]
    records = [_record(i) for i in range(args.rows)]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.rows, 384)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=tmp)
        collections = []
        for n, (name, layout) in enumerate(layouts):
            col = client.create_collection(f"layout{n}", metadata={"hnsw:space": "cosine"}, embedding_function=None)
            for start in range(0, args.rows, 2000):
                chunk = records[start : start + 2000]
                metas = [layout(r) for r in chunk]
                col.add(
                    ids=[r.id for r in chunk],
                    embeddings=vectors[start : start + 2000],
                    documents=[r.text for r in chunk],
                    metadatas=metas,
                )
            keys = len(layout(records[0]))
            collections.append((name, keys, col))
            print(f"built {name}: {keys} keys per row", flush=True)
        timings: dict[str, dict[str, list[float]]] = {name: {"meta": [], "vec": []} for name, _, _ in collections}
        pick = random.Random(0)
        for _ in range(args.reps):
            ids = [f"r{i}" for i in pick.sample(range(args.rows), args.batch)]
            for name, _, col in pick.sample(collections, len(collections)):  # interleaved, order shuffled
                t = time.perf_counter()
                col.get(ids=ids, include=["metadatas", "documents"])
                timings[name]["meta"].append(time.perf_counter() - t)
                t = time.perf_counter()
                col.get(ids=ids, include=["embeddings"])
                timings[name]["vec"].append(time.perf_counter() - t)
    print(f"\n{args.rows} rows, get of {args.batch} ids, median of {args.reps} (ms)\n")
    print("| layout | keys per row | get metadata + text | get vectors |")
    print("|---|---:|---:|---:|")
    for name, keys, _ in collections:
        t = timings[name]
        meta_ms, vec_ms = statistics.median(t["meta"]) * 1e3, statistics.median(t["vec"]) * 1e3
        print(f"| {name} | {keys} | {meta_ms:.1f} | {vec_ms:.1f} |")


if __name__ == "__main__":
    main()
