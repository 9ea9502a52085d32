"""Property-based: every public write path, driven with random unicode,
sizes, nesting and numbers. Invariant: either a named memory-vec error and
every user's data unchanged (a canary user's too), or success and an exact
round trip.

CI runs ~200 examples per entry point on the in-process backend, 40 on the
SQLite backend, embedded Chroma and Milvus Lite, and 10 on a Chroma server and
a Milvus server. A longer run (every backend scales with it):
``MEMVEC_TEST_FUZZ_EXAMPLES=2000 .venv/bin/pytest tests/reliability/test_fuzz.py``.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_vec import MemoryConfig, MemoryCore, MemoryVecError, release_stores
from memory_vec._rules.dates import DateSpan
from memory_vec.testing import DeterministicHashEmbedder

pytestmark = pytest.mark.integration

EMBEDDER = DeterministicHashEmbedder(dimension=32)
EXAMPLES = int(os.environ.get("MEMVEC_TEST_FUZZ_EXAMPLES", "200"))
PER_BACKEND = {
    "memory": EXAMPLES,
    "sqlite": max(20, EXAMPLES // 5),
    "chroma": max(20, EXAMPLES // 5),
    "milvus": max(20, EXAMPLES // 5),
    # servers: a small fixed number in CI (the longer run takes MEMVEC_TEST_FUZZ_EXAMPLES)
    "chroma-server": max(10, EXAMPLES // 20),
    "milvus-server": max(10, EXAMPLES // 20),
}

texts = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    ["", " ", "\x00", "a\nb", "用户的预算是5000", "x" * 40_000, "\u202etext", "</memories>", "\ud7ff"]
)
numbers = st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=True, allow_infinity=True)
scalars = st.none() | st.booleans() | numbers | texts
metadata = (
    st.none()
    | st.dictionaries(
        texts,
        st.recursive(
            scalars,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
            max_leaves=12,
        ),
        max_size=4,
    )
    | st.just({"deep": json.loads("[" * 40 + "]" * 40)})
    | st.sampled_from([[], "meta", 3])
)
timestamps = st.none() | numbers | st.datetimes(timezones=st.timezones() | st.just(timezone.utc)) | st.just("now")
roles = st.sampled_from(["user", "assistant", "system", "tool", "admin", "", None])


def _snapshot(core: MemoryCore, user: str) -> Any:
    data = core.export_memories(user_id=user)
    records = sorted(
        (r["id"], r["text"], r["valid_to"], r["pinned"], json.dumps(r["metadata"], sort_keys=True))
        for r in data["records"]
    )
    return records, json.dumps(data["sessions"], sort_keys=True)


@pytest.fixture(params=list(PER_BACKEND))
def cores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MemoryCore, MemoryCore, str]]:
    backend = str(request.param)
    engine, url = backend.removesuffix("-server"), None
    if backend.endswith("-server"):
        url = request.getfixturevalue(f"{engine}_server").url
    config = MemoryConfig(
        backend=engine,
        url=url,
        persist_dir=str(tmp_path),
        collection=f"fz_{uuid.uuid4().hex[:8]}",
        user_id="fuzz",
        session_id="s1",
        score_threshold=0.0,
        fact_extractor="none",
    )
    core = MemoryCore(config, embedder=EMBEDDER)
    canary = MemoryCore(config.model_copy(update={"user_id": "canary"}), embedder=EMBEDDER)
    canary.add_message("user", "the canary's own note")
    canary.remember("the canary prefers tea")
    yield core, canary, backend
    release_stores()


def _check(core: MemoryCore, canary: MemoryCore, action: Any) -> Any:
    before, canary_before = _snapshot(core, "fuzz"), _snapshot(canary, "canary")
    try:
        result = action()
    except MemoryVecError:
        assert _snapshot(core, "fuzz") == before, "a refused write changed the user's data"
        result = None
    except Exception as exc:  # the point: anything unnamed is a failure
        pytest.fail(f"unnamed {type(exc).__name__}: {exc}")
    assert _snapshot(canary, "canary") == canary_before, "another user's data changed"
    return result


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


@pytest.mark.slow
def test_add_message(cores: tuple[MemoryCore, MemoryCore, str]) -> None:
    core, canary, backend = cores

    @settings(
        max_examples=PER_BACKEND[backend],
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(role=roles, content=texts, meta=metadata, ts=timestamps)
    def run(role: Any, content: Any, meta: Any, ts: Any) -> None:
        result = _check(core, canary, lambda: core.add_message(role, content, metadata=meta, timestamp=ts))
        if result is None:
            return
        core.flush()
        [stored] = [r for r in core.session_history() if r.id == result.id]
        assert stored.text == content and stored.role == role
        expected, got = _plain(meta or {}), dict(stored.metadata)
        if "event_date" not in expected and "event_date" in got:  # the date the text refers to, resolved
            assert DateSpan.from_iso(got.pop("event_date")) is not None
        assert got == expected
        if isinstance(ts, datetime):
            aware = ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
            assert math.isclose(stored.timestamp, aware.timestamp(), abs_tol=1e-3)
        elif isinstance(ts, (int, float)) and not isinstance(ts, bool):
            assert math.isclose(stored.timestamp, float(ts), rel_tol=1e-12, abs_tol=1e-3)
        ctx = core.build_context(content if isinstance(content, str) and content.strip() else "q")
        assert ctx.trace is not None

    run()


@pytest.mark.slow
def test_remember_update_and_recall(cores: tuple[MemoryCore, MemoryCore, str]) -> None:
    core, canary, backend = cores

    @settings(
        max_examples=PER_BACKEND[backend] // 2,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        text=texts,
        new_text=texts,
        meta=metadata,
        importance=st.none() | numbers | st.booleans(),
        query=texts,
        filters=metadata,
    )
    def run(text: Any, new_text: Any, meta: Any, importance: Any, query: Any, filters: Any) -> None:
        kwargs = {} if importance is None else {"importance": importance}
        result = _check(core, canary, lambda: core.remember(text, metadata=meta, **kwargs))
        if result is not None and result.event.value != "skipped_duplicate":
            assert core.get(result.id).text == text
            updated = _check(core, canary, lambda: core.update(result.id, new_text))
            if updated is not None:
                assert core.get(updated.id).text == new_text
        _check(core, canary, lambda: core.recall(query, filters=filters))

    run()


@pytest.mark.slow
def test_import_of_a_mutated_export(cores: tuple[MemoryCore, MemoryCore, str]) -> None:
    core, canary, backend = cores
    core.add_message("user", "a base memory to export")
    export = core.export_memories()

    @settings(
        max_examples=PER_BACKEND[backend] // 2,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        field=st.sampled_from(
            [
                "text",
                "timestamp",
                "metadata",
                "kind",
                "role",
                "importance",
                "seq",
                "id",
                "user_id",
                "session_id",
                "valid_to",
                "source_ids",
                "visibility",
            ]
        ),
        value=scalars | metadata,
    )
    def run(field: str, value: Any) -> None:
        data = json.loads(json.dumps(export))
        data["records"][0][field] = value
        _check(core, canary, lambda: core.import_memories(data))

    run()
