"""Write throughput and bulk import, model time excluded (issue #15, target 4).

Three measurements, one invocation (so every ratio compares numbers of the same run):

1. **Bulk import** into embedded Chroma and Milvus Lite: ``--rows`` message
   records of one user (LoCoMo dev messages, sessions and turn order kept)
   written three ways, each on a fresh store, repeated ``--reps`` times in
   rotated order:

   - ``raw``: the store's own client, ``collection.add`` (Chroma) /
     ``client.insert`` + ``flush`` (Milvus Lite) of the same rows in the
     backend's own row format (ids, the vectors the library stores,
     metadata, documents), in the client's largest batch, then (Milvus
     Lite) one flush, and one count as the first read. Encoding the rows is
     not timed: this is the ceiling.
   - ``import``: ``MemoryCore.import_memories(export)`` of the same records
     (validation, the id-ownership check, stored vectors by the write
     policy, writes, the keyword rebuild).
   - ``add_messages``: the first ``--add-rows`` messages through
     ``add_messages`` in batches of ``--batch`` per session (extraction, facts, conflicts,
     working state, folds: everything a live write does; facts are extra
     rows the raw path does not write).

   The embedder serves vectors from a dict (``backend_turns.DictEmbedder``,
   cached in ``--vectors-cache``); a text it lacks is embedded by the real
   model and that time is subtracted. Reported: rows/s and the ratio to raw
   of the same rep (target: import and batched ``add_messages`` ≥ 0.8×).
2. **Concurrent writers** on the C++ Milvus server (``--clients`` processes,
   each its own ``MemoryCore`` and user, started together): ``--client-turns``
   calls of ``add_messages([user, assistant])`` each. Reported: aggregate
   messages/s over the wall time, per-call p50/p95, and the write trace's
   median parts (target ≥ 100 messages/s from 8 clients).
3. **With the model** (``--model-rows`` > 0): ``import_memories`` with the
   real default embedder into embedded Chroma against that embedder's own
   ``embed_documents`` of the same messages in batches of 64 (target:
   within 1.2×).

Usage::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 MILVUS_SERVER_BIN=.venv-milvus/bin/milvus-server \\
      python benchmarks/throughput.py --data ../shared/data/locomo/locomo_dev.json \\
        --vectors-cache /tmp/throughput_vectors.npy --rows 5000 --reps 3 --clients 8 --client-turns 40 \\
        --model-rows 500 --out /tmp/throughput.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.backend_turns import DictEmbedder  # noqa: E402
from benchmarks.overhead import live_turns, pct, sessions_of  # noqa: E402
from memory_vec import MemoryConfig, MemoryCore, release_stores  # noqa: E402
from memory_vec._model.records import MemoryRecord  # noqa: E402
from memory_vec._pipelines.transfer import EXPORT_FORMAT  # noqa: E402
from memory_vec.testing import parts as core_parts  # noqa: E402

USER = "import-user"
BULK_BACKENDS = ("chroma", "milvus-lite")


# --------------------------------------------------------------------------- data
def conversation_messages(data: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(session id, role, text) of every dev message, conversation by conversation."""
    out = []
    for c, conv in enumerate(data):
        for s, msgs in enumerate(sessions_of(conv)):
            out += [(f"c{c}-s{s + 1}", "user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(msgs)]
    return out


def import_records(messages: Sequence[tuple[str, str, str]], rows: int) -> list[MemoryRecord]:
    """``rows`` message records of USER: the dev messages in order, cycled (later rounds are new sessions)."""
    base = time.time() - 86400 * 400
    out, seqs = [], {}
    for i in range(rows):
        session, role, text = messages[i % len(messages)]
        session = f"{session}-r{i // len(messages)}"
        seqs[session] = seqs.get(session, 0) + 1
        out.append(
            MemoryRecord(
                id=f"imp-{i:07d}",
                text=text,
                role=role,
                user_id=USER,
                session_id=session,
                timestamp=base + 60 * i,
                kind="message",
                seq=seqs[session],
            )
        )
    return out


def export_of(records: Sequence[MemoryRecord]) -> dict[str, Any]:
    return {
        "format": EXPORT_FORMAT,
        "user_id": USER,
        "embedding_model": "",
        "records": [asdict(r) for r in records],
        "sessions": {},
    }


def core_on(
    backend: str,
    persist: str,
    embedder: Any,
    user: str = USER,
    url: str | None = None,
    collection: str = "throughput",
    options: dict[str, Any] | None = None,
) -> MemoryCore:
    kind = {"milvus-lite": "milvus", "milvus-server": "milvus"}.get(backend, backend)
    config = MemoryConfig(
        user_id=user,
        session_id="bulk",
        backend=kind,
        url=url,
        persist_dir=persist,
        collection=collection,
        backend_timeout=300.0,
        backend_options=options or {},
    )
    return MemoryCore(config, embedder=embedder)


# --------------------------------------------------------------------------- 1. bulk import
def raw_write(backend: str, core: MemoryCore, records: Sequence[MemoryRecord], vectors: np.ndarray) -> float:
    """Seconds for the store's own client to add these rows (already in the backend's row format)."""
    inner = getattr(core_parts(core).backend, "inner", core_parts(core).backend)
    if backend == "chroma":
        from memory_vec.backends._chroma_rows import encode

        collection = inner._writable()
        metas, docs, ids = [encode(r) for r in records], [r.text for r in records], [r.id for r in records]
        step = inner._max_batch
        t0 = time.perf_counter()
        for i in range(0, len(records), step):
            collection.add(
                ids=ids[i : i + step],
                embeddings=vectors[i : i + step],
                metadatas=metas[i : i + step],
                documents=docs[i : i + step],
            )
        collection.count()  # the first read
        return time.perf_counter() - t0
    from memory_vec.backends._milvus_rows import request_batches, to_row

    client = inner._ready()
    rows = [to_row(r, v) for r, v in zip(records, vectors)]
    batches = list(request_batches(rows, 10_000))
    t0 = time.perf_counter()
    for chunk in batches:
        client.insert(inner.collection, chunk)
    client.flush(inner.collection)
    client.query(inner.collection, filter='id != ""', output_fields=["count(*)"])  # the first read
    return time.perf_counter() - t0


def add_by_session(core: MemoryCore, records: Sequence[MemoryRecord], batch: int, session_size: int = 0) -> None:
    """The records as messages, session by session, ``batch`` per ``add_messages`` call.
    ``session_size``: consecutive runs of that many messages are one session instead
    of the dev sessions (~20 messages each), so calls of more messages can be measured."""
    by_session: dict[str, list[MemoryRecord]] = {}
    for i, r in enumerate(records):
        by_session.setdefault(f"long-{i // session_size}" if session_size else r.session_id, []).append(r)
    for session, rs in by_session.items():
        for i in range(0, len(rs), batch):
            core.add_messages(
                [{"role": r.role, "content": r.text, "timestamp": r.timestamp} for r in rs[i : i + batch]],
                session_id=session,
            )


def bulk_once(
    mode: str,
    backend: str,
    records: Sequence[MemoryRecord],
    vectors: np.ndarray,
    embedder: DictEmbedder,
    batch: int,
    add_rows: int,
    session_size: int = 0,
) -> dict[str, Any]:
    persist = tempfile.mkdtemp(prefix=f"throughput-{backend}-{mode}-")
    try:
        core = core_on(backend, persist, embedder)
        embedder.model_s, misses = 0.0, embedder.misses
        if mode == "raw":
            seconds = raw_write(backend, core, records, vectors)
        elif mode == "import":
            t0 = time.perf_counter()
            core.import_memories(export_of(records))
            core_parts(core).backend.count()  # the first read (Milvus Lite flushes a bulk write before it)
            seconds = time.perf_counter() - t0 - embedder.model_s
        else:
            records = records[:add_rows]
            t0 = time.perf_counter()
            add_by_session(core, records, batch, session_size)
            core.flush()  # a turn's rows may still be in the background writer's queue: timed until stored
            core_parts(core).backend.count()
            seconds = time.perf_counter() - t0 - embedder.model_s
        stored = core_parts(core).backend.count()
        core.close()
        return {
            "backend": backend,
            "mode": mode,
            "rows": len(records),
            "stored": stored,
            "seconds": seconds,
            "rows_per_s": len(records) / seconds,
            "misses": embedder.misses - misses,
        }
    finally:
        release_stores()
        shutil.rmtree(persist, ignore_errors=True)


def bulk(args: argparse.Namespace, records: list[MemoryRecord], embedder: DictEmbedder) -> list[dict[str, Any]]:
    # The vectors the library stores for these records (the raw path writes the same ones).
    prime_dir = tempfile.mkdtemp(prefix="throughput-prime-")
    core = core_on("memory", prime_dir, embedder)
    vectors = core._engine.record_vectors(records)
    # primes the cache with what add_messages embeds
    add_by_session(core, records[: args.add_rows], args.batch, args.session_size)
    core.close()
    release_stores()
    shutil.rmtree(prime_dir, ignore_errors=True)
    modes = ["raw", "import", "add_messages"]
    out = []
    for rep in range(args.reps):
        for backend in args.bulk_backends:
            order = modes[rep % 3 :] + modes[: rep % 3]
            for mode in order:
                row = bulk_once(mode, backend, records, vectors, embedder, args.batch, args.add_rows, args.session_size)
                row["rep"] = rep
                out.append(row)
                print(
                    f"  bulk rep {rep} {backend:12s} {mode:13s} {row['rows_per_s']:8.0f} rows/s "
                    f"({row['seconds']:.2f}s, stored {row['stored']}, misses {row['misses']})",
                    file=sys.stderr,
                    flush=True,
                )
    embedder.save()
    return out


# --------------------------------------------------------------------------- 2. concurrent writers
def _client(
    i: int, url: str, cache: str, turns: list[tuple[str, str, str, str]], start: Any, results: Any, level: str
) -> None:
    embedder = DictEmbedder(Path(cache))
    persist = tempfile.mkdtemp(prefix=f"throughput-client-{i}-")
    core = core_on(
        "milvus-server",
        persist,
        embedder,
        user=f"client-{i}",
        url=url,
        collection=f"writers_{level}",
        options={"consistency_level": level},
    )
    core.add_messages([("user", "hello"), ("assistant", "hi")], session_id="warmup")  # connect, open
    start.wait()
    began = time.time()
    calls, parts, model_s = [], {}, 0.0
    for session, user_msg, assistant_msg, _ in turns:
        embedder.model_s = 0.0
        t0 = time.perf_counter()
        core.add_messages([("user", user_msg), ("assistant", assistant_msg)], session_id=session)
        calls.append((time.perf_counter() - t0 - embedder.model_s) * 1000)
        model_s += embedder.model_s
        for name, seconds in (core.last_trace.timings if core.last_trace else {}).items():
            parts.setdefault(name, []).append(seconds * 1000)
    ended = time.time()
    stored = core_parts(core).backend.count()
    core.close()
    results.put(
        {
            "client": i,
            "began": began,
            "ended": ended,
            "model_s": model_s,
            "calls_ms": calls,
            "parts": parts,
            "messages": 2 * len(turns),
            "misses": embedder.misses,
            "stored": stored,
        }
    )
    shutil.rmtree(persist, ignore_errors=True)


def writers(
    args: argparse.Namespace, all_turns: list[tuple[str, str, str, str]], service: Any, level: str
) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    start, results = ctx.Barrier(args.clients + 1), ctx.Queue()
    per = args.client_turns
    procs = [
        ctx.Process(
            target=_client,
            args=(
                i,
                service.url,
                args.vectors_cache,
                all_turns[(i * per) % len(all_turns) :][:per],
                start,
                results,
                level,
            ),
        )
        for i in range(args.clients)
    ]
    for p in procs:
        p.start()
    start.wait(timeout=600)
    rows = [results.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    wall = max(r["ended"] for r in rows) - min(r["began"] for r in rows)
    model = max(r["model_s"] for r in rows)  # subtract the slowest client's model time (misses only)
    messages = sum(r["messages"] for r in rows)
    calls = [c for r in rows for c in r["calls_ms"]]
    parts = {}
    for r in rows:
        for name, values in r["parts"].items():
            parts.setdefault(name, []).extend(values)
    return {
        "level": level,
        "clients": args.clients,
        "turns_per_client": per,
        "messages": messages,
        "wall_s": wall,
        "messages_per_s": messages / max(1e-9, wall - model),
        "call_p50_ms": statistics.median(calls),
        "call_p95_ms": pct(calls, 95),
        "misses": sum(r["misses"] for r in rows),
        "parts_median_ms": {k: round(statistics.median(v), 1) for k, v in sorted(parts.items())},
        "stored": [r["stored"] for r in rows],
    }


def prime_turns(embedder: DictEmbedder, turns: Sequence[tuple[str, str, str, str]]) -> None:
    """Embed every text the writers' add_messages calls embed, once, into the cache."""
    persist = tempfile.mkdtemp(prefix="throughput-prime-")
    core = core_on("memory", persist, embedder, user="prime")
    core.add_messages([("user", "hello"), ("assistant", "hi")], session_id="warmup")
    for session, user_msg, assistant_msg, _ in turns:
        core.add_messages([("user", user_msg), ("assistant", assistant_msg)], session_id=session)
    core.close()
    release_stores()
    shutil.rmtree(persist, ignore_errors=True)
    embedder.save()


# --------------------------------------------------------------------------- 3. with the model
def with_model(args: argparse.Namespace, records: list[MemoryRecord]) -> dict[str, Any]:
    from memory_vec.embeddings import get_embedder

    embedder = get_embedder(MemoryConfig().embedding_model)
    sample = records[: args.model_rows]
    texts = [r.text for r in sample]
    embedder.embed_documents(texts[:8])  # load
    t0 = time.perf_counter()
    for i in range(0, len(texts), 64):
        embedder.embed_documents(texts[i : i + 64])
    floor = time.perf_counter() - t0
    persist = tempfile.mkdtemp(prefix="throughput-model-")
    try:
        core = core_on("chroma", persist, embedder)
        t0 = time.perf_counter()
        core.import_memories(export_of(sample))
        seconds = time.perf_counter() - t0
        core.close()
    finally:
        release_stores()
        shutil.rmtree(persist, ignore_errors=True)
    return {
        "rows": len(sample),
        "embed_rows_per_s": len(sample) / floor,
        "import_rows_per_s": len(sample) / seconds,
        "ratio": seconds / floor,
    }


# --------------------------------------------------------------------------- report
def tables(result: dict[str, Any]) -> str:
    lines = []
    if result.get("bulk"):
        lines += [
            "| backend | mode | rows/s (median of reps) | ratio to raw, per rep | stored rows |",
            "|---|---|---:|---|---:|",
        ]
        rows = result["bulk"]
        for backend in dict.fromkeys(r["backend"] for r in rows):
            raw = {r["rep"]: r["rows_per_s"] for r in rows if r["backend"] == backend and r["mode"] == "raw"}
            for mode in ("raw", "import", "add_messages"):
                mine = [r for r in rows if r["backend"] == backend and r["mode"] == mode]
                ratios = " / ".join(f"{r['rows_per_s'] / raw[r['rep']]:.2f}" for r in mine)
                lines.append(
                    f"| {backend} | {mode} | {statistics.median(r['rows_per_s'] for r in mine):,.0f} "
                    f"| {ratios} | {mine[-1]['stored']} |"
                )
    for w in result.get("writers", []):
        lines += [
            "",
            f"Milvus server, reads {w['level']}, {w['clients']} writer processes × "
            f"{w['turns_per_client']} add_messages pairs: **{w['messages_per_s']:.0f} messages/s** "
            f"(wall {w['wall_s']:.1f} s), per call p50 {w['call_p50_ms']:.0f} ms / "
            f"p95 {w['call_p95_ms']:.0f} ms; "
            "parts (median ms): " + ", ".join(f"{k} {v}" for k, v in w["parts_median_ms"].items()),
        ]
    if result.get("model"):
        m = result["model"]
        lines += [
            "",
            (
                f"With the model ({m['rows']} rows into embedded Chroma): embedder alone "
                f"{m['embed_rows_per_s']:.0f} rows/s, import_memories {m['import_rows_per_s']:.0f} rows/s: "
                f"**{m['ratio']:.2f}×** the embedder's time"
            ),
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo_dev.json)")
    p.add_argument("--vectors-cache", required=True, help=".npy of the cached vectors (+ .keys.json next to it)")
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--batch", type=int, default=64, help="messages per add_messages call in the bulk run")
    p.add_argument(
        "--session-size",
        type=int,
        default=0,
        help="bulk add_messages: sessions of this many consecutive messages (0: the dev sessions)",
    )
    p.add_argument(
        "--add-rows",
        type=int,
        default=1000,
        help="the first N rows go through add_messages (it is slow on Milvus Lite; rows/s compare)",
    )
    p.add_argument("--bulk-backends", nargs="*", default=list(BULK_BACKENDS), choices=BULK_BACKENDS)
    p.add_argument("--clients", type=int, default=8, help="writer processes on the Milvus server (0: skip)")
    p.add_argument("--client-turns", type=int, default=40)
    p.add_argument(
        "--levels",
        nargs="+",
        default=["Bounded", "Session"],
        help="the writers' Milvus read consistency levels, one run each (Bounded: the default)",
    )
    p.add_argument("--model-rows", type=int, default=0, help="rows of the with-model import (0: skip)")
    p.add_argument(
        "--milvus-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the C++ Milvus server's config (repeatable), e.g. "
        "queryNode.segcore.interimIndex.enableIndex=false",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    messages = conversation_messages(data)
    records = import_records(messages, args.rows)
    embedder = DictEmbedder(Path(args.vectors_cache))
    result: dict[str, Any] = {"args": vars(args)}
    if args.bulk_backends and args.reps:
        result["bulk"] = bulk(args, records, embedder)
    if args.clients:
        all_turns = [t for conv in data for t in live_turns(sessions_of(conv))]
        prime_turns(embedder, all_turns[: args.clients * args.client_turns + args.client_turns])
        from benchmarks.backends import start_server

        service = start_server("milvus-server", args.milvus_config)
        try:
            result["writers"] = [writers(args, all_turns, service, level) for level in args.levels]
        finally:
            service.stop()
    if args.model_rows:
        result["model"] = with_model(args, records)
    print(tables(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
