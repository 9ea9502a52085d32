"""Redis and HTTP calls of a turn, by thread: ``backend_turns.py`` with its client calls counted.

Runs ``benchmarks/backend_turns.py`` with the same arguments and, at exit,
prints every Redis command (scripts show as ``EVALSHA``, pipelines as one
call) and every HTTP request (the Chroma server's client) made during the
run: calls and total milliseconds, split into the turn's thread
(``MainThread``) and the others (the writer, the vector cache's sender, the
lease renewer). Divide by warm-up + measured turns for per-turn figures (the
fill goes through ``backend.upsert`` and makes no Redis call). The wrappers
cost a few microseconds a call, so read the turn times of ``backend_turns.py``
itself for speed.

Usage::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/turn_io.py --data ../shared/data/locomo/locomo_dev.json \\
        --vectors-cache /tmp/turn_vectors.npy --turns 60 --sizes 10000 --backends chroma-server --server-state redis
"""

from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import redis.client

from benchmarks import backend_turns

CALLS: defaultdict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])


def _counted(cls: type, method: str, label: Callable[[tuple[Any, ...]], str]) -> None:
    original = getattr(cls, method)

    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            thread = "turn" if threading.current_thread() is threading.main_thread() else "other"
            entry = CALLS[(thread, label(args))]
            entry[0] += 1
            entry[1] += time.perf_counter() - started

    setattr(cls, method, call)


def report() -> str:
    lines = ["| thread | call | calls | total ms | ms per call |", "|---|---|---:|---:|---:|"]
    for (thread, name), (count, seconds) in sorted(CALLS.items(), key=lambda kv: (kv[0][0] != "turn", -kv[1][1])):
        lines.append(f"| {thread} | {name} | {int(count)} | {seconds * 1000:.1f} | {seconds * 1000 / count:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    _counted(redis.client.Redis, "execute_command", lambda a: f"redis {a[1]}" if len(a) > 1 else "redis")
    _counted(redis.client.Pipeline, "execute", lambda a: "redis pipeline")
    _counted(httpx.Client, "send", lambda a: "http")
    code = backend_turns.main(argv)
    print(report())
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
