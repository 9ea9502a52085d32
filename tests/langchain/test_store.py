"""VectorSummaryStore: a LangGraph BaseStore on memory-vec.

LangGraph's own ``InMemoryStore`` is the reference: the same operations on
both give the same results wherever ours does not rank (get, put, delete,
listing, filters, namespaces, batch order). Runs on the in-process backend
and on embedded Chroma (``integration``), with the hashing embedder; the
real default embedder (multilingual-e5-small) is used in the integration
tests at the end. The agent tests drive ``create_agent(..., store=...)`` with
a scripted tool-calling chat model.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, Item, Op, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from pydantic import Field

from langchain_memory_vec._store_items import record_id
from langchain_memory_vec.store import NamespaceScopeError, VectorSummaryStore
from memory_vec import MemoryConfig
from memory_vec._model.errors import ConfigError, InvalidInputError
from memory_vec.testing import DeterministicHashEmbedder

ALICE = ("memories", "alice")
WORK = ("memories", "alice", "work")
BOB = ("memories", "bob")
VALUES: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (ALICE, "k1", {"text": "Alice likes green tea", "n": 1, "tags": ["drink"], "meta": {"lang": "en"}}),
    (ALICE, "k2", {"text": "Alice has a cat named Miso", "n": 2, "tags": ["pet"], "meta": {"lang": "en"}}),
    (ALICE, "k3", {"text": "爱丽丝住在上海", "n": 3.5, "tags": [], "meta": {"lang": "zh"}, "ok": True}),
    (WORK, "k1", {"text": "Alice works on compilers", "n": 4, "ok": False, "none": None}),
    (BOB, "k1", {"text": "Bob likes black coffee", "n": 5}),
]


class HashEmbeddings(Embeddings):
    """The library's hashing embedder as a LangChain ``Embeddings`` (for InMemoryStore's index)."""

    def __init__(self, dimension: int = 256) -> None:
        self.inner = DeterministicHashEmbedder(dimension=dimension)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.inner.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.inner.embed_query(text)]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


StoreFactory = Callable[..., VectorSummaryStore]


@pytest.fixture(params=["memory", pytest.param("chroma", marks=pytest.mark.integration)])
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, hash_embedder: DeterministicHashEmbedder
) -> Iterator[StoreFactory]:
    """Stores built from a MemoryConfig (each its own backend), with the hashing embedder."""
    made: list[VectorSummaryStore] = []

    def make(**kwargs: Any) -> VectorSummaryStore:
        config = MemoryConfig(
            backend=request.param, persist_dir=str(tmp_path / f"store{len(made)}"), collection="langgraph_store"
        )
        kwargs.setdefault("embedder", hash_embedder)
        made.append(VectorSummaryStore(config, **kwargs))
        return made[-1]

    yield make
    for store in made:
        store.close()


def fill(*stores: BaseStore) -> None:
    for store in stores:
        for namespace, key, value in VALUES:
            store.put(namespace, key, value)


def view(items: Sequence[Item | None]) -> list[Any]:
    return [None if i is None else (i.namespace, i.key, i.value) for i in items]


# --- InMemoryStore as the reference ---------------------------------------------------------------
def test_get_put_replace_delete_match_in_memory_store(make_store: StoreFactory) -> None:
    ours, ref = make_store(), InMemoryStore()
    fill(ours, ref)
    for store in (ours, ref):
        store.put(ALICE, "k2", {"text": "Alice has two cats", "n": 20})
        store.delete(ALICE, "k1")
        store.delete(ALICE, "never-there")
    probes = [(ns, key) for ns, key, _ in VALUES] + [(ALICE, "missing"), (("memories", "carol"), "k1")]
    assert view([ours.get(*p) for p in probes]) == view([ref.get(*p) for p in probes])
    assert ours.get(ALICE, "k1") is None
    got = ours.get(ALICE, "k3")
    assert got is not None and got.value == VALUES[2][2]  # exact round trip: float, bool, unicode, nested
    assert type(got.value["n"]) is float and got.value["tags"] == []


def test_replace_keeps_created_at_and_moves_updated_at(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(ALICE, "k", {"v": 1})
    first = store.get(ALICE, "k")
    time.sleep(0.01)
    store.put(ALICE, "k", {"v": 2})
    second = store.get(ALICE, "k")
    assert first is not None and second is not None and second.value == {"v": 2}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert first.created_at.tzinfo is not None


def test_equal_keys_in_two_namespaces_or_users_never_collide(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    assert [store.get(ns, "k1").value["n"] for ns in (ALICE, WORK, BOB)] == [1, 4, 5]  # type: ignore[union-attr]


@pytest.mark.parametrize("limit,offset", [(10, 0), (2, 0), (2, 1), (1, 3), (0, 0), (5, 10)])
def test_listing_without_query_matches_in_memory_store(make_store: StoreFactory, limit: int, offset: int) -> None:
    ours, ref = make_store(), InMemoryStore()
    fill(ours, ref)
    for store in (ours, ref):
        store.put(ALICE, "k2", {"text": "replaced", "n": 9})  # a replaced key keeps its place
    assert view(ours.search(ALICE, limit=limit, offset=offset)) == view(ref.search(ALICE, limit=limit, offset=offset))
    assert view(ours.search(WORK)) == view(ref.search(WORK))
    assert all(hit.score is None for hit in ours.search(ALICE))


@pytest.mark.parametrize(
    "flt",
    [
        {"n": 2},
        {"n": {"$eq": 2}},
        {"n": {"$ne": 2}},
        {"n": {"$gt": 2}},
        {"n": {"$gte": 2}},
        {"n": {"$lt": 3.5}},
        {"n": {"$lte": 3.5}},
        {"n": {"$gt": 1, "$lt": 4}},
        {"meta": {"lang": "en"}},
        {"tags": ["pet"]},
        {"ok": True},
        {"ok": False},
        {"none": None},
        {"meta": {"lang": "zh"}, "n": {"$gte": 3}},
        {"missing": {"$ne": 1}},
        {"text": "Alice has a cat named Miso"},
    ],
)
def test_filters_match_in_memory_store(make_store: StoreFactory, flt: dict[str, Any]) -> None:
    ours, ref = make_store(), InMemoryStore()
    fill(ours, ref)
    assert view(ours.search(ALICE, filter=flt)) == view(ref.search(ALICE, filter=flt))


def test_filter_edge_cases(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    # InMemoryStore raises TypeError on a range filter over a missing field; here it simply does not match.
    assert view(store.search(ALICE, filter={"absent": {"$gt": 1}})) == []
    with pytest.raises(InvalidInputError, match=r"\$regex"):
        store.search(ALICE, filter={"text": {"$regex": "x"}})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"prefix": ALICE},
        {"prefix": ALICE, "max_depth": 2},
        {"prefix": ("memories", "alice", "*")},
        {"prefix": ("*", "alice")},
        {"prefix": ALICE, "suffix": ("work",)},
        {"prefix": ALICE, "limit": 1, "offset": 1},
        {"prefix": ("memories", "*")},
        {"prefix": ("memories", "*", "work")},
    ],
)
def test_list_namespaces_matches_in_memory_store(make_store: StoreFactory, kwargs: dict[str, Any]) -> None:
    ours, ref = make_store(), InMemoryStore()
    fill(ours, ref)
    ours.put(("memories", "alice", "gone"), "k", {"v": 1})
    ours.delete(("memories", "alice", "gone"), "k")  # an emptied namespace is not listed
    if kwargs["prefix"][1] == "*":  # a wildcard user spans users: only for an admin store
        with pytest.raises(NamespaceScopeError):
            ours.list_namespaces(**kwargs)
        ours = make_store(allow_cross_user=True)
        fill(ours)
    assert ours.list_namespaces(**kwargs) == ref.list_namespaces(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"max_depth": 1},
        {"max_depth": 2},
        {"suffix": ("k1",)},
        {"suffix": ("work",)},
        {"prefix": ("memories",), "limit": 2, "offset": 1},
    ],
)
def test_admin_store_lists_every_user_like_in_memory_store(make_store: StoreFactory, kwargs: dict[str, Any]) -> None:
    ours, ref = make_store(allow_cross_user=True), InMemoryStore()
    fill(ours, ref)
    assert ours.list_namespaces(**kwargs) == ref.list_namespaces(**kwargs)
    assert view(ours.search(("memories",), limit=50)) == view(ref.search(("memories",), limit=50))


def test_batch_reads_see_the_store_before_the_batch_writes(make_store: StoreFactory) -> None:
    ours, ref = make_store(), InMemoryStore()
    ops: list[Op] = [
        PutOp(ALICE, "a", {"v": 1}),
        GetOp(ALICE, "a"),
        PutOp(ALICE, "a", {"v": 2}),
        SearchOp(ALICE),
        PutOp(ALICE, "b", {"v": 3}),
    ]
    assert ours.batch(ops) == ref.batch(ops) == [None, None, None, [], None]
    then: list[Op] = [GetOp(ALICE, "a"), GetOp(ALICE, "b"), SearchOp(ALICE)]
    after_ours, after_ref = ours.batch(then), ref.batch(then)
    assert view(after_ours[:2]) == view(after_ref[:2]) == [(ALICE, "a", {"v": 2}), (ALICE, "b", {"v": 3})]  # type: ignore[arg-type]
    assert view(after_ours[2]) == view(after_ref[2])  # type: ignore[arg-type]


# --- scope: users never see each other ------------------------------------------------------------
def test_two_users_never_see_each_other(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    store.put(BOB, "tea", {"text": "Alice likes green tea"})  # same words, other user
    alice = store.search(ALICE, query="green tea", limit=50)
    bob = store.search(BOB, query="green tea", limit=50)
    assert {h.namespace[1] for h in alice} == {"alice"} and {h.namespace[1] for h in bob} == {"bob"}
    assert {h.key for h in bob} == {"k1", "tea"}
    assert store.list_namespaces(prefix=BOB) == [BOB]
    assert store.get(BOB, "k2") is None


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.search(("memories",)),
        lambda s: s.search(()),
        lambda s: s.search(("memories",), query="tea"),
        lambda s: s.list_namespaces(),
        lambda s: s.list_namespaces(prefix=("memories",)),
        lambda s: s.list_namespaces(prefix=("memories", "*")),
        lambda s: s.list_namespaces(suffix=("alice",)),
        lambda s: s.put(("memories",), "k", {"v": 1}),
        lambda s: s.get(("docs",), "k"),
    ],
)
def test_a_prefix_that_does_not_pin_one_user_raises(make_store: StoreFactory, call: Callable[[Any], Any]) -> None:
    store = make_store()
    fill(store)
    with pytest.raises(NamespaceScopeError, match="user") as info:
        call(store)
    assert isinstance(info.value, InvalidNamespaceError) and isinstance(info.value, InvalidInputError)


def test_user_position_is_configurable(make_store: StoreFactory) -> None:
    store = make_store(user_position=0)
    store.put(("alice", "memories"), "k", {"v": 1})
    assert view(store.search(("alice",))) == [(("alice", "memories"), "k", {"v": 1})]
    with pytest.raises(NamespaceScopeError):
        store.search(())


# --- semantic search ------------------------------------------------------------------------------
def test_query_search_ranks_with_recall_and_returns_what_in_memory_store_returns(make_store: StoreFactory) -> None:
    ours = make_store()
    ref = InMemoryStore(index={"dims": 256, "embed": HashEmbeddings()})
    fill(ours, ref)
    hits = ours.search(ALICE, query="what cat does Alice have", limit=10)
    assert hits[0].key == "k2" and hits[0].score is not None and 0 < hits[0].score <= 1
    assert [h.score for h in hits] == sorted((h.score or 0.0 for h in hits), reverse=True)
    ref_hits = ref.search(ALICE, query="what cat does Alice have", limit=10)
    assert sorted(view(hits)) == sorted(view(ref_hits))  # same items; the order is ours
    paged = ours.search(ALICE, query="what cat does Alice have", limit=2, offset=1)
    assert view(paged) == view(hits[1:3])
    filtered = ours.search(ALICE, query="what cat does Alice have", filter={"n": {"$ne": 2}})
    assert "k2" not in {h.key for h in filtered} and len(filtered) == 3


def test_index_false_stores_without_vector_and_index_fields_embed_those_fields(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(ALICE, "hidden", {"text": "zebra stripes zebra"}, index=False)
    store.put(ALICE, "title", {"title": "zebra facts", "body": "nothing here"}, index=["title"])
    store.put(ALICE, "body", {"title": "zebra facts", "body": "nothing here"}, index=["body"])
    store.put(ALICE, "other", {"text": "the weather is mild"})
    hits = store.search(ALICE, query="zebra", limit=10)
    assert hits[0].key == "title"
    assert hits[-1].key == "hidden" and hits[-1].score is None  # unindexed: listed after, unscored
    assert [h.score is None for h in hits] == [False, False, False, True]
    got = store.get(ALICE, "hidden")
    assert got is not None and got.value == {"text": "zebra stripes zebra"}


def test_langchain_embeddings_through_the_index_config() -> None:
    index = {"dims": 256, "embed": HashEmbeddings(), "fields": ["text"]}
    with VectorSummaryStore(MemoryConfig(), index=index) as store:  # type: ignore[arg-type]
        assert store.index_config == {"dims": 256, "fields": ["text"]}
        store.put(ALICE, "a", {"text": "sailing on the lake", "other": "cat"})
        store.put(ALICE, "b", {"text": "cat food brands", "other": "lake"})
        assert store.search(ALICE, query="cat")[0].key == "b"


# --- TTL ------------------------------------------------------------------------------------------
def test_ttl_hides_expired_items_refreshes_on_read_and_sweeps(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(clock=clock)
    assert store.supports_ttl
    store.put(ALICE, "short", {"text": "short lived"}, ttl=1.0)  # minutes
    store.put(ALICE, "quiet", {"text": "short lived, never read"}, ttl=1.0)
    store.put(ALICE, "forever", {"text": "stays"})
    clock.advance(40)
    assert store.get(ALICE, "short") is not None  # refreshes: expires 60 s from now
    assert store.get(ALICE, "quiet", refresh_ttl=False) is not None
    clock.advance(40)
    assert store.get(ALICE, "quiet") is None  # 80 s after its write
    assert [h.key for h in store.search(ALICE, query="short lived")] == ["short", "forever"]  # search refreshes
    clock.advance(61)
    assert store.get(ALICE, "short") is None and view(store.search(ALICE)) == [(ALICE, "forever", {"text": "stays"})]
    store.put(BOB, "gone", {"v": 1}, ttl=0.5)
    clock.advance(31)
    assert store.list_namespaces(prefix=BOB) == []
    assert store.backend.count() == 4
    assert store.sweep_ttl() == 3 and store.backend.count() == 1


def test_a_read_right_after_a_put_writes_nothing_so_it_cannot_revert_another_workers_put(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two stores over one collection stand for two worker processes: a refresh rewrites the
    # whole record, so a refresh made from a read older than the other's put would revert it.
    clock = FakeClock()
    store = make_store(clock=clock)
    updates: list[list[str]] = []
    real_update = store.backend.update
    monkeypatch.setattr(store.backend, "update", lambda rs: (updates.append([r.id for r in rs]), real_update(rs)))
    store.put(ALICE, "counter", {"i": 1}, ttl=60.0)
    clock.advance(2)
    assert store.get(ALICE, "counter") is not None and store.search(ALICE, query="counter")
    assert updates == []  # within 5 % of the TTL (3 minutes) of its put: no rewrite
    clock.advance(200)
    stale = store.get(ALICE, "counter", refresh_ttl=False)
    assert stale is not None and store.get(ALICE, "counter") is not None and len(updates) == 1
    clock.advance(30 * 60)  # refreshed 200 s in: 60 minutes from then
    assert store.get(ALICE, "counter", refresh_ttl=False) is not None


def test_a_sweep_spares_an_item_put_again_after_its_scan(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    store = make_store(clock=clock)
    store.put(ALICE, "session", {"token": "OLD"}, ttl=1.0)
    clock.advance(61)
    real_scan = store.backend.scan

    def scan_then_another_worker_puts(*args: Any, **kwargs: Any) -> Any:
        found = real_scan(*args, **kwargs)
        store.put(ALICE, "session", {"token": "NEW"}, ttl=1.0)  # between the sweep's scan and its delete
        return found

    monkeypatch.setattr(store.backend, "scan", scan_then_another_worker_puts)
    assert store.sweep_ttl() == 0
    monkeypatch.setattr(store.backend, "scan", real_scan)
    assert store.get(ALICE, "session").value == {"token": "NEW"}  # type: ignore[union-attr]


def test_default_ttl_from_ttl_config_and_replace_resets_it(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(clock=clock, ttl={"default_ttl": 1.0, "refresh_on_read": False})
    store.put(ALICE, "a", {"v": 1})
    clock.advance(50)
    assert store.get(ALICE, "a") is not None  # no refresh (refresh_on_read=False)
    store.put(ALICE, "b", {"v": 2}, ttl=None)
    clock.advance(20)
    assert store.get(ALICE, "a") is None and store.get(ALICE, "b") is not None
    store.put(ALICE, "a", {"v": 3})  # a put after expiry is a new item
    assert store.get(ALICE, "a").value == {"v": 3}  # type: ignore[union-attr]


def test_ttl_sweeper_thread_removes_expired_items(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(clock=clock, ttl={"sweep_interval_minutes": 1})
    store.put(ALICE, "a", {"v": 1}, ttl=1.0)
    store.put(ALICE, "b", {"v": 2})
    clock.advance(61)
    store.start_ttl_sweeper(interval_minutes=0.001)  # every 60 ms
    try:
        deadline = time.monotonic() + 10
        while store.backend.count() != 1 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        store.stop_ttl_sweeper()
    assert store.backend.count() == 1 and store.get(ALICE, "b") is not None


# --- validation: nothing half-stored --------------------------------------------------------------
@pytest.mark.parametrize("value", [{"s": {1, 2}}, {1: "x"}, {"f": float("nan")}, {"o": object()}])
def test_bad_values_raise_before_anything_is_written(make_store: StoreFactory, value: dict[Any, Any]) -> None:
    store = make_store()
    with pytest.raises(InvalidInputError):
        store.batch([PutOp(ALICE, "good", {"v": 1}), PutOp(ALICE, "bad", value)])
    assert store.get(ALICE, "good") is None and store.backend.count() == 0


def test_search_serves_the_current_item_and_get_what_was_put(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(ALICE, "a", {"text": "My budget is 5000 euros."})
    store.put(ALICE, "b", {"text": "My budget is now 8000 euros."})
    store.put(ALICE, "c", {"text": "I ran 5 km on Monday."})
    store.put(ALICE, "d", {"text": "I ran 10 km on Wednesday."})
    keys = [i.key for i in store.search(ALICE, query="what is my budget", limit=10)]
    assert "b" in keys and "a" not in keys  # the update replaced the old value in search
    assert {"c", "d"} <= set(keys)  # two events: both kept
    old = store.get(ALICE, "a")
    assert old is not None and old.value == {"text": "My budget is 5000 euros."}  # get by key: as put
    [record] = store.backend.get([record_id(ALICE, "a")])
    assert record.valid_to is not None and record.metadata["lg_superseded_by"] == "b"
    store.delete(ALICE, "b")  # the newer item gone: the older is current again
    assert "a" in [i.key for i in store.search(ALICE, query="what is my budget", limit=10)]


def test_conflict_overwrite_off_keeps_every_key(make_store: StoreFactory) -> None:
    store = make_store(conflict_overwrite=False)
    store.put(ALICE, "a", {"text": "My budget is 5000 euros."})
    store.put(ALICE, "b", {"text": "My budget is now 8000 euros."})
    assert {"a", "b"} <= {i.key for i in store.search(ALICE, query="what is my budget", limit=10)}


def test_other_invalid_input(make_store: StoreFactory) -> None:
    store = make_store()
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "alice"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("memories", "a.b"), "k", {"v": 1})])
    with pytest.raises(InvalidInputError, match="ttl"):
        store.put(ALICE, "k", {"v": 1}, ttl=-1)
    with pytest.raises(InvalidInputError, match="key must be a string"):
        store.batch([PutOp(ALICE, 7, {"v": 1})])  # type: ignore[arg-type]
    for bad in (
        {"index": {"dims": 3}},
        {"index": {"field": ["text"]}},
        {"ttl": {"default_ttl": -1}},
        {"ttl": {"ttl": 5}},
        {"user_position": -1},
        {"index": {"fields": "text"}},
    ):
        with pytest.raises(ConfigError):
            make_store(**bad)


# --- async ----------------------------------------------------------------------------------------
class SlowEmbedder(DeterministicHashEmbedder):
    """Sleeps in embed calls and records the thread and a context variable it ran with."""

    def __init__(self) -> None:
        super().__init__(dimension=256)
        self.seen: list[tuple[int, str]] = []

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        if texts != ["dimension probe"]:
            time.sleep(0.2)
            self.seen.append((threading.get_ident(), REQUEST.get()))
        return super()._embed(texts, is_query)


REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST", default="unset")


def test_async_path_runs_in_a_worker_thread_with_the_context(make_store: StoreFactory) -> None:
    embedder = SlowEmbedder()
    store = make_store(embedder=embedder)

    async def main() -> tuple[int, list[Any]]:
        REQUEST.set("req-42")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        await store.aput(ALICE, "a", {"text": "Alice likes green tea"})
        await store.aput(BOB, "a", {"text": "Bob likes green tea"})
        out = [
            await store.aget(ALICE, "a"),
            await store.asearch(ALICE, query="green tea"),
            await store.alist_namespaces(prefix=ALICE),
        ]
        await store.adelete(ALICE, "a")
        out.append(await store.aget(ALICE, "a"))
        task.cancel()
        return ticks, out

    loop_thread = threading.get_ident()
    ticks, (got, hits, namespaces, gone) = asyncio.run(main())
    assert got is not None and got.value == {"text": "Alice likes green tea"}
    assert [h.namespace for h in hits] == [ALICE] and namespaces == [ALICE] and gone is None
    assert embedder.seen and all(thread != loop_thread and ctx == "req-42" for thread, ctx in embedder.seen)
    assert ticks >= 20  # the loop kept running during ~0.6 s of embedding


# --- create_agent ---------------------------------------------------------------------------------
class ToolScriptModel(BaseChatModel):
    """Calls ``remember`` for "remember ...", ``recall`` for questions, then answers with the tool result.

    ``GenericFakeChatModel`` has no ``bind_tools``, which ``create_agent`` needs.
    """

    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "tool-script"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.calls.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"From memory: {last.text}")
        elif isinstance(last, HumanMessage) and last.text.lower().startswith("remember"):
            reply = self._call("remember", {"fact": last.text.split(" ", 1)[1]}, messages)
        else:
            reply = self._call("recall", {"query": last.text}, messages)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def _call(name: str, args: dict[str, Any], messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(
            content="", tool_calls=[{"name": name, "args": args, "id": f"call-{len(messages)}", "type": "tool_call"}]
        )

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolScriptModel:
        return self


def _user(runtime: ToolRuntime) -> tuple[str, ...]:
    return ("memories", runtime.config["configurable"]["user_id"])


@tool
def remember(fact: str, runtime: ToolRuntime) -> str:
    """Save a fact about the user."""
    assert runtime.store is not None
    runtime.store.put(_user(runtime), f"fact-{abs(hash(fact))}", {"text": fact})
    return "saved"


@tool
def recall(query: str, runtime: ToolRuntime) -> str:
    """Find facts about the user."""
    assert runtime.store is not None
    hits = runtime.store.search(_user(runtime), query=query, limit=1)
    return hits[0].value["text"] if hits else "nothing"


@tool("remember")
async def aremember(fact: str, runtime: ToolRuntime) -> str:
    """Save a fact about the user."""
    assert runtime.store is not None
    await runtime.store.aput(_user(runtime), f"fact-{abs(hash(fact))}", {"text": fact})
    return "saved"


@tool("recall")
async def arecall(query: str, runtime: ToolRuntime) -> str:
    """Find facts about the user."""
    assert runtime.store is not None
    hits = await runtime.store.asearch(_user(runtime), query=query, limit=1)
    return hits[0].value["text"] if hits else "nothing"


def _ask(agent: Any, text: str, thread: str, user: str) -> str:
    out = agent.invoke(
        {"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": thread, "user_id": user}}
    )
    return str(out["messages"][-1].text)


def test_agent_writes_in_one_thread_and_finds_it_in_another(make_store: StoreFactory) -> None:
    store = make_store()
    model = ToolScriptModel()
    agent = create_agent(model, tools=[remember, recall], store=store, checkpointer=InMemorySaver())
    assert _ask(agent, "remember I am allergic to peanuts", "t1", "alice") == "From memory: saved"
    model.calls.clear()
    answer = _ask(agent, "what food allergies do I have?", "t2", "alice")
    assert answer == "From memory: I am allergic to peanuts"
    assert not any("remember" in m.text for call in model.calls for m in call)  # not via the thread's history
    assert _ask(agent, "what food allergies do I have?", "t3", "bob") == "From memory: nothing"
    assert [i.namespace for i in store.search(ALICE)] == [ALICE]


def test_agent_async_path(make_store: StoreFactory) -> None:
    store = make_store()
    agent = create_agent(ToolScriptModel(), tools=[aremember, arecall], store=store, checkpointer=InMemorySaver())

    async def ask(text: str, thread: str, user: str) -> str:
        out = await agent.ainvoke(
            {"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": thread, "user_id": user}}
        )
        return str(out["messages"][-1].text)

    async def main() -> list[str]:
        return [
            await ask("remember my flight code is XK-42", "t1", "alice"),
            await ask("what was my flight code?", "t2", "alice"),
            await ask("what was my flight code?", "t3", "bob"),
        ]

    assert asyncio.run(main()) == ["From memory: saved", "From memory: my flight code is XK-42", "From memory: nothing"]


# --- real default embedder, persistent Chroma -----------------------------------------------------
@pytest.mark.integration
def test_chroma_store_with_the_default_embedder_survives_reopen(tmp_path: Path) -> None:
    config = MemoryConfig(backend="chroma", persist_dir=str(tmp_path), collection="langgraph_store")
    facts = {
        "allergy": "I am allergic to peanuts",
        "city": "我住在上海，在一家银行工作",
        "pet": "My dog is called Biscuit",
        "car": "I drive an old red Volvo",
    }
    with VectorSummaryStore(config) as store:
        for key, text in facts.items():
            store.put(ALICE, key, {"text": text})
        store.put(BOB, "allergy", {"text": "Bob is allergic to shellfish"})
    with VectorSummaryStore(config) as store:
        assert store.get(ALICE, "pet") is not None
        assert store.search(ALICE, query="what food can't I eat?", limit=1)[0].key == "allergy"
        assert store.search(ALICE, query="他在哪里工作？", limit=1)[0].key == "city"
        assert store.search(ALICE, query="what is the name of my puppy", limit=1)[0].key == "pet"
        assert {h.key for h in store.search(BOB, query="allergy", limit=10)} == {"allergy"}
        assert store.search(BOB, query="allergy")[0].value == {"text": "Bob is allergic to shellfish"}


def test_a_lone_surrogate_in_a_key_or_namespace_is_a_named_error(make_store: StoreFactory) -> None:
    store = make_store()
    for namespace, key in ((ALICE, "k\ud800"), ((*ALICE, "\ud800"), "k")):
        with pytest.raises(InvalidInputError, match="valid Unicode"):
            store.put(namespace, key, {"text": "x"})
        assert store.get(namespace, key) is None


@pytest.mark.parametrize("backend", ["sqlite", "chroma"])
def test_a_core_on_the_stores_collection_neither_recalls_nor_maintains_its_items(
    backend: str, tmp_path: Path, hash_embedder: DeterministicHashEmbedder
) -> None:
    # The README gives the store a collection of its own; forgetting to must not leak an item
    # (index=False ones included) into a conversation's prompt, nor let maintain() evict it.
    from memory_vec import MemoryCore

    config = MemoryConfig(
        backend=backend, persist_dir=str(tmp_path), user_id="alice", score_threshold=0.0, max_memories_per_user=1
    )
    store = VectorSummaryStore(config, embedder=hash_embedder)
    store.put(("secrets", "alice"), "otp", {"note": "one time password for the bank is 4711"}, index=False)
    store.put(("secrets", "alice"), "pin", {"note": "the bank card pin is 0000"})
    core = MemoryCore(config, embedder=hash_embedder)
    core.add_message("user", "What is the one time password for the bank card?")
    assert not any("4711" in m.text or "0000" in m.text for m in core.recall("one time password bank card pin"))
    assert "4711" not in core.build_context("one time password for the bank").render()
    assert core.maintain().evicted == []
    assert store.get(("secrets", "alice"), "otp") is not None and store.get(("secrets", "alice"), "pin") is not None
    core.close()
    store.close()


def test_malformed_filters_stray_marker_records_and_bad_unicode_get_named_errors(make_store: StoreFactory) -> None:
    from memory_vec._model.errors import InvalidMetadataError
    from memory_vec._model.records import MemoryRecord

    store = make_store()
    store.put(ALICE, "diet", {"text": "vegetarian", "n": 3})
    for bad in ({"n": {"$gt": 1, "x": 2}}, {"missing": {"$eq": None, "oops": 2}}):
        with pytest.raises(InvalidInputError, match="mixes operators"):
            store.search(ALICE, filter=bad)
    deep: dict[str, Any] = {"v": 1}
    for _ in range(3000):
        deep = {"a": deep}
    with pytest.raises(InvalidInputError, match="nested deeper"):
        store.search(ALICE, filter=deep)
    # A record that carries the marker but is no item (a core's remember(metadata=...)) is skipped.
    stray = MemoryRecord(
        id="stray",
        text="not json",
        role="user",
        user_id="alice",
        session_id="x",
        timestamp=time.time(),
        metadata={"lg_store": 1},
    )
    store.backend.upsert([stray], np.ones((1, store.embedder.dimension), dtype=np.float32))
    assert [h.key for h in store.search(ALICE)] == ["diet"] and store.list_namespaces(prefix=ALICE) == [ALICE]
    # A lone surrogate in a value is refused by name before anything of the batch is written.
    with pytest.raises(InvalidMetadataError, match=r"'bad' value\.t: the text is not valid Unicode"):
        store.batch([PutOp(ALICE, "good", {"t": "fine"}), PutOp(ALICE, "bad", {"t": "x\ud800y"})])
    assert store.get(ALICE, "good") is None
