"""CLI: ``python -m benchmarks.loadtest --users 32 --turns 20 --workers 4 --out DIR``.

Starts a Chroma server and Redis on free loopback ports (unless
``--chroma-url`` / ``--redis-url`` name running ones), runs the load
(``runner.run_load``), stops everything it started, prints the table and
writes ``report.json`` and the servers' logs under ``--out``. Exit status 1
when a canary leaked or the verification found a problem.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.loadtest.procs import Proc, start_chroma, start_redis
from benchmarks.loadtest.runner import LoadSettings, format_table, run_load
from memory_vec import release_stores


def _binary(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found: install it (see benchmarks/loadtest/__init__.py) or pass its URL")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.loadtest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4, help="uvicorn worker processes")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/loadtest"))
    parser.add_argument("--chroma-url", help="a running Chroma server (default: start one)")
    parser.add_argument("--redis-url", help="a running Redis (default: start one)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    parser.add_argument("--skip-floor", action="store_true", help="no floor phase")
    parser.add_argument(
        "--sticky",
        action="store_true",
        help="one keep-alive connection per user, so a user stays on one worker "
        "(default: a new connection per request, spread over the workers)",
    )
    parser.add_argument(
        "--memory-per",
        choices=["request", "session"],
        default="request",
        help="the service builds the memory per request (default) or keeps it per session",
    )
    parser.add_argument(
        "--replica-docs",
        type=int,
        default=None,
        help="MemoryConfig.replica_docs of the service's stores (default: the config's; "
        "0 reads every recall from the Chroma server)",
    )
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="memvec-loadtest-"))
    started: list[Proc] = []
    try:
        chroma_url, redis_url, pids = args.chroma_url, args.redis_url, {}
        if chroma_url is None:
            (data / "chroma").mkdir()
            chroma, chroma_url = start_chroma(_binary("chroma"), data / "chroma", args.out)
            started.append(chroma)
            pids["chroma"] = chroma.pid
        if redis_url is None:
            redis, redis_url = start_redis(_binary("redis-server"), data, args.out)
            started.append(redis)
            pids["redis"] = redis.pid
        settings = LoadSettings(
            chroma_url=chroma_url,
            redis_url=redis_url,
            users=args.users,
            turns=args.turns,
            workers=args.workers,
            timeout_s=args.timeout,
            skip_floor=args.skip_floor,
            sticky=args.sticky,
            memory_per=args.memory_per,
            replica_docs=args.replica_docs,
        )
        report = run_load(settings, args.out, server_pids=pids).report
    finally:
        release_stores()
        for proc in reversed(started):
            proc.stop()
        shutil.rmtree(data, ignore_errors=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(format_table(report))
    verification = report["verification"]
    for user, problems in list(verification["problems"].items())[:10]:
        print(f"PROBLEM {user}: {'; '.join(problems[:5])}")
    bad = report["turn_details"]["leaks"] or verification["users_with_problems"] or report["turns"]["failed"]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
