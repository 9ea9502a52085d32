"""One load run over running Chroma and Redis servers: start the service's
workers, drive the turns, then the floor, stop the workers, verify the stores.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.loadtest.generator import PhaseResult, run_floor, run_turns
from benchmarks.loadtest.procs import Proc, free_port
from benchmarks.loadtest.script import UserScript, make_users
from benchmarks.loadtest.verify import verify_stores

__all__ = ["LoadRun", "LoadSettings", "format_table", "run_load"]

REPO = Path(__file__).resolve().parents[2]


@dataclass
class LoadSettings:
    chroma_url: str
    redis_url: str
    users: int = 32
    turns: int = 20
    workers: int = 4
    timeout_s: float = 120.0  # per request
    startup_timeout_s: float = 240.0
    skip_floor: bool = False
    sticky: bool = False  # one keep-alive connection per user (stays on one worker)
    memory_per: str = "request"  # or "session": the service keeps each session's memory
    replica_docs: int | None = None  # MemoryConfig.replica_docs of the service (None: the default)


@dataclass
class LoadRun:
    """A finished run: the report, and what a caller needs to check the stores again."""

    report: dict[str, Any]
    users: list[UserScript]
    turns: PhaseResult
    store_settings: dict[str, Any]


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _cpu_seconds(pids: Sequence[int]) -> dict[int, float]:
    import psutil

    out = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            out[pid] = t.user + t.system
        except psutil.Error:
            out[pid] = float("nan")
    return out


def _busy_share(before: Any, after: Any) -> float:
    """Share of the machine's CPU time (all cores) that was not idle between two samples."""
    total = sum(after) - sum(before)
    idle = after.idle - before.idle + getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0)
    return float((total - idle) / total) if total else 0.0


def _served_cpu(parts: dict[str, float]) -> float:
    return sum(v for k, v in parts.items() if k != "generator")


