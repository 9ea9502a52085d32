"""The one conformance suite every memory-vec backend passes.

Modelled on langchain-tests' ``VectorStoreIntegrationTests``: subclass
:class:`BackendConformance`, provide the ``backend`` fixture, set the
capability flags, and pytest collects every contract.

Fixture interface (all a subclass has to know):

``backend`` (fixture, required)
    Yields an **empty** backend, unopened or already opened with
    ``dimension=cls.dimension`` and ``model_id=cls.model_id`` (the suite calls
    ``open`` with those values itself). After the test it cleans up: drops
    the collection / removes the directory. The suite may already have
    closed the backend by then, so the cleanup must not depend on it being
    open.

``reopen(self, backend)`` (hook, needed when ``supports_reopen``)
    Returns a **new, unopened** instance on the same storage. The suite has
    closed ``backend`` before calling it, and closes the new instance itself.

``subprocess_code(self, backend)`` (hook, optional)
    Python source that, run in a fresh interpreter, binds the name
    ``backend`` to a new unopened instance on the same storage (imports
    included). Enables the new-process persistence contract, the
    multi-process writers (``supports_multiprocess``) and the lock contract
    (``exclusive_process_lock``). Return ``None`` to skip those.

Capability flags (class attributes):

- ``supports_reopen``: data survives ``close()`` and a new instance.
- ``supports_threads``: one instance may be used from many threads.
- ``supports_multiprocess``: several processes may write to one store.
- ``exclusive_process_lock``: an embedded store that a second process must
  refuse to open with :class:`~memory_vec._model.errors.StoreLockedError`.
- ``large_batch_size``: rows of the big-batch contract (0 skips it).

Example::

    import pytest
    from memory_vec.backends import InMemoryBackend
    from memory_vec.testing.conformance import BackendConformance

    class TestInMemory(BackendConformance):
        @pytest.fixture
        def backend(self):
            b = InMemoryBackend()
            yield b
            b.drop()

Vectors are small deterministic numpy vectors (no model is loaded), so the
suite runs offline in seconds for a fast engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import pytest

from memory_vec._model.errors import EmbeddingModelMismatchError, InvalidInputError, MemoryVecError, StoreLockedError
from memory_vec._model.records import MemoryRecord
from memory_vec.backends.base import Backend, BackendLimits, RecordFilter, ScoredRecord, as_base_backend

__all__ = ["FILTER_CASES", "HOSTILE_STRINGS", "BackendConformance", "make_record", "unit_vector"]

DIMENSION = 16
MODEL_ID = "conformance-hash-16"
EVERYTHING = RecordFilter(include_superseded=True, include_archived=True)
T0 = 1_700_000_000.0  # a fixed epoch so time filters are reproducible

# Values that break naive filter-string building, plus unicode and the
# longest id the config allows.
HOSTILE_STRINGS: tuple[str, ...] = (
    "o'brien",
    'say "hi"',
    "back\\slash\\",
    "x' or 1==1 or id != '",
    '" || true || "',
    "用户-ünïcødé-🙂",
    "a" * 256,
    "$and",
    "line\nbreak",
)


@runtime_checkable
class AsyncTwins(Protocol):
    """The async twins the suite calls (:class:`~memory_vec.backends.BaseBackend` provides them)."""

    async def aupsert(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None: ...
    async def aquery(self, vector: np.ndarray, *, k: int, where: RecordFilter) -> list[ScoredRecord]: ...
    async def aget(self, ids: Sequence[str], *, where: RecordFilter | None = None) -> list[MemoryRecord]: ...
    async def ascan(self, where: RecordFilter, *, limit: int | None = None) -> list[MemoryRecord]: ...
    async def adelete(self, *, ids: Sequence[str] | None = None, where: RecordFilter | None = None) -> int: ...
    async def acount(self, where: RecordFilter | None = None) -> int: ...


def unit_vector(seed: int | str, dimension: int = DIMENSION) -> np.ndarray:
    """A deterministic random unit vector (float32) for ``seed``."""
    if isinstance(seed, str):
        seed = int.from_bytes(seed.encode("utf-8")[:16].ljust(16, b"\0"), "little") ^ len(seed)
    v = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return v / np.linalg.norm(v)


def make_record(record_id: str, *, user_id: str = "u1", session_id: str = "s1", **fields: Any) -> MemoryRecord:
    """A record with sensible defaults; ``fields`` override any attribute."""
    fields.setdefault("text", f"text of {record_id}")
    fields.setdefault("role", "user")
    fields.setdefault("timestamp", T0)
    return MemoryRecord(id=record_id, user_id=user_id, session_id=session_id, **fields)


def _exact_bytes(prefix: str, size: int, fill: str) -> str:
    """``prefix`` padded with ``fill`` (then ASCII) to exactly ``size`` UTF-8 bytes."""
    room = size - len(prefix.encode("utf-8"))
    if room < 0:
        raise ValueError(f"{prefix!r} is longer than {size} bytes")
    width = len(fill.encode("utf-8"))
    return prefix + fill * (room // width) + "x" * (room % width)


def vectors_for(records: Sequence[MemoryRecord], dimension: int = DIMENSION) -> np.ndarray:
    return np.stack([unit_vector(r.id, dimension) for r in records])


def _corpus() -> list[MemoryRecord]:
    """Records that differ in every field a filter can select on."""
    return [
        make_record("p1", text="alpha", seq=1, timestamp=T0, kind="message", metadata={"topic": "budget"}),
        make_record("p2", role="assistant", seq=2, timestamp=T0 + 10, metadata={"topic": "travel", "n": 3}),
        make_record("p3", session_id="s2", seq=1, timestamp=T0 + 20, kind="fact", metadata={"flag": True}),
        make_record(
            "p4", session_id="s2", seq=2, timestamp=T0 + 30, kind="summary", role="system", metadata={"flag": 1}
        ),
        make_record(
            "p5", seq=3, timestamp=T0 + 40, kind="fact", valid_to=T0 + 45, superseded_by="p6", metadata={"flag": False}
        ),
        make_record("p6", seq=4, timestamp=T0 + 45, kind="fact", subject="city", metadata={"n": 3.0}),
        make_record("p7", seq=5, timestamp=T0 + 50, archived=True, metadata={"n": 4}),
        make_record("q1", user_id="u2", seq=1, timestamp=T0 + 5, metadata={"topic": "budget"}),
        make_record("q2", user_id="u2", session_id="s2", seq=1, timestamp=T0 + 15, role="tool"),
        make_record("g1", user_id="admin", session_id="sx", kind="fact", visibility="global", timestamp=T0 + 1),
        make_record(
            "a1", user_id="admin", session_id="sx", kind="fact", visibility="agent", agent_id="bot", timestamp=T0 + 2
        ),
        make_record(
            "a2", user_id="admin", session_id="sx", kind="fact", visibility="agent", agent_id="other", timestamp=T0 + 3
        ),
        make_record(
            "a3",
            user_id="u1",
            session_id="s1",
            kind="fact",
            visibility="agent",
            agent_id="bot",
            timestamp=T0 + 4,
            seq=9,
        ),
    ]


# Named filters; every backend must select exactly what RecordFilter.matches selects.
FILTER_CASES: dict[str, RecordFilter] = {
    "user": RecordFilter(user_id="u1"),
    "user_session": RecordFilter(user_id="u1", session_id="s2"),
    "session_only": RecordFilter(session_id="s2"),
    "all_users": RecordFilter(),
    "everything": EVERYTHING,
    "kinds": RecordFilter(user_id="u1", kinds=("fact", "summary")),
    "kinds_empty": RecordFilter(user_id="u1", kinds=()),
    "roles": RecordFilter(roles=("assistant", "tool")),
    "since": RecordFilter(user_id="u1", since=T0 + 20),
    "until": RecordFilter(user_id="u1", until=T0 + 20),
    "since_until": RecordFilter(since=T0 + 5, until=T0 + 30),
    "seq_range": RecordFilter(user_id="u1", seq_min=2, seq_max=4, include_superseded=True),
    "meta_str": RecordFilter(metadata={"topic": "budget"}),
    "meta_true_not_one": RecordFilter(metadata={"flag": True}),
    "meta_one_not_true": RecordFilter(metadata={"flag": 1}),
    "meta_false": RecordFilter(metadata={"flag": False}, include_superseded=True),
    "meta_int_float": RecordFilter(metadata={"n": 3}),
    "meta_two_keys": RecordFilter(metadata={"topic": "travel", "n": 3}),
    "meta_missing_key": RecordFilter(metadata={"absent": "x"}),
    "shared_global": RecordFilter(user_id="u2", include_shared=True),
    "shared_agent": RecordFilter(user_id="u2", agent_id="bot", include_shared=True),
    "shared_agent_session": RecordFilter(user_id="u1", session_id="s2", agent_id="bot", include_shared=True),
    "agent_without_shared": RecordFilter(user_id="u2", agent_id="bot"),
    "superseded_included": RecordFilter(user_id="u1", include_superseded=True),
    "archived_included": RecordFilter(user_id="u1", include_archived=True),
    "ids_and_scope": RecordFilter(user_id="u1", ids=("p1", "q1", "p5", "nope")),
}


class BackendConformance:
    """Contracts every backend honours. Subclass it and provide ``backend``."""

    dimension: ClassVar[int] = DIMENSION
    model_id: ClassVar[str] = MODEL_ID
    supports_reopen: ClassVar[bool] = False
    supports_threads: ClassVar[bool] = True
    supports_multiprocess: ClassVar[bool] = False
    exclusive_process_lock: ClassVar[bool] = False
    large_batch_size: ClassVar[int] = 10_000

    # --- what a subclass provides ---------------------------------------------------------
    @pytest.fixture
    def backend(self) -> Iterator[Backend]:
        """Yield an empty backend and clean it up afterwards (abstract)."""
        raise NotImplementedError("BackendConformance subclasses must define a `backend` fixture")

    def reopen(self, backend: Backend) -> Backend:
        """A new unopened instance on ``backend``'s storage (``backend`` is closed)."""
        raise NotImplementedError

    def seal(self, backend: Backend) -> None:
        """Move fresh writes into the engine's indexed storage (for engines that have one)."""

    def subprocess_code(self, backend: Backend) -> str | None:
        """Source that binds ``backend`` to a new instance in a fresh interpreter."""
        return None

    # --- helpers ---------------------------------------------------------------------------------
    @pytest.fixture
    def store(self, backend: Backend) -> Backend:
        backend.open(dimension=self.dimension, model_id=self.model_id)
        return backend

    def vec(self, seed: int | str) -> np.ndarray:
        return unit_vector(seed, self.dimension)

    def put(self, backend: Backend, records: Sequence[MemoryRecord]) -> None:
        backend.upsert(records, vectors_for(records, self.dimension))

    def _reopened(self, backend: Backend) -> Backend:
        if not self.supports_reopen:
            pytest.skip("backend does not persist across close()")
        backend.close()
        fresh = self.reopen(backend)
        fresh.open(dimension=self.dimension, model_id=self.model_id)
        return fresh

    def _run_child(self, backend: Backend, action: str, **params: Any) -> dict[str, Any]:
        code = self.subprocess_code(backend)
        if code is None:
            pytest.skip("subprocess_code() not provided")
        payload = json.dumps(
            {"code": code, "action": action, "dimension": self.dimension, "model_id": self.model_id, **params}
        )
        proc = subprocess.run(
            [sys.executable, "-c", "from memory_vec.testing.conformance import _child_main; _child_main()"],
            input=payload,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, f"child process failed:\n{proc.stderr[-3000:]}"
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result

    # --- empty store ---------------------------------------------------------------------------
    def test_empty_store(self, store: Backend) -> None:
        assert store.count() == 0
        assert store.count(RecordFilter(user_id="u1")) == 0
        assert store.query(self.vec(1), k=5, where=RecordFilter(user_id="u1")) == []
        assert store.query(self.vec(1), k=5, where=RecordFilter()) == []
        assert store.get(["missing"]) == []
        assert store.scan(EVERYTHING) == []
        assert store.delete(ids=["missing"]) == 0
        assert store.delete(where=RecordFilter(user_id="u1")) == 0

    def test_open_is_idempotent(self, store: Backend) -> None:
        self.put(store, [make_record("r1")])
        store.open(dimension=self.dimension, model_id=self.model_id)
        assert store.count() == 1

    # --- writes by id ---------------------------------------------------------------------------------
    def test_upsert_same_records_twice_is_idempotent(self, store: Backend) -> None:
        records = [make_record(f"r{i}", seq=i) for i in range(5)]
        self.put(store, records)
        self.put(store, records)
        assert store.count() == 5
        assert sorted(r.id for r in store.scan(EVERYTHING)) == [f"r{i}" for i in range(5)]

    def test_upsert_overwrites_fields_and_vector_by_id(self, store: Backend) -> None:
        store.upsert([make_record("r1", text="old", metadata={"stale": "yes", "keep": 1})], np.stack([self.vec("old")]))
        store.upsert(
            [make_record("r1", text="new", role="assistant", metadata={"keep": 2})], np.stack([self.vec("new")])
        )
        assert store.count() == 1
        [got] = store.get(["r1"])
        assert (got.text, got.role, got.metadata) == ("new", "assistant", {"keep": 2})
        # The stale metadata key must be gone from filtering too, not only from the payload.
        assert store.count(RecordFilter(metadata={"stale": "yes"})) == 0
        [hit] = store.query(self.vec("new"), k=1, where=RecordFilter(user_id="u1"))
        assert hit.record.id == "r1" and hit.similarity == pytest.approx(1.0, abs=1e-3)

    def test_insert_new_stores_what_upsert_stores(self, store: Backend) -> None:
        # New messages and facts take insert_new (the default is upsert): the rows
        # must read back, filter and rank exactly as upserted ones would.
        corpus = _corpus()
        insert = as_base_backend(store).insert_new
        insert(corpus, vectors_for(corpus, self.dimension))
        insert(corpus[:2], vectors_for(corpus[:2], self.dimension))  # a retry after a lost reply
        assert store.count(EVERYTHING) == len(corpus)
        assert {r.id: r for r in store.get([r.id for r in corpus], where=EVERYTHING)} == {r.id: r for r in corpus}
        for case, where in sorted(FILTER_CASES.items()):
            expected = sorted(r.id for r in corpus if where.matches(r))
            assert sorted(r.id for r in store.scan(where)) == expected, case
            assert (
                sorted(h.record.id for h in store.query(self.vec("p1"), k=len(corpus) + 5, where=where)) == expected
            ), case
        # An inserted row is an ordinary row: upsert and update rewrite it.
        store.upsert([corpus[0].copy(text="alpha again", metadata={})], np.stack([self.vec("new")]))
        store.update([corpus[1].copy(archived=True)])
        [again] = store.get([corpus[0].id])
        assert (again.text, again.metadata) == ("alpha again", {})
        assert store.get([corpus[1].id], where=EVERYTHING)[0].archived
        assert store.query(self.vec("new"), k=1, where=RecordFilter(user_id="u1"))[0].record.id == corpus[0].id

    def test_upsert_rejects_mismatched_lengths_and_writes_nothing(self, store: Backend) -> None:
        records = [make_record("r1"), make_record("r2")]
        with pytest.raises(InvalidInputError):
            store.upsert(records, vectors_for(records[:1], self.dimension))
        assert store.count() == 0

    def test_upsert_rejects_wrong_dimension(self, store: Backend) -> None:
        with pytest.raises(MemoryVecError):
            store.upsert([make_record("r1")], np.ones((1, self.dimension + 1), dtype=np.float32))
        assert store.count() == 0

    def test_get_returns_existing_ids_only(self, store: Backend) -> None:
        self.put(store, [make_record("a"), make_record("b")])
        assert {r.id for r in store.get(["a", "missing", "b"])} == {"a", "b"}
        assert store.get([]) == []
        assert store.get(["missing"]) == []

    def test_get_applies_where(self, store: Backend) -> None:
        self.put(store, [make_record("a"), make_record("b", user_id="u2"), make_record("c", valid_to=T0)])
        assert [r.id for r in store.get(["a", "b", "c"], where=RecordFilter(user_id="u1"))] == ["a"]
        # Without a filter, get() returns superseded and archived records too.
        assert {r.id for r in store.get(["a", "b", "c"])} == {"a", "b", "c"}

    def test_every_field_round_trips(self, store: Backend) -> None:
        full = make_record(
            "full",
            text="Full record ✓",
            role="tool",
            session_id="s9",
            timestamp=T0 + 0.125,
            kind="fact",
            seq=42,
            agent_id="bot",
            importance=0.875,
            valid_to=T0 + 99.5,
            superseded_by="next",
            visibility="agent",
            subject="budget",
            source_ids=["m1", "m2"],
            pinned=True,
            expire_at=T0 + 1e6,
            archived=True,
            recall_count=7,
            last_recalled_at=T0 + 3.25,
            metadata={"k": "v"},
        )
        bare = make_record("bare")
        self.put(store, [full, bare])
        got = {r.id: r for r in store.get(["full", "bare"])}
        assert got["full"] == full
        assert got["bare"] == bare

    def test_metadata_round_trips_unchanged(self, store: Backend) -> None:
        metadata = {
            "nested": {"a": [1, 2, {"b": None}], "unicode": "日本語 ✓"},
            "list": ["x", 1, 2.5, True, None],
            "empty": {},
            "none": None,
            "big": 2**40,
            "neg": -1.5,
            "bool": False,
            "key with spaces": "v",
            "dotted.key": "v",
            "$dollar": "v",
            "quote'key\"": "v",
        }
        self.put(store, [make_record("m", metadata=metadata)])
        [got] = store.get(["m"])
        assert got.metadata == metadata
        assert json.dumps(got.metadata, sort_keys=True) == json.dumps(metadata, sort_keys=True)
        assert type(got.metadata["bool"]) is bool and type(got.metadata["big"]) is int
        for key in ("key with spaces", "dotted.key", "$dollar", "quote'key\""):
            assert [r.id for r in store.scan(RecordFilter(metadata={key: "v"}))] == ["m"]

    # --- engine limits ---------------------------------------------------------------------------
    def test_records_at_the_declared_limits_round_trip(self, store: Backend) -> None:
        # The write path rejects what exceeds ``limits`` before anything is written;
        # this holds the declaration honest: a record exactly at each limit is stored.
        limits = getattr(store, "limits", BackendLimits())
        assert isinstance(limits, BackendLimits)
        records = [
            make_record(
                "ints",
                metadata={
                    "int_min": limits.int_min,
                    "int_max": limits.int_max,
                    "nested": {"list": [limits.int_min, limits.int_max]},
                },
            )
        ]
        # One level more than max_metadata_depth if the metadata dict itself counts, so the
        # engine accepts the deepest metadata whichever way a validator counts.
        deep: Any = "leaf"
        for level in range(limits.max_metadata_depth):
            deep = [deep] if level % 2 else {"d": deep}
        records.append(make_record("deep", metadata={"deep": deep}))
        if limits.max_text_bytes is not None:
            records.append(make_record("text", text=_exact_bytes("text ", limits.max_text_bytes, "語")))
        if limits.max_metadata_bytes is not None:
            # Compact JSON, the engines' own encoding and the smallest: a validator that
            # counts ", " separators lets through less than this.
            overhead = len(json.dumps({"pad": ""}, separators=(",", ":")))
            metadata = {"pad": _exact_bytes("", limits.max_metadata_bytes - overhead, "語")}
            size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
            assert size == limits.max_metadata_bytes
            records.append(make_record("meta", metadata=metadata))
        long_id = ""
        if limits.max_id_bytes is not None:
            # 4-byte characters: 1024 bytes are also the 256 characters the library allows.
            long_id = _exact_bytes("", limits.max_id_bytes, "🙂")
            records.append(
                make_record(
                    long_id,
                    user_id=_exact_bytes("", limits.max_id_bytes, "👤"),
                    session_id=_exact_bytes("", limits.max_id_bytes, "💬"),
                    superseded_by=long_id,
                    source_ids=[long_id],
                )
            )
            records.append(
                make_record(
                    "agent-rec", user_id="u8", visibility="agent", agent_id=_exact_bytes("", limits.max_id_bytes, "🤖")
                )
            )
        self.put(store, records)
        got = {r.id: r for r in store.get([r.id for r in records])}
        assert got == {r.id: r for r in records}
        assert type(got["ints"].metadata["int_max"]) is int and type(got["ints"].metadata["int_min"]) is int
        for key in ("int_min", "int_max"):
            value = getattr(limits, key)
            assert [r.id for r in store.scan(RecordFilter(metadata={key: value}))] == ["ints"]
        if long_id:
            [owner] = [r for r in records if r.id == long_id]
            where = RecordFilter(user_id=owner.user_id, session_id=owner.session_id)
            assert [r.id for r in store.scan(where)] == [long_id]
            assert [h.record.id for h in store.query(self.vec(long_id), k=3, where=where)] == [long_id]
            shared = RecordFilter(user_id="u9", agent_id=got["agent-rec"].agent_id, include_shared=True)
            assert [r.id for r in store.scan(shared)] == ["agent-rec"]
            assert store.delete(ids=[long_id]) == 1

    # --- deletes --------------------------------------------------------------------------------
    def test_delete_by_ids_returns_count(self, store: Backend) -> None:
        self.put(store, [make_record(f"r{i}") for i in range(4)])
        assert store.delete(ids=["r0", "r2", "missing"]) == 2
        assert sorted(r.id for r in store.scan(EVERYTHING)) == ["r1", "r3"]
        assert store.delete(ids=["r0"]) == 0

    def test_delete_by_scope(self, store: Backend) -> None:
        self.put(store, _corpus())
        where = RecordFilter(user_id="u1", session_id="s2", include_superseded=True, include_archived=True)
        expected = {r.id for r in _corpus() if where.matches(r)}
        assert store.delete(where=where) == len(expected) == 2
        remaining = {r.id for r in store.scan(EVERYTHING)}
        assert remaining == {r.id for r in _corpus()} - expected

    def test_delete_by_ids_and_scope_together(self, store: Backend) -> None:
        self.put(store, _corpus())
        assert store.delete(ids=["p1", "q1"], where=RecordFilter(user_id="u2")) == 1
        assert {r.id for r in store.get(["p1", "q1"])} == {"p1"}

    def test_delete_user_leaves_other_users(self, store: Backend) -> None:
        self.put(store, _corpus())
        everything_of_u1 = RecordFilter(user_id="u1", include_superseded=True, include_archived=True)
        store.delete(where=everything_of_u1)
        assert store.count(everything_of_u1) == 0
        assert store.count(RecordFilter(user_id="u2")) == 2

    # --- filters ----------------------------------------------------------------------------------
    @pytest.mark.parametrize("case", sorted(FILTER_CASES))
    def test_filter_agrees_with_reference(self, store: Backend, case: str) -> None:
        where = FILTER_CASES[case]
        corpus = _corpus()
        self.put(store, corpus)
        expected = sorted((r for r in corpus if where.matches(r)), key=lambda r: (r.timestamp, r.seq, r.id))
        scanned = store.scan(where)
        assert [r.id for r in scanned] == [r.id for r in expected], "scan() order is (timestamp, seq, id)"
        assert store.count(where) == len(expected)
        hits = store.query(self.vec("p1"), k=len(corpus) + 5, where=where)
        assert sorted(h.record.id for h in hits) == sorted(r.id for r in expected)
        if expected:
            assert store.scan(where, limit=1)[0].id == expected[0].id
        assert store.delete(where=where) == len(expected)
        assert {r.id for r in store.scan(EVERYTHING)} == {r.id for r in corpus} - {r.id for r in expected}

    def test_scan_vectors_agrees_with_scan(self, store: Backend) -> None:
        if not as_base_backend(store).vector_reads:
            pytest.skip("backend has no scan_vectors (optional)")
        scan_vectors = as_base_backend(store).scan_vectors
        corpus = _corpus()
        self.put(store, corpus)
        store.update([corpus[0].copy(text="alpha, edited", archived=True)])  # the vector stays
        for case, where in sorted(FILTER_CASES.items()):
            records, vectors = scan_vectors(where)
            assert sorted(r.id for r in records) == sorted(r.id for r in store.scan(where)), case
            assert np.asarray(vectors).shape == (len(records), self.dimension), case
            for record, vector in zip(records, np.asarray(vectors, dtype=np.float32)):
                cosine = float(vector @ self.vec(record.id)) / float(np.linalg.norm(vector))
                assert cosine == pytest.approx(1.0, abs=1e-4), (case, record.id)
        edited, _ = scan_vectors(RecordFilter(ids=(corpus[0].id,), include_archived=True))
        assert [r.text for r in edited] == ["alpha, edited"]

    def test_validity_excludes_superseded_and_archived_by_default(self, store: Backend) -> None:
        self.put(
            store,
            [
                make_record("cur"),
                make_record("old", valid_to=T0 + 1, superseded_by="cur"),
                make_record("arch", archived=True),
            ],
        )
        default = RecordFilter(user_id="u1")
        assert [r.id for r in store.scan(default)] == ["cur"]
        assert [h.record.id for h in store.query(self.vec("old"), k=3, where=default)] == ["cur"]
        both = RecordFilter(user_id="u1", include_superseded=True, include_archived=True)
        assert {h.record.id for h in store.query(self.vec("old"), k=3, where=both)} == {"cur", "old", "arch"}
        assert store.query(self.vec("old"), k=1, where=both)[0].record.id == "old"

    def test_current_rows_found_behind_many_closer_superseded_ones(self, store: Backend) -> None:
        # The nearest 40 rows of the user are superseded: a backend that
        # filters after the engine's top-k must keep looking for the current ones.
        query = self.vec("q")
        noise = np.random.default_rng(3).standard_normal((43, self.dimension)).astype(np.float32)
        vectors = np.stack([query + 0.05 * noise[i] if i < 40 else noise[i] for i in range(43)])
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        records = [make_record(f"old{i}", valid_to=T0 + 1, superseded_by="cur0") for i in range(40)]
        records += [make_record(f"cur{i}") for i in range(3)]
        store.upsert(records, vectors)
        hits = store.query(query, k=3, where=RecordFilter(user_id="u1"))
        assert sorted(h.record.id for h in hits) == ["cur0", "cur1", "cur2"]

    def test_update_changes_fields_but_not_vectors(self, store: Backend) -> None:
        self.put(store, [make_record("r1", text="before", metadata={"v": 1}), make_record("r2")])
        [r1] = store.get(["r1"])
        store.update(
            [
                r1.copy(
                    text="after",
                    valid_to=T0 + 5,
                    superseded_by="r2",
                    metadata={"w": "x"},
                    recall_count=3,
                    importance=0.9,
                )
            ]
        )
        [got] = store.get(["r1"])
        assert (got.text, got.valid_to, got.superseded_by, got.metadata, got.recall_count, got.importance) == (
            "after",
            T0 + 5,
            "r2",
            {"w": "x"},
            3,
            0.9,
        )
        assert store.count(RecordFilter(metadata={"v": 1}, include_superseded=True)) == 0
        assert [r.id for r in store.scan(RecordFilter(user_id="u1"))] == ["r2"]
        everything_of_u1 = RecordFilter(user_id="u1", include_superseded=True)
        [hit] = store.query(self.vec("r1"), k=1, where=everything_of_u1)
        assert hit.record.id == "r1" and hit.similarity == pytest.approx(1.0, abs=1e-3)

    def test_update_of_changed_and_unchanged_texts_in_one_batch_keeps_every_vector(self, store: Backend) -> None:
        self.put(store, [make_record("r1", text="one"), make_record("r2", text="two"), make_record("r3")])
        r1, r2 = store.get(["r1", "r2"])
        store.update([r1.copy(text="one, edited", importance=0.2), make_record("ghost"), r2.copy(importance=0.7)])
        assert [(r.id, r.text, r.importance) for r in store.get(["r1", "r2"])] == [
            ("r1", "one, edited", 0.2),
            ("r2", "two", 0.7),
        ]
        assert store.count() == 3
        for rid in ("r1", "r2"):
            [hit] = store.query(self.vec(rid), k=1, where=RecordFilter(user_id="u1"))
            assert hit.record.id == rid and hit.similarity == pytest.approx(1.0, abs=1e-3)

    def test_update_of_one_id_twice_keeps_the_last_version(self, store: Backend) -> None:
        self.put(store, [make_record("r1", text="one")])
        [r1] = store.get(["r1"])
        store.update([r1.copy(importance=0.1), r1.copy(text="one, edited", importance=0.9)])
        assert [(r.text, r.importance) for r in store.get(["r1"])] == [("one, edited", 0.9)]

    def test_update_of_missing_id_writes_nothing(self, store: Backend) -> None:
        store.update([make_record("ghost")])
        assert store.count() == 0

    def test_update_can_move_a_record_between_scopes(self, store: Backend) -> None:
        self.put(store, [make_record("r1")])
        [r1] = store.get(["r1"])
        store.update([r1.copy(visibility="global")])
        assert [r.id for r in store.scan(RecordFilter(user_id="u9", include_shared=True))] == ["r1"]
        [hit] = store.query(self.vec("r1"), k=1, where=RecordFilter(user_id="u9", include_shared=True))
        assert hit.similarity == pytest.approx(1.0, abs=1e-3)

    # --- scores -------------------------------------------------------------------------------------
    def test_scores_are_cosine_best_first(self, store: Backend) -> None:
        target = self.vec("target")
        records = [make_record(f"r{i}") for i in range(6)]
        # Vectors at known angles to the target: identical, opposite, and in between.
        other = self.vec("other")
        other = other - (other @ target) * target
        other /= np.linalg.norm(other)
        angles = [0.0, 0.5, 1.0, 1.6, 2.5, math.pi]
        vectors = np.stack([math.cos(a) * target + math.sin(a) * other for a in angles]).astype(np.float32)
        store.upsert(records, vectors * 3.0)  # scale must not matter for cosine
        hits = store.query(target, k=6, where=RecordFilter(user_id="u1"))
        assert [h.record.id for h in hits] == [f"r{i}" for i in range(6)]
        for hit, angle in zip(hits, angles):
            assert hit.similarity == pytest.approx(math.cos(angle), abs=2e-3)
            assert -1.0 - 1e-5 <= hit.similarity <= 1.0 + 1e-5
        assert [h.record.id for h in store.query(target, k=2, where=RecordFilter(user_id="u1"))] == ["r0", "r1"]

    def test_query_k_larger_than_store(self, store: Backend) -> None:
        self.put(store, [make_record("a"), make_record("b")])
        assert len(store.query(self.vec("a"), k=100, where=RecordFilter(user_id="u1"))) == 2

    # --- isolation and hostile values ------------------------------------------------------------
    def test_users_and_sessions_are_isolated(self, store: Backend) -> None:
        records = [
            make_record(f"{u}-{s}-{i}", user_id=u, session_id=s)
            for u in ("u1", "u2")
            for s in ("s1", "s2")
            for i in range(3)
        ]
        self.put(store, records)
        for u in ("u1", "u2"):
            hits = store.query(self.vec("u1-s1-0"), k=20, where=RecordFilter(user_id=u))
            assert {h.record.user_id for h in hits} == {u} and len(hits) == 6
            for s in ("s1", "s2"):
                hits = store.query(self.vec("u1-s1-0"), k=20, where=RecordFilter(user_id=u, session_id=s))
                assert {(h.record.user_id, h.record.session_id) for h in hits} == {(u, s)} and len(hits) == 3
        assert store.query(self.vec(1), k=5, where=RecordFilter(user_id="u1 ")) == []
        assert store.query(self.vec(1), k=5, where=RecordFilter(user_id="U1")) == []

    @pytest.mark.parametrize("hostile", HOSTILE_STRINGS, ids=lambda s: repr(s)[:20])
    def test_hostile_values_are_stored_and_filtered_exactly(self, store: Backend, hostile: str) -> None:
        records = [
            make_record(hostile, user_id=hostile, session_id=hostile, agent_id=hostile, metadata={hostile: hostile}),
            make_record("plain", user_id="u1", session_id="s1", metadata={hostile: "other"}),
            make_record("shared", user_id="u3", visibility="agent", agent_id=hostile),
        ]
        self.put(store, records)
        [got] = store.get([hostile])
        assert got == records[0]
        assert [r.id for r in store.scan(RecordFilter(user_id=hostile))] == [hostile]
        assert [r.id for r in store.scan(RecordFilter(user_id=hostile, session_id=hostile))] == [hostile]
        assert [r.id for r in store.scan(RecordFilter(metadata={hostile: hostile}))] == [hostile]
        assert {r.id for r in store.scan(RecordFilter(user_id="u1", agent_id=hostile, include_shared=True))} == {
            "plain",
            "shared",
        }
        hits = store.query(self.vec(hostile), k=5, where=RecordFilter(user_id=hostile))
        assert [h.record.id for h in hits] == [hostile]
        assert store.delete(where=RecordFilter(user_id=hostile)) == 1
        assert store.count() == 2

    # --- persistence ------------------------------------------------------------------------------
    def test_persists_across_close_and_reopen(self, store: Backend) -> None:
        corpus = _corpus()
        self.put(store, corpus)
        fresh = self._reopened(store)
        try:
            assert fresh.count() == len(corpus)
            assert {r.id: r for r in fresh.get([r.id for r in corpus])} == {r.id: r for r in corpus}
            [hit] = fresh.query(self.vec("p2"), k=1, where=RecordFilter(user_id="u1"))
            assert hit.record.id == "p2" and hit.similarity == pytest.approx(1.0, abs=1e-3)
        finally:
            fresh.close()

    def test_persists_in_a_new_process(self, store: Backend) -> None:
        if not self.supports_reopen:
            pytest.skip("backend does not persist across close()")
        corpus = _corpus()
        self.put(store, corpus)
        store.close()
        seen = self._run_child(store, "read_then_write", write_id="from-child")
        assert sorted(seen["ids"]) == sorted(r.id for r in corpus)
        assert seen["top"] == "p2"
        fresh = self.reopen(store)
        fresh.open(dimension=self.dimension, model_id=self.model_id)
        try:
            assert fresh.count() == len(corpus) + 1
            assert [r.text for r in fresh.get(["from-child"])] == ["written by a child process"]
        finally:
            fresh.close()

    def test_second_process_gets_a_clear_lock_error(self, store: Backend) -> None:
        if not self.exclusive_process_lock:
            pytest.skip("backend is not an exclusive embedded store")
        self.put(store, [make_record("r1")])
        result = self._run_child(store, "open_only")
        assert result["error"] == "StoreLockedError", result
        assert result["message"]

    # --- counts, scale, concurrency --------------------------------------------------------------
    def test_counts(self, store: Backend) -> None:
        corpus = _corpus()
        self.put(store, corpus)
        assert store.count() == len(corpus)
        assert store.count(EVERYTHING) == len(corpus)
        assert store.count(RecordFilter(user_id="u2")) == 2
        store.delete(ids=["q1"])
        assert store.count() == len(corpus) - 1

    def test_large_batch_and_filtered_query(self, store: Backend) -> None:
        n = self.large_batch_size
        if not n:
            pytest.skip("large_batch_size = 0")
        rng = np.random.default_rng(7)
        vectors = rng.standard_normal((n, self.dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        records = [
            make_record(f"big-{i}", user_id=f"user-{i % 100}", session_id=f"s{i % 7}", seq=i, timestamp=T0 + i)
            for i in range(n)
        ]
        store.upsert(records, vectors)
        assert store.count() == n
        probe = 4242 % n
        where = RecordFilter(user_id=records[probe].user_id)
        hits = store.query(vectors[probe], k=5, where=where)
        assert hits[0].record.id == records[probe].id
        assert {h.record.user_id for h in hits} == {records[probe].user_id}
        assert store.count(where) == len([r for r in records if r.user_id == records[probe].user_id])

    def test_narrow_filter_returns_every_match(self, store: Backend) -> None:
        # One user among many: an approximate index with a selective filter can
        # miss matching rows (Milvus 2.3 returned 1 of 10); recall needs them all.
        n = self.large_batch_size
        if not n:
            pytest.skip("large_batch_size = 0")
        users = max(2, n // 10)
        rng = np.random.default_rng(11)
        vectors = rng.standard_normal((n, self.dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        records = [make_record(f"nf-{i}", user_id=f"user-{i % users}", seq=i) for i in range(n)]
        store.upsert(records, vectors)
        self.seal(store)
        query = rng.standard_normal(self.dimension).astype(np.float32)
        for user in ("user-3", f"user-{users - 1}"):
            mine = [i for i, r in enumerate(records) if r.user_id == user]
            hits = store.query(query, k=50, where=RecordFilter(user_id=user))
            assert sorted(h.record.id for h in hits) == sorted(records[i].id for i in mine)
            expected = sorted(mine, key=lambda i: -float(vectors[i] @ query) / float(np.linalg.norm(query)))
            assert [h.record.id for h in hits] == [records[i].id for i in expected]

    def test_concurrent_writers_from_threads(self, store: Backend) -> None:
        if not self.supports_threads:
            pytest.skip("backend is single-threaded")
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def writer(t: int) -> None:
            try:
                barrier.wait()
                for batch in range(10):
                    # Each batch has 4 own ids and one id every thread writes.
                    records = [make_record(f"t{t}-{batch}-{i}", user_id=f"user{t % 3}", seq=i) for i in range(4)]
                    records.append(make_record(f"common-{batch}", user_id="common"))
                    self.put(store, records)
            except BaseException as exc:  # noqa: BLE001 - any failure of a thread is surfaced in the main thread below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=120)
        assert not errors, errors
        assert store.count() == 8 * 10 * 4 + 10
        ids = [r.id for r in store.scan(EVERYTHING)]
        assert len(ids) == len(set(ids)) == 8 * 10 * 4 + 10

    def test_concurrent_writers_from_processes(self, store: Backend) -> None:
        if not self.supports_multiprocess:
            pytest.skip("backend is single-process")
        code = self.subprocess_code(store)
        if code is None:
            pytest.skip("subprocess_code() not provided")
        payloads = [
            json.dumps(
                {
                    "code": code,
                    "action": "write_many",
                    "dimension": self.dimension,
                    "model_id": self.model_id,
                    "prefix": f"proc{p}",
                    "n": 40,
                }
            )
            for p in range(4)
        ]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", "from memory_vec.testing.conformance import _child_main; _child_main()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in payloads
        ]
        outputs = [proc.communicate(payload, timeout=180) for proc, payload in zip(procs, payloads)]
        for proc, (_, err) in zip(procs, outputs):
            assert proc.returncode == 0, err[-3000:]
        # A reader that opens after the writers acknowledged sees every row
        # (a long-lived reader may see them a server time tick later under
        # session consistency, see memory_vec/backends/milvus.py).
        reader = self._reopened(store) if self.supports_reopen else store
        try:
            ids = [r.id for r in reader.scan(EVERYTHING)]
        finally:
            if reader is not store:
                reader.close()
        assert len(ids) == len(set(ids)) == 4 * 40 + 5

    def test_async_twins(self, store: Backend) -> None:
        assert isinstance(store, AsyncTwins), "a backend has the a-prefixed twins (BaseBackend provides them)"
        twins = store

        async def run() -> None:
            records = [make_record("x1"), make_record("x2", user_id="u2")]
            await twins.aupsert(records, vectors_for(records, self.dimension))
            hits = await twins.aquery(self.vec("x1"), k=2, where=RecordFilter(user_id="u1"))
            assert [h.record.id for h in hits] == ["x1"]
            assert await twins.acount() == 2
            assert [r.id for r in await twins.aget(["x2"])] == ["x2"]
            assert len(await twins.ascan(EVERYTHING)) == 2
            assert await twins.adelete(ids=["x1"]) == 1

        asyncio.run(run())

    # --- embedding-model guard ------------------------------------------------------------------------
    def test_open_with_another_model_raises_naming_both(self, store: Backend) -> None:
        self.put(store, [make_record("r1")])
        with pytest.raises(EmbeddingModelMismatchError) as info:
            store.open(dimension=self.dimension + 8, model_id="another-model")
        message = str(info.value)
        assert self.model_id in message and "another-model" in message
        assert str(self.dimension) in message and str(self.dimension + 8) in message
        with pytest.raises(EmbeddingModelMismatchError):
            store.open(dimension=self.dimension, model_id="another-model")

    def test_reopen_with_another_model_raises(self, store: Backend) -> None:
        self.put(store, [make_record("r1")])
        if not self.supports_reopen:
            pytest.skip("backend does not persist across close()")
        store.close()
        fresh = self.reopen(store)
        try:
            with pytest.raises(EmbeddingModelMismatchError) as info:
                fresh.open(dimension=self.dimension, model_id="another-model")
            assert self.model_id in str(info.value) and "another-model" in str(info.value)
            fresh.open(dimension=self.dimension, model_id=self.model_id)
            assert fresh.count() == 1
        finally:
            fresh.close()


def _child_main() -> None:
    """Entry point of the subprocess contracts: a JSON job on stdin, a JSON line out."""
    job = json.loads(sys.stdin.read())
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(job["code"]), namespace)  # the subclass's own setup code
    backend: Backend = namespace["backend"]
    dimension, model_id = job["dimension"], job["model_id"]
    result: dict[str, Any] = {}
    try:
        backend.open(dimension=dimension, model_id=model_id)
        if job["action"] == "read_then_write":
            result["ids"] = [r.id for r in backend.scan(EVERYTHING)]
            hits = backend.query(unit_vector("p2", dimension), k=1, where=RecordFilter(user_id="u1"))
            result["top"] = hits[0].record.id if hits else None
            record = make_record(job["write_id"], text="written by a child process")
            backend.upsert([record], vectors_for([record], dimension))
        elif job["action"] == "write_many":
            for i in range(0, job["n"], 4):
                records = [make_record(f"{job['prefix']}-{j}") for j in range(i, min(i + 4, job["n"]))]
                records.append(make_record(f"common-{i % 5}", user_id="common"))
                backend.upsert(records, vectors_for(records, dimension))
        result["error"] = None
    except StoreLockedError as exc:
        result.update(error=type(exc).__name__, message=str(exc))
    finally:
        with contextlib.suppress(MemoryVecError):
            backend.close()
    print(json.dumps(result))
