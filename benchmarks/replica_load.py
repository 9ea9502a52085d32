"""What loading a replica copy costs on embedded Chroma (issue #15, target 3).

A user's first recall in a process (and every copy after a delete anywhere)
reads the user's scope with its vectors: ``ChromaBackend.scan_vectors`` of the
user's messages and facts plus the shared rows. This fills a fresh embedded
Chroma with ``--rows`` rows (``--own`` of them the measured user's, the rest
spread over ~1,000 other users, random 384-d vectors) and reports the median
of ``--reps`` loads.

    python benchmarks/replica_load.py --rows 10000 50000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from memory_vec._model.records import MemoryRecord
from memory_vec._storage.replica import COPIED_KINDS
from memory_vec.backends import RecordFilter
from memory_vec.backends.chroma import ChromaBackend


def load_ms(rows: int, own: int, reps: int) -> tuple[int, float]:
    backend = ChromaBackend(path=tempfile.mkdtemp(prefix="replica-load-"), collection="replica_load")
    backend.open(dimension=384, model_id="probe")
    rng = np.random.default_rng(0)
    every = max(1, rows // own)
    records = [
        MemoryRecord(
            id=f"r{i}",
            text=f"text {i} about something",
            role="user",
            user_id="me" if i % every == 0 else f"u{i % 997}",
            session_id=f"s{i % 7}",
            timestamp=1.7e9 + i,
            seq=i,
            metadata={"speaker": "A"},
        )
        for i in range(rows)
    ]
    for start in range(0, rows, 2000):
        batch = records[start : start + 2000]
        backend.upsert(batch, rng.standard_normal((len(batch), 384)).astype(np.float32))
    scope = RecordFilter(
        user_id="me", include_shared=True, kinds=COPIED_KINDS, include_superseded=True, include_archived=True
    )
    times, loaded = [], 0
    for _ in range(reps):
        t0 = time.perf_counter()
        loaded = len(backend.scan_vectors(scope)[0])
        times.append((time.perf_counter() - t0) * 1000)
    backend.close()
    return loaded, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000])
    parser.add_argument("--own", type=int, default=300)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    print("| stored rows | rows loaded | load median ms |\n|---:|---:|---:|")
    for rows in args.rows:
        loaded, ms = load_ms(rows, args.own, args.reps)
        print(f"| {rows:,} | {loaded} | {ms:.1f} |")


if __name__ == "__main__":
    main()