def _start_service(settings: LoadSettings, collection: str, log_dir: Path) -> tuple[Proc, list[dict[str, Any]], str]:
    port = free_port()
    ready_dir = log_dir / f"ready-{port}"
    ready_dir.mkdir(parents=True)
    env = {
        "LOADTEST_CHROMA_URL": settings.chroma_url,
        "LOADTEST_REDIS_URL": settings.redis_url,
        "LOADTEST_COLLECTION": collection,
        "LOADTEST_READY_DIR": str(ready_dir),
        "LOADTEST_MEMORY_PER": settings.memory_per,
        **({"LOADTEST_REPLICA_DOCS": str(settings.replica_docs)} if settings.replica_docs is not None else {}),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "benchmarks.loadtest.service:app",
        "--app-dir",
        str(REPO),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(settings.workers),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    proc = Proc("service", argv, log_dir / "service.log", env=env, cwd=str(REPO))
    proc.wait_ready(lambda: len(list(ready_dir.glob("*.json"))) >= settings.workers, settings.startup_timeout_s)
    workers = [json.loads(p.read_text()) for p in sorted(ready_dir.glob("*.json"))]
    return proc, workers, f"http://127.0.0.1:{port}"


def _phase_stats(phase: PhaseResult) -> dict[str, Any]:
    ok = phase.ok
    client = [r.client_ms for r in ok]
    server = [r.server_ms for r in ok]
    return {
        "requests": len(phase.records),
        "failed": len(phase.records) - len(ok),
        "wall_s": phase.wall_s,
        "per_s": len(ok) / phase.wall_s if phase.wall_s else 0.0,
        "p50_ms": pct(client, 50),
        "p95_ms": pct(client, 95),
        "max_ms": max(client, default=float("nan")),
        "server_p50_ms": pct(server, 50),
        "server_p95_ms": pct(server, 95),
        "errors": sorted({r.error for r in phase.records if not r.ok})[:5],
    }


def _turn_details(turns: PhaseResult) -> dict[str, Any]:
    by_user: dict[int, list[int]] = {}
    for r in sorted(turns.ok, key=lambda r: (r.user, r.turn)):
        by_user.setdefault(r.user, []).append(r.pid)
    switches = sum(sum(a != b for a, b in itertools.pairwise(p)) for p in by_user.values())
    pairs = sum(max(0, len(p) - 1) for p in by_user.values())
    embedded = Counter(r.embedded_texts for r in turns.ok)
    leaks = [(r.user, r.turn, r.leaked) for r in turns.records if r.leaked]
    return {
        "turns_per_worker": dict(Counter(r.pid for r in turns.ok)),
        "worker_switch_share": switches / pairs if pairs else 0.0,
        "embedded_texts_per_turn": {str(k): v for k, v in sorted(embedded.items())},
        "mean_embedded_texts": statistics.fmean(r.embedded_texts for r in turns.ok) if turns.ok else 0.0,
        "build_memory_p50_ms": pct([r.build_ms for r in turns.ok], 50),
        "p50_ms_by_turn": [
            pct([r.client_ms for r in turns.ok if r.turn == t], 50)
            for t in range(1 + max((r.turn for r in turns.ok), default=-1))
        ],
        "leaks": leaks,
        "turns_with_own_canary_in_context": sum(r.own_canary_seen for r in turns.ok),
    }


def run_load(settings: LoadSettings, log_dir: Path, *, server_pids: dict[str, int] | None = None) -> LoadRun:
    """Run the load once; ``LoadRun.report`` is JSON-serializable.

    ``server_pids`` (name -> pid, e.g. chroma, redis) are sampled for CPU
    seconds during the turn phase.
    """
    import psutil

    run_id = uuid.uuid4().hex[:8]
    collection = f"loadtest_{run_id}"
    users = make_users(settings.users, settings.turns, run_id)
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    proc, workers, base_url = _start_service(settings, collection, log_dir)
    startup_s = time.perf_counter() - started
    try:
        worker_pids = [w["pid"] for w in workers]
        watched = {**{f"worker-{p}": p for p in worker_pids}, **(server_pids or {}), "generator": os.getpid()}
        load_before = os.getloadavg()
        cpu_before, sys_before = _cpu_seconds(list(watched.values())), psutil.cpu_times()
        turns = asyncio.run(run_turns(users, base_url, timeout_s=settings.timeout_s, sticky=settings.sticky))
        cpu_after, sys_after = _cpu_seconds(list(watched.values())), psutil.cpu_times()
        load_after = os.getloadavg()
        floor, cpu_floor = None, {}
        if not settings.skip_floor:
            answers = {(r.user, r.turn): r.answer for r in turns.ok}
            floor = asyncio.run(
                run_floor(users, answers, base_url, timeout_s=settings.timeout_s, sticky=settings.sticky)
            )
            cpu_floor = _cpu_seconds(list(watched.values()))
    finally:
        proc.stop()

    def by_part(before: dict[int, float], after: dict[int, float]) -> dict[str, float]:
        spent = {name: after[pid] - before[pid] for name, pid in watched.items()}
        return {
            "workers": sum(v for k, v in spent.items() if k.startswith("worker-")),
            **{k: v for k, v in spent.items() if not k.startswith("worker-")},
        }

    cpu_turns = by_part(cpu_before, cpu_after)
    store_settings = {
        "backend": "chroma",
        "url": settings.chroma_url,
        "redis_url": settings.redis_url,
        "collection": collection,
    }
    verification = verify_stores(store_settings, users, turns.records)
    report: dict[str, Any] = {
        "settings": {**settings.__dict__, "collection": collection},
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_before": load_before,
            "loadavg_after": load_after,
            "machine_busy_share": _busy_share(sys_before, sys_after),
        },
        "startup": {"service_ready_s": startup_s, "workers": workers},
        "turns": _phase_stats(turns),
        "turn_details": _turn_details(turns),
        "floor": _phase_stats(floor) if floor else None,
        "cpu_seconds_during_turns": cpu_turns,
        "cpu_seconds_during_floor": by_part(cpu_after, cpu_floor) if floor else None,
        "verification": verification,
        "turn_rows": [
            [r.user, r.turn, r.ok, round(r.client_ms, 1), round(r.server_ms, 1), r.pid, r.embedded_texts]
            for r in turns.records
        ],
    }
    if floor:
        report["ratios"] = {
            "p50": report["turns"]["p50_ms"] / report["floor"]["p50_ms"],
            "p95": report["turns"]["p95_ms"] / report["floor"]["p95_ms"],
            "server_p50": report["turns"]["server_p50_ms"] / report["floor"]["server_p50_ms"],
            "throughput": report["floor"]["per_s"] / report["turns"]["per_s"],
            # CPU seconds per request, what a turn costs whatever else the machine
            # runs: the workers, Chroma and Redis for a turn; the workers alone for
            # the floor (it touches nothing else, and Chroma may still be indexing).
            "cpu_per_request": (_served_cpu(cpu_turns) / max(1, len(turns.ok)))
            / (report["cpu_seconds_during_floor"]["workers"] / max(1, len(floor.ok)) or float("nan")),
        }
    return LoadRun(report, users, turns, store_settings)


def format_table(report: dict[str, Any]) -> str:
    s, t, f = report["settings"], report["turns"], report["floor"]
    lines = [
        (
            f"{s['users']} users x {s['turns']} turns, {s['workers']} workers, "
            f"load average {report['machine']['loadavg_before'][0]:.2f} -> {report['machine']['loadavg_after'][0]:.2f}"
        ),
        "",
        "| phase | requests | failed | p50 ms | p95 ms | max ms | server p50 ms | server p95 ms | per s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, p in (("turn", t), ("floor", f)):
        if p:
            lines.append(
                f"| {name} | {p['requests']} | {p['failed']} | {p['p50_ms']:.0f} | {p['p95_ms']:.0f} | "
                f"{p['max_ms']:.0f} | {p['server_p50_ms']:.0f} | {p['server_p95_ms']:.0f} | "
                f"{p['per_s']:.2f} |"
            )
    if "ratios" in report:
        r = report["ratios"]
        lines += [
            "",
            (
                f"turn / floor: p50 {r['p50']:.2f}x, p95 {r['p95']:.2f}x, server p50 {r['server_p50']:.2f}x, "
                f"throughput {r['throughput']:.2f}x, CPU per request {r['cpu_per_request']:.2f}x"
            ),
        ]
    d, v = report["turn_details"], report["verification"]
    lines += [
        (
            f"texts embedded per turn: {d['embedded_texts_per_turn']} (mean {d['mean_embedded_texts']:.2f}); "
            f"a user's next turn on another worker: {d['worker_switch_share']:.0%}"
        ),
        (
            f"canary leaks during the run: {len(d['leaks'])}; users with problems after the run: "
            f"{v['users_with_problems']} of {v['users']}; records by kind: {v['records_by_kind']}"
        ),
    ]
    return "\n".join(lines)
