"""The load test's machinery, tiny: a 2-worker FastAPI service with the LangChain
memory over the session's Chroma server and Redis, 3 users x 3 turns, then
the fresh-client verification (benchmarks/loadtest). Its checks must be able
to fail: the second half tampers with the store and the turn log and expects
the verification to name exactly the users touched."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("psutil")

from benchmarks.loadtest.runner import LoadSettings, run_load
from benchmarks.loadtest.verify import verify_stores
from memory_vec import MemoryConfig, MemoryCore
from tests._services import Service
from tests.fixtures_redis import redis_url

pytestmark = [pytest.mark.integration, pytest.mark.services, pytest.mark.slow]

USERS, TURNS = 3, 3


@pytest.mark.timeout(240)
def test_multi_worker_service_keeps_every_users_memories_complete_and_apart(
    chroma_server: Service, redis_server: Service, tmp_path: Path
) -> None:
    assert chroma_server.proc is not None and redis_server.proc is not None
    settings = LoadSettings(
        chroma_url=chroma_server.url,
        redis_url=redis_url(redis_server),
        users=USERS,
        turns=TURNS,
        workers=2,
        timeout_s=60,
    )
    run = run_load(settings, tmp_path, server_pids={"chroma": chroma_server.proc.pid, "redis": redis_server.proc.pid})
    report = run.report

    assert len(report["startup"]["workers"]) == 2
    assert report["turns"]["requests"] == USERS * TURNS and report["turns"]["failed"] == 0, report["turns"]["errors"]
    assert report["floor"]["failed"] == 0
    assert report["turn_details"]["leaks"] == []
    verification = report["verification"]
    assert verification["problems"] == {}
    assert verification["records_by_kind"]["message"] == 2 * USERS * TURNS
    # Turn 3 states each user's canary; recall finds it, so the canary checks can see one.
    assert verification["own_canary_recalled"] == USERS

    # The checks fail when they should: a foreign canary in user 0's session,
    # and user 2's answers swapped in the turn log.
    intruder = run.users[1]
    with MemoryCore(MemoryConfig(**run.store_settings)) as core:
        core.add_message(
            "user", f"my code is {intruder.canary}", user_id=run.users[0].user_id, session_id=run.users[0].session_id
        )
    swapped = {r.turn: r.answer for r in run.turns.records if r.user == 2}
    tampered = [
        dataclasses.replace(r, answer=swapped[1 - r.turn]) if r.user == 2 and r.turn < 2 else r
        for r in run.turns.records
    ]
    problems = verify_stores(run.store_settings, run.users, tampered)["problems"]
    assert set(problems) == {run.users[0].user_id, run.users[2].user_id}
    assert any("other users' canaries" in p for p in problems[run.users[0].user_id])
    assert any(f"{2 * TURNS + 1} message records" in p for p in problems[run.users[0].user_id])
    assert any("differ from what was sent" in p for p in problems[run.users[2].user_id])
