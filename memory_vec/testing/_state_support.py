"""Shared pieces of the working-state conformance suite: the hooks a store's
test class provides, sample data, and helpers that run threads and processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

import pytest

from memory_vec.state.base import DeadLetter, NewMessage, StateStore

__all__ = ["HOSTILE_IDS", "StateSuiteBase", "dead_letter", "in_threads", "new_message"]

T = TypeVar("T")

HOSTILE_IDS = ("u:1", "a:b:c", "x' or 1==1", 'q"uote', "用户🙂", "back\\slash")


def new_message(i: int | str, content: str | None = None, **fields: Any) -> NewMessage:
    """A message with deterministic defaults."""
    fields.setdefault("role", "user")
    fields.setdefault("timestamp", 1_700_000_000.123456789 + (i if isinstance(i, int) else 0))
    fields.setdefault("tokens", 3)
    return NewMessage(id=f"m{i}", content=content if content is not None else f"message {i}", **fields)


def dead_letter(record_id: str, user_id: str = "u1", failed_at: float = 1.0, **fields: Any) -> DeadLetter:
    """A dead letter whose record looks like ``dataclasses.asdict(MemoryRecord)``."""
    fields.setdefault("session_id", "s1")
    fields.setdefault("error", "rejected: dimension mismatch")
    fields.setdefault(
        "record",
        {
            "id": record_id,
            "text": f'日本語 "q" 🙂 {record_id}',
            "user_id": user_id,
            "timestamp": 1_700_000_000.25,
            "kind": "message",
            "metadata": {"k": [1, True, None]},
            "valid_to": None,
            "source_ids": ["a", "b"],
            "importance": 0.1 + 0.2,
        },
    )
    fields.setdefault("vector", [0.1, -2.5e-8, 1 / 3])
    return DeadLetter(record_id=record_id, user_id=user_id, failed_at=failed_at, **fields)


def in_threads(n: int, fn: Callable[[int], T]) -> list[T]:
    """Run ``fn(0..n-1)`` in ``n`` threads released together; results in order, errors re-raised."""
    barrier = threading.Barrier(n)

    def run(t: int) -> T:
        barrier.wait(30)
        return fn(t)

    with ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(run, t) for t in range(n)]
        return [f.result(timeout=180) for f in futures]


class StateSuiteBase:
    """Capability flags and hooks a store's test class sets (see :mod:`.state_conformance`)."""

    supports_reopen: ClassVar[bool] = False
    supports_multiprocess: ClassVar[bool] = False

    @pytest.fixture
    def store(self) -> Iterator[StateStore]:
        """Yield an empty store (abstract)."""
        raise NotImplementedError("StateStoreConformance subclasses must define a `store` fixture")

    def reopen(self, store: StateStore) -> StateStore:
        raise NotImplementedError

    def subprocess_code(self, store: StateStore) -> str | None:
        return None

    @contextmanager
    def reopened(self, store: StateStore) -> Iterator[StateStore]:
        """Close ``store`` and yield a new instance on its storage (skip if not persistent)."""
        if not self.supports_reopen:
            pytest.skip("store does not persist")
        store.close()
        fresh = self.reopen(store)
        try:
            yield fresh
        finally:
            fresh.close()

    def in_processes(self, store: StateStore, op: str, *, procs: int = 4, n: int = 30) -> list[list[Any]]:
        """Run ``op`` (``append`` or ``version``) ``n`` times in each of ``procs`` fresh
        interpreters; each returns what its ``new_keyword_version`` calls returned."""
        if not self.supports_multiprocess:
            pytest.skip("store is single-process")
        code = self.subprocess_code(store)
        if code is None:
            pytest.skip("subprocess_code() not provided")
        children = [
            subprocess.Popen(
                [sys.executable, "-c", _CHILD],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(procs)
        ]
        jobs = [json.dumps({"code": code, "op": op, "prefix": f"p{p}", "n": n}) for p in range(procs)]
        outputs = [child.communicate(job, timeout=180) for child, job in zip(children, jobs)]
        for child, (_, err) in zip(children, outputs):
            assert child.returncode == 0, err[-3000:]
        return [json.loads(out) for out, _ in outputs]


_CHILD = textwrap.dedent("""
    import json, sys
    from memory_vec.testing.state_conformance import new_message
    job = json.loads(sys.stdin.read())
    ns = {}
    exec(job["code"], ns)
    store = ns["store"]
    p, counters = job["prefix"], []
    for i in range(job["n"]):
        if job["op"] == "append":
            store.append("u1", "s1", [new_message(f"{p}-{i}"), new_message(f"{p}-{i}b")])
        else:
            counters.append(store.new_keyword_version("u1", f"{p}-{i}"))
    store.close()
    print(json.dumps(counters))
""")
