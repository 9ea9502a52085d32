"""Backends at scale: ingest throughput, recall latency and memory per backend.

For each backend and store size, in a fresh child process (clean RSS) and, for
server backends, against a fresh server started with the same argv as the test
fixtures (tests/fixtures_chroma.py, tests/fixtures_milvus.py):

1. **fill**: ``size`` records spread evenly over ``users`` users (10 sessions
   each) are written with ``backend.upsert`` in batches of 1,000, with
   **synthetic 384-d unit vectors** (seeded Gaussian, normalised) and short
   synthetic texts. Reported as records/s (wall time of the whole fill,
   including the engine's indexing it does inline; a server's background index
   build after the last write is not waited for, except Milvus' ``flush`` on
   the first query; ``--settle``: Milvus flushes and waits until the server
   reports every index "Finished" before anything is timed).
2. **backend.query**: ``--queries`` queries, each for a random user with the
   core's user-scope filter ``RecordFilter(user_id=u, kinds=("message",
   "fact"), include_shared=True)`` and ``k=200`` (``candidate_pool``), random
   unit query vectors; p50/p95 ms (after ``--warmup`` untimed queries).
3. **MemoryCore.recall** (``--recall-queries``, 0 to skip): a MemoryCore on the
   same backend with the real default embedder; for each of that many users
   (a new one each time), a first recall ("cold": it builds the user's keyword
   index from the engine's rows) then a second with a new query text ("recall": embed query +
   vector query + BM25 + ranking, what every later turn of the user pays);
   the process's RSS after 20, 100, 250, ... users (flat once the caches'
   bound is reached: ``keyword_cache_users``).
4. **add_messages**: ``--ingest-messages`` real messages (user/assistant pairs
   of a synthetic chat) through ``MemoryCore.add_messages`` with the real
   default embedder (contextual vectors, conflict check), one call per pair,
   then ``flush``; messages/s. This is dominated by the embedder.
5. **memory**: RSS of the benchmark process (embedded backends: the store
   lives here) measured after the fill and queries, before the embedder is
   loaded; for servers also the server's RSS (process group, via psutil).

Usage::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/backends.py \\
        --backends memory chroma chroma-server milvus-lite milvus-lite-server milvus-server \\
        --sizes 10000 100000 --out /tmp/backends.json
    # 1M over 10k users, synthetic vectors only:
    python benchmarks/backends.py --backends memory milvus-server --sizes 1000000 --users 10000 \\
        --recall-queries 0 --ingest-messages 0

``--users`` defaults to 1,000 below 1M records and 10,000 from 1M. The C++
Milvus server needs ports 2379/2380 free (one per machine).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from memory_vec.testing import parts  # noqa: E402

BACKENDS = ("memory", "chroma", "chroma-server", "milvus-lite", "milvus-lite-server", "milvus-server")
DIM = 384
BATCH = 1000
SESSIONS_PER_USER = 10
WORDS = (
    "budget",
    "meeting",
    "travel",
    "flight",
    "hotel",
    "dinner",
    "project",
    "deadline",
    "doctor",
    "gym",
    "birthday",
    "concert",
    "book",
    "movie",
    "garden",
    "car",
    "rent",
    "salary",
    "coffee",
    "weekend",
)


RSS_CHECKPOINTS = (20, 100, 250, 500, 1000, 1500, 2000, 3000)  # users recalled so far


def _rss_mb(pid: int | None = None, group: bool = False) -> float:
    import psutil

    proc = psutil.Process(pid or os.getpid())
    procs = [proc]
    if group:
        procs += proc.children(recursive=True)
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total / 2**20


def _settle_milvus(backend: Any, timeout: float = 1800.0) -> float:
    """Seal the rows and wait until the server reports every index of the collection
    "Finished" (toward the steady state of a store filled earlier); returns the seconds waited."""
    t = time.perf_counter()
    backend.flush()
    client, name = backend._client, backend.collection
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # (2.3 reports no indexed_rows for a last small segment, nor pending rows that fall to 0)
        if all(client.describe_index(name, index).get("state") == "Finished" for index in client.list_indexes(name)):
            break
        time.sleep(2)
    time.sleep(10)  # the query nodes swap in the indexed segments a moment later
    return time.perf_counter() - t


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


# --------------------------------------------------------------------------- servers
def start_server(kind: str, milvus_config: Sequence[str] = ()) -> Any:
    """A fresh server on a free port, with the fixtures' argv; returns a tests._services.Service.

    ``milvus_config``: ``KEY=VALUE`` settings for the C++ server's config
    (its ``--extra-config``), e.g. ``queryNode.segcore.interimIndex.enableIndex=false``.
    """
    from tests._services import find_binary, free_port, port_open, start_service

    if kind == "chroma-server":
        from tests.fixtures_chroma import _heartbeat_ok

        binary = find_binary("chroma", "MEMVEC_CHROMA_BIN")
        return start_service(
            "chroma",
            lambda port, d: [binary, "run", "--path", f"{d}/data", "--host", "127.0.0.1", "--port", str(port)],
            ready=_heartbeat_ok,
            timeout=60,
        )
    from tests.fixtures_milvus import _MILVUS_PORT_OPTIONS, DEFAULT_MILVUS_SERVER, _client_ready

    if kind == "milvus-lite-server":
        binary = find_binary("milvus-lite")
        return start_service(
            "milvus-lite",
            lambda port, d: [
                binary,
                "server",
                "--data-dir",
                os.path.join(d, "db"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            ready=_client_ready,
            timeout=60,
        )
    if kind == "milvus-server":
        binary = os.environ.get("MILVUS_SERVER_BIN") or DEFAULT_MILVUS_SERVER
        deadline = time.monotonic() + 60  # the previous size's server may still be shutting down
        while port_open(2379) and time.monotonic() < deadline:
            time.sleep(1)
        if port_open(2379):
            raise RuntimeError("port 2379 is busy (another C++ Milvus server?); not starting milvus-server")
        extra = {name: free_port() for name in _MILVUS_PORT_OPTIONS}

        def argv(port: int, d: str) -> list[str]:
            args = [binary, "--data", os.path.join(d, "milvus"), "--proxy-port", str(port), "--etcd-port", "2379"]
            for name, value in extra.items():
                args += [f"--{name}-port", str(value)]
            return args + [arg for setting in milvus_config for arg in ("--extra-config", setting)]

        return start_service("milvus-server", argv, ready=_client_ready, timeout=180)
    raise ValueError(kind)


# --------------------------------------------------------------------------- child
def make_config(kind: str, url: str | None, persist: str, user: str, milvus_ef: int | None = None) -> Any:
    from memory_vec import MemoryConfig

    backend = {"memory": "memory", "chroma": "chroma", "chroma-server": "chroma"}.get(kind, "milvus")
    options = {"search_params": {"ef": milvus_ef}} if milvus_ef and backend == "milvus" else {}
    return MemoryConfig(
        backend=backend,
        url=url,
        persist_dir=persist,
        user_id=user,
        session_id="bench",
        backend_timeout=120.0,
        backend_options=options,
    )


def synthetic_records(start: int, stop: int, users: int, t0: float) -> list[Any]:
    from memory_vec._model.records import MemoryRecord

    out = []
    for i in range(start, stop):
        u = i % users
        n = i // users  # this user's n-th memory
        w1, w2 = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        out.append(
            MemoryRecord(
                id=f"r{i:08d}",
                text=f"note {n} of user {u}: the {w1} and the {w2} ({i})",
                role="user" if i % 2 == 0 else "assistant",
                user_id=f"u{u:05d}",
                session_id=f"s{n % SESSIONS_PER_USER}",
                timestamp=t0 + i,
                kind="message",
                seq=n,
            )
        )
    return out


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def child(args: argparse.Namespace) -> dict[str, Any]:
    from memory_vec._core import RECALL_KINDS
    from memory_vec.backends import RecordFilter, create_backend

    persist = tempfile.mkdtemp(prefix=f"memvec-bench-{args.child}-")
    result: dict[str, Any] = {"backend": args.child, "size": args.size, "users": args.users}
    rss0 = _rss_mb()
    cfg = make_config(args.child, args.url, persist, "u00000", args.milvus_ef)
    if args.milvus_ef and args.child.startswith("milvus"):
        result["milvus_ef"] = args.milvus_ef
    backend = create_backend(cfg)
    from memory_vec.embeddings import get_embedder

    model_id = get_embedder(cfg.embedding_model).model_id  # the default embedder's id (model loads lazily)
    backend.open(dimension=DIM, model_id=model_id)
    inner = getattr(backend, "inner", backend)
    if hasattr(inner, "_pk_enabled"):
        result["milvus_partition_key"] = bool(inner._pk_enabled)
    rng = np.random.default_rng(0)
    t_base = time.time() - args.size
    t = time.perf_counter()
    for start in range(0, args.size, BATCH):
        stop = min(args.size, start + BATCH)
        backend.upsert(synthetic_records(start, stop, args.users, t_base), unit_vectors(rng, stop - start))
    fill = time.perf_counter() - t
    result["fill_s"] = fill
    result["upsert_records_per_s"] = args.size / fill
    if args.settle and hasattr(inner, "_client"):
        result["settle_s"] = _settle_milvus(inner)

    def where(u: int) -> Any:
        return RecordFilter(user_id=f"u{u:05d}", kinds=RECALL_KINDS, include_shared=True)

    qrng = np.random.default_rng(1)
    t = time.perf_counter()
    first = backend.query(unit_vectors(qrng, 1)[0], k=200, where=where(0))
    result["first_query_ms"] = (time.perf_counter() - t) * 1000  # includes Milvus' load/flush after writes
    expected = len(range(0, args.size, args.users)) if args.size >= args.users else 1
    result["hits_first_query"] = len(first)
    result["expected_hits"] = min(200, expected)
    for _ in range(args.warmup):
        backend.query(unit_vectors(qrng, 1)[0], k=200, where=where(int(qrng.integers(args.users))))
    lat = []
    hits = []
    for _ in range(args.queries):
        q = unit_vectors(qrng, 1)[0]
        w = where(int(qrng.integers(args.users)))
        t = time.perf_counter()
        h = backend.query(q, k=200, where=w)
        lat.append((time.perf_counter() - t) * 1000)
        hits.append(len(h))
    result["query_p50_ms"], result["query_p95_ms"] = _pct(lat, 50), _pct(lat, 95)
    result["query_mean_hits"] = float(np.mean(hits))
    result["rss_mb_after_fill"] = _rss_mb(group=True)  # Milvus Lite runs its engine in a child process
    result["rss_mb_start"] = rss0
    if args.server_pid:
        result["server_rss_mb"] = _rss_mb(args.server_pid, group=True)

    if args.recall_queries or args.ingest_messages:
        from memory_vec import MemoryCore

        core = MemoryCore(cfg, backend=backend)
        if parts(core).embedder.dimension != DIM:
            raise RuntimeError(f"default embedder has dimension {parts(core).embedder.dimension}, expected {DIM}")
        core.recall("warm up the model", user_id="u00000")
        rlat, cold, rss_by_users = [], [], {}
        order = qrng.permutation(args.users)  # a new user each time (until every user was asked)
        for j in range(args.recall_queries):
            u = f"u{int(order[j % args.users]):05d}"
            t = time.perf_counter()
            core.recall(f"what did I say about the {WORDS[j % len(WORDS)]}?", user_id=u)  # loads the user's data
            cold.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            core.recall(f"when is the {WORDS[(j * 3 + 1) % len(WORDS)]} {j}?", user_id=u)
            rlat.append((time.perf_counter() - t) * 1000)
            if j + 1 in RSS_CHECKPOINTS or j + 1 == args.recall_queries:
                rss_by_users[j + 1] = round(_rss_mb(group=True), 1)
        if rlat:
            result["recall_p50_ms"], result["recall_p95_ms"] = _pct(rlat, 50), _pct(rlat, 95)
            result["recall_cold_p50_ms"], result["recall_cold_p95_ms"] = _pct(cold, 50), _pct(cold, 95)
            result["rss_mb_by_recalled_users"] = rss_by_users
        if args.ingest_messages:
            pairs = args.ingest_messages // 2
            t = time.perf_counter()
            for j in range(pairs):
                core.add_messages(
                    [
                        ("user", f"Remind me about the {WORDS[j % len(WORDS)]} on day {j}, it matters."),
                        ("assistant", f"Noted: the {WORDS[(j + 5) % len(WORDS)]} on day {j}."),
                    ],
                    user_id=f"u{j % args.users:05d}",
                    session_id="bench-ingest",
                )
            core.flush()
            result["add_messages_per_s"] = 2 * pairs / (time.perf_counter() - t)
            result["ingest_messages"] = 2 * pairs
        result["rss_mb_with_embedder"] = _rss_mb(group=True)
        core.close()
    try:
        backend.close()
    finally:
        shutil.rmtree(persist, ignore_errors=True)
    return result


# --------------------------------------------------------------------------- parent
def run_one(kind: str, size: int, users: int, args: argparse.Namespace) -> dict[str, Any]:
    service = None
    url = None
    try:
        if kind in ("chroma-server", "milvus-lite-server", "milvus-server"):
            t = time.perf_counter()
            service = start_server(kind)
            url = service.url
            print(f"  {kind} up on {url} in {time.perf_counter() - t:.1f}s (pid {service.proc.pid})", flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            out = tmp.name
        cmd = [
            sys.executable,
            __file__,
            "--child",
            kind,
            "--size",
            str(size),
            "--users",
            str(users),
            "--queries",
            str(args.queries),
            "--warmup",
            str(args.warmup),
            "--recall-queries",
            str(args.recall_queries),
            "--ingest-messages",
            str(args.ingest_messages),
            "--child-out",
            out,
        ]
        if args.milvus_ef:
            cmd += ["--milvus-ef", str(args.milvus_ef)]
        if args.settle:
            cmd += ["--settle"]
        if url:
            cmd += ["--url", url]
        if service is not None:
            cmd += ["--server-pid", str(service.proc.pid)]
        t = time.perf_counter()
        proc = subprocess.run(cmd, timeout=args.timeout, check=False)
        if proc.returncode != 0:
            return {"backend": kind, "size": size, "users": users, "error": f"child exit {proc.returncode}"}
        result = json.loads(Path(out).read_text())
        result["wall_s"] = time.perf_counter() - t
        return result
    except subprocess.TimeoutExpired:
        return {"backend": kind, "size": size, "users": users, "error": f"did not finish in {args.timeout}s"}
    except Exception as exc:  # a server that does not start is reported, not fatal
        return {"backend": kind, "size": size, "users": users, "error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        if service is not None:
            service.stop()
            shutil.rmtree(service.data_dir, ignore_errors=True)


def _fmt(v: Any, spec: str) -> str:
    return "–" if v is None else format(v, spec)


def report(paths: list[str]) -> str:
    """Markdown table of JSON-lines results (last result per backend and size wins)."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                name = r["backend"] + (f" (ef={r['milvus_ef']})" if r.get("milvus_ef") else "")
                rows[(name, r["size"])] = r
    order = {b: i for i, b in enumerate(BACKENDS)}
    out = [
        (
            "| backend | stored / users | upsert rec/s (synthetic) | query p50 / p95 ms | hits | "
            "recall p50 / p95 ms (first of a user) | add_messages msg/s (real embedder) | RSS MB: bench process | "
            "RSS MB: server |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (b, size), r in sorted(rows.items(), key=lambda kv: (order.get(kv[0][0].split()[0], 99), kv[0][0], kv[0][1])):
        if "error" in r:
            out.append(f"| {b} | {size:,} / {r['users']:,} | {r['error']} | | | | | | |")
            continue
        recall = f"{r['recall_p50_ms']:.1f} / {r['recall_p95_ms']:.1f}" if "recall_p50_ms" in r else "not run"
        if "recall_cold_p50_ms" in r:
            recall += f" ({r['recall_cold_p50_ms']:.1f} / {r['recall_cold_p95_ms']:.1f})"
        ingest = f"{r['add_messages_per_s']:.1f}" if "add_messages_per_s" in r else "not run"
        out.append(
            f"| {b} | {size:,} / {r['users']:,} | {r['upsert_records_per_s']:,.0f} | "
            f"{r['query_p50_ms']:.1f} / {r['query_p95_ms']:.1f} | {r['query_mean_hits']:.1f} | {recall} | {ingest} | "
            f"{r['rss_mb_after_fill']:,.0f} | {_fmt(r.get('server_rss_mb'), ',.0f')} |"
        )
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    p.add_argument("--users", type=int, default=None, help="default: 1,000 below 1M records, 10,000 from 1M")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--recall-queries", type=int, default=20)
    p.add_argument("--ingest-messages", type=int, default=100)
    p.add_argument("--timeout", type=float, default=900, help="seconds per backend and size")
    p.add_argument(
        "--milvus-ef",
        type=int,
        default=None,
        help="Milvus HNSW search ef (backend_options search_params); default: the backend's (128)",
    )
    p.add_argument(
        "--settle",
        action="store_true",
        help="Milvus: after the fill, flush and wait until every index reads Finished before timing",
    )
    p.add_argument("--out", default=None, help="append results (JSON lines) here")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--url", default=None, help=argparse.SUPPRESS)
    p.add_argument("--server-pid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    p.add_argument("--report", nargs="+", default=None, metavar="JSONL", help="print a markdown table and exit")
    args = p.parse_args()
    if args.report:
        print(report(args.report))
        return
    if args.child:
        result = child(args)
        Path(args.child_out).write_text(json.dumps(result))
        return
    for kind in args.backends:
        for size in args.sizes:
            users = args.users or (10_000 if size >= 1_000_000 else 1_000)
            print(f"{kind} size={size} users={users}", flush=True)
            r = run_one(kind, size, users, args)
            print("  " + json.dumps(r), flush=True)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as f:
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run finally: blocks (stop servers)
    main()
