"""The bounded async load generator: every simulated user runs its turns in
order (a turn starts when the previous one has answered), all users at once.

It checks each reply as it comes: a canary token of another user anywhere in
the context the service built (history, recalled memories) or in the answer
is a leak, recorded with the turn.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks.loadtest.script import UserScript

__all__ = ["CANARY", "PhaseResult", "TurnRecord", "run_floor", "run_turns"]

CANARY = re.compile(r"CNRY\d{3}X[0-9A-F]{8}")


@dataclass
class TurnRecord:
    user: int
    turn: int
    ok: bool
    client_ms: float
    server_ms: float = 0.0
    build_ms: float = 0.0
    pid: int = 0
    answer: str = ""
    embedded_texts: int = 0
    error: str = ""
    leaked: list[str] = field(default_factory=list)
    own_canary_seen: bool = False


@dataclass
class PhaseResult:
    records: list[TurnRecord]
    wall_s: float

    @property
    def ok(self) -> list[TurnRecord]:
        return [r for r in self.records if r.ok]


async def _run(users: Sequence[UserScript], base_url: str, timeout_s: float, sticky: bool, one: Any) -> PhaseResult:
    # sticky: one keep-alive connection per user, so a user stays on the worker
    # that accepted it (a sticky load balancer). Otherwise a new connection per
    # request, and the kernel hands each to whichever worker accepts first.
    limits = httpx.Limits(max_connections=4 if sticky else len(users) + 4, max_keepalive_connections=1 if sticky else 0)

    async def user(i: int, script: UserScript) -> list[TurnRecord]:
        async with httpx.AsyncClient(base_url=base_url, timeout=timeout_s, limits=limits) as client:
            records: list[TurnRecord] = await one(client, i, script)
            return records

    started = time.perf_counter()
    per_user = await asyncio.gather(*(user(i, script) for i, script in enumerate(users)))
    wall = time.perf_counter() - started
    return PhaseResult([r for records in per_user for r in records], wall)


async def _post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> tuple[dict[str, Any] | None, float, str]:
    started = time.perf_counter()
    try:
        response = await client.post(path, json=body)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data, (time.perf_counter() - started) * 1000, ""
    except (httpx.HTTPError, ValueError) as exc:
        return None, (time.perf_counter() - started) * 1000, f"{type(exc).__name__}: {exc}"[:300]


async def run_turns(
    users: Sequence[UserScript], base_url: str, *, timeout_s: float = 120.0, sticky: bool = False
) -> PhaseResult:
    """Every user's turns through ``POST /turn``; each reply checked for other users' canaries."""

    async def one(client: httpx.AsyncClient, u: int, script: UserScript) -> list[TurnRecord]:
        records = []
        for t, message in enumerate(script.messages):
            body = {"user_id": script.user_id, "session_id": script.session_id, "message": message}
            data, ms, error = await _post(client, "/turn", body)
            if data is None:
                records.append(TurnRecord(u, t, False, ms, error=error))
                continue
            seen = set(CANARY.findall("\n".join([data["history"], data["relevant"], data["answer"]])))
            records.append(
                TurnRecord(
                    u,
                    t,
                    True,
                    ms,
                    server_ms=float(data["server_ms"]),
                    build_ms=float(data["build_ms"]),
                    pid=int(data["pid"]),
                    answer=data["answer"],
                    embedded_texts=int(data["embedded_texts"]),
                    leaked=sorted(seen - {script.canary}),
                    own_canary_seen=script.canary in seen,
                )
            )
        return records

    return await _run(users, base_url, timeout_s, sticky, one)


async def run_floor(
    users: Sequence[UserScript],
    answers: dict[tuple[int, int], str],
    base_url: str,
    *,
    timeout_s: float = 120.0,
    sticky: bool = False,
) -> PhaseResult:
    """The same users, concurrency and texts through ``POST /floor`` (embeddings only)."""

    async def one(client: httpx.AsyncClient, u: int, script: UserScript) -> list[TurnRecord]:
        records = []
        for t, message in enumerate(script.messages):
            data, ms, error = await _post(client, "/floor", {"message": message, "answer": answers.get((u, t), "")})
            if data is None:
                records.append(TurnRecord(u, t, False, ms, error=error))
            else:
                records.append(TurnRecord(u, t, True, ms, server_ms=float(data["server_ms"]), pid=int(data["pid"])))
        return records

    return await _run(users, base_url, timeout_s, sticky, one)
