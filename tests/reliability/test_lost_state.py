"""A working state lost while the session's messages stay stored: a Redis
without persistence that restarted, or state='memory' over a persistent
backend after a restart. The next messages must not take the stored ones'
seqs again (neighbour windows and exports order a session by seq)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._storage.store import release_stores

from .conftest import EMBEDDER, _config_factory

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fresh_stores")]


def _message_seqs(core: MemoryCore, session_id: str) -> list[tuple[int, str]]:
    export = core.export_memories()
    return sorted(
        (r["seq"], r["text"]) for r in export["records"] if r["kind"] == "message" and r["session_id"] == session_id
    )


@pytest.mark.slow
@pytest.mark.parametrize("state", ["redis", "memory"])
def test_a_lost_working_state_never_hands_out_stored_seqs_again(
    state: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    settings: dict[str, Any] = {"state": "memory"}
    if state == "redis":
        from tests.fixtures_redis import redis_url

        url = redis_url(request.getfixturevalue("redis_server"), db=5)
        settings = {"state": "redis", "redis_url": url}
    config: MemoryConfig = _config_factory("chroma", request, tmp_path)(user_id="ana", session_id="s1", **settings)
    first = MemoryCore(config, embedder=EMBEDDER)
    first.add_messages([("user", "My budget is 5000 euros."), ("assistant", "Noted: 5000.")])
    first.add_messages([("user", "I live in Lyon."), ("assistant", "Lyon, noted.")])
    first.add_messages([("user", "Other session."), ("assistant", "Yes.")], session_id="s2")
    first.close()
    release_stores()
    if state == "redis":
        redis.Redis.from_url(url).flushdb()  # a restart without persistence

    second = MemoryCore(config, embedder=EMBEDDER)
    assert second.working_state().messages == []  # the working state is gone, the records are not
    second.add_messages([("user", "The budget is now 8000 euros."), ("assistant", "Updated to 8000.")])
    second.flush()
    seqs = _message_seqs(second, "s1")
    assert [s for s, _ in seqs] == [1, 2, 3, 4, 5, 6]
    assert [t for _, t in seqs][4:] == ["The budget is now 8000 euros.", "Updated to 8000."]
    assert [s for s, _ in _message_seqs(second, "s2")] == [1, 2]  # a session is its own sequence

    # A session that never had a message starts at 1; the export goes into a fresh collection whole.
    second.add_messages([("user", "Hello.")], session_id="s3")
    export = second.export_memories()
    assert [s for s, _ in _message_seqs(second, "s3")] == [1]
    second.close()
    copy = MemoryCore(
        config.model_copy(update={"collection": config.collection + "_copy", "state": "memory"}), embedder=EMBEDDER
    )
    assert copy.import_memories(export) == len(export["records"])
    copy.close()
