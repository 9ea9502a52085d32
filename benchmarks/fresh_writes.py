"""A turn's write on each persistent backend: ``upsert`` against ``insert_new`` (issue #15, target 3).

A turn stores two new messages (and their facts) whose ids were made this
turn. ``upsert`` first reads the rows of those ids (Chroma: old metadata keys
to clear; Milvus: a row of the id in another partition); ``insert_new``
skips that read. This fills each store with ``--size`` rows (300 of the
measured user, 10 per other user, random 384-d vectors), then writes pairs
of fresh rows, alternating the two methods pair by pair (``--reps`` each),
on the engine backend itself (no guard, no replica), and prints the medians
and their ratio. Servers are started as the tests start them.

    HF_HUB_OFFLINE=1 MILVUS_SERVER_BIN=.venv-milvus/bin/milvus-server \\
      python benchmarks/fresh_writes.py --size 10000 --backends chroma chroma-server milvus-lite milvus-server
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.backends import start_server
from memory_vec._model.records import MemoryRecord
from memory_vec.backends.chroma import ChromaBackend
from memory_vec.backends.milvus import MilvusBackend

BACKENDS = ("chroma", "chroma-server", "milvus-lite", "milvus-server")
DIM = 384


def open_backend(kind: str, urls: dict[str, str]) -> Any:
    path = tempfile.mkdtemp(prefix=f"fresh-{kind}-")
    if kind == "chroma":
        backend: Any = ChromaBackend(path=path, collection="fresh_writes")
    elif kind == "chroma-server":
        backend = ChromaBackend(url=urls[kind], collection="fresh_writes")
    elif kind == "milvus-lite":
        backend = MilvusBackend(uri=f"{path}/milvus.db", collection="fresh_writes")
    else:
        backend = MilvusBackend(uri=urls[kind], collection="fresh_writes")
    backend.open(dimension=DIM, model_id="probe")
    return backend


def record(i: int, user: str, text: str) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{i}",
        text=text,
        role="user" if i % 2 == 0 else "assistant",
        user_id=user,
        session_id=f"s{i // 20}",
        timestamp=1.7e9 + i,
        seq=i % 20 + 1,
        metadata={"speaker": "A"},
    )


def measure(backend: Any, size: int, reps: int, rng: np.random.Generator) -> tuple[float, float]:
    text = "We planted tomatoes in the community garden this morning, and then it rained."
    for start in range(0, size, 1000):
        batch = [record(i, "me" if i < 300 else f"u{(i - 300) // 10:05d}", text) for i in range(start, start + 1000)]
        backend.upsert(batch, rng.standard_normal((len(batch), DIM)).astype(np.float32))
    times: dict[str, list[float]] = {"upsert": [], "insert_new": []}
    n = size
    for rep in range(2 * reps):
        method = "upsert" if rep % 2 == 0 else "insert_new"
        pair = [record(n, "me", text), record(n + 1, "me", text)]
        n += 2
        vectors = rng.standard_normal((2, DIM)).astype(np.float32)
        t0 = time.perf_counter()
        getattr(backend, method)(pair, vectors)
        times[method].append((time.perf_counter() - t0) * 1000)
    return statistics.median(times["upsert"]), statistics.median(times["insert_new"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    args = parser.parse_args()
    services = {kind: start_server(kind) for kind in ("chroma-server", "milvus-server") if kind in args.backends}
    try:
        urls = {kind: s.url for kind, s in services.items()}
        print(f"| backend ({args.size:,} stored) | upsert of a fresh pair, median ms | insert_new, median ms | ratio |")
        print("|---|---:|---:|---:|")
        for kind in args.backends:
            backend = open_backend(kind, urls)
            up, new = measure(backend, args.size, args.reps, np.random.default_rng(0))
            backend.close()
            print(f"| {kind} | {up:.2f} | {new:.2f} | {new / up:.2f} |", flush=True)
    finally:
        for service in services.values():
            service.stop()


if __name__ == "__main__":
    main()
