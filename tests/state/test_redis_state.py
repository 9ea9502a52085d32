"""RedisStateStore against a real redis-server, through the state conformance suite."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from memory_vec._model.errors import StateStoreError
from memory_vec.embeddings.base import normalize_rows
from memory_vec.state import NewMessage, StateMessage
from memory_vec.state.redis import RedisStateStore
from memory_vec.testing import parts
from memory_vec.testing.state_conformance import StateStoreConformance, dead_letter, new_message
from tests._services import Service, free_port
from tests.fixtures_redis import redis_url

pytestmark = pytest.mark.integration


class TestRedisStateStore(StateStoreConformance):
    supports_reopen = True
    supports_multiprocess = True

    @pytest.fixture
    def store(self, redis_server: Service) -> Iterator[RedisStateStore]:
        # A fresh namespace per test: no flush needed, nothing shared.
        s = RedisStateStore(redis_url(redis_server), namespace=f"test:{uuid.uuid4().hex}")
        yield s
        s.close()

    def reopen(self, store: RedisStateStore) -> RedisStateStore:  # type: ignore[override]
        return RedisStateStore(store.url, namespace=store.namespace)

    def subprocess_code(self, store: RedisStateStore) -> str:  # type: ignore[override]
        return (
            "from memory_vec.state.redis import RedisStateStore\n"
            f"store = RedisStateStore({store.url!r}, namespace={store.namespace!r})\n"
        )


def test_redis_down_raises_state_store_error() -> None:
    store = RedisStateStore(f"redis://127.0.0.1:{free_port()}/0", timeout=1)
    with pytest.raises(StateStoreError, match="Redis"):
        store.append("u1", "s1", [new_message(1)])
    with pytest.raises(StateStoreError):
        store.load("u1", "s1")


def test_namespaces_are_separate(redis_server: Service) -> None:
    a = RedisStateStore(redis_url(redis_server), namespace="ns:a")
    b = RedisStateStore(redis_url(redis_server), namespace="ns")
    a.clear("u", "s")
    b.clear("u", "s")
    a.append("u", "s", [new_message(1)])
    assert b.load("u", "s").messages == []


def test_session_key_layout_is_unchanged(redis_server: Service) -> None:
    """Sessions written by 0.1 (same key layout) load and keep working; the new
    per-collection keys stay under the namespace."""
    import redis

    url, namespace = redis_url(redis_server), f"layout:{uuid.uuid4().hex}"
    client = redis.Redis.from_url(url, decode_responses=True)
    ns, user, session = _b64(namespace), _b64("u:1"), _b64("s1")
    base = f"memvec:{ns}:s:{user}:{session}"
    client.hset(
        base + ":meta",
        mapping={"summary": "old", "summary_tokens": 2, "next_seq": 3, "folded_through": 1, "updated_at": "1.5"},
    )
    client.zadd(base + ":msgs", {'2:["m2", "user", "hi", 1.25, 1, {"k": 1}]': 2})
    client.sadd(f"memvec:{ns}:u:{user}", "s1")
    store = RedisStateStore(url, namespace=namespace)
    try:
        state = store.load("u:1", "s1")
        assert (state.summary, state.next_seq, state.folded_through) == ("old", 3, 1)
        assert state.messages == [StateMessage(2, "m2", "user", "hi", 1.25, 1, {"k": 1})]
        assert store.commit_fold(
            "u:1",
            "s1",
            expected_folded_through=1,
            folded_through=1,
            summary="new",
            summary_tokens=1,
            expected_summary="old",
        )
        assert store.append("u:1", "s1", [new_message(3)]) == [3]
        assert store.sessions("u:1") == ["s1"]
        store.new_keyword_version("u:1", "v1")
        store.add_dead_letters([dead_letter("r1", "u:1")])
        keys = set(client.scan_iter(f"memvec:{ns}:*"))
        assert keys == {
            base + ":meta",
            base + ":msgs",
            f"memvec:{ns}:u:{user}",
            f"memvec:{ns}:kv:{user}",
            f"memvec:{ns}:dl",
        }
        client.delete(*keys)
    finally:
        store.close()
        client.close()


def _b64(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def test_worker_processes_share_vectors_through_redis(redis_server: Service, tmp_path: Path) -> None:
    """A user's next turn lands on another worker process (a new Store: nothing
    in process memory): the previous exchange's vector comes from Redis, not
    from a second embedding, and the stored vector is the one a single
    process stores. A corrupt shared entry costs an embedding, never a wrong
    vector."""
    from memory_vec import MemoryConfig, MemoryCore, release_stores
    from memory_vec.backends import RecordFilter
    from tests.core.test_stored_vectors import CountingEmbedder

    def core(root: Path, emb: CountingEmbedder, namespace: str) -> MemoryCore:
        return MemoryCore(
            MemoryConfig(
                backend="sqlite",
                persist_dir=str(root),
                state="redis",
                redis_url=redis_url(redis_server),
                collection=namespace,
                user_id="u1",
                session_id="s1",
                fact_extractor="none",
            ),
            embedder=emb,
        )

    first_pair = "Where do you live?\nIn Lisbon, near the river."
    turns = [
        ("user", "Where do you live?"),
        ("assistant", "In Lisbon, near the river."),
        ("user", "And your work?"),
        ("assistant", "I teach maths."),
    ]
    for run, namespace in (("shared", f"vec:{uuid.uuid4().hex}"), ("corrupt", f"vec:{uuid.uuid4().hex}")):
        emb = CountingEmbedder(64)
        worker_a = core(tmp_path / run, emb, namespace)
        worker_a.add_messages(turns[:2])
        worker_a.flush()  # its vectors reach Redis off the turn, before the user's next request
        release_stores()  # the next request goes to another worker process
        if run == "corrupt":
            client = redis.Redis.from_url(redis_url(redis_server))
            ns = base64.urlsafe_b64encode(namespace.encode()).decode().rstrip("=")
            keys = client.keys(f"memvec:{ns}:v:*")
            assert keys and all(client.ttl(k) > 0 for k in keys)  # expiring, never kept for good
            for key in keys:
                client.set(key, b"junk", keepttl=True)
        emb.calls.clear()
        worker_b = core(tmp_path / run, emb, namespace)
        worker_b.add_messages(turns[2:])
        worker_b.flush()  # Redis holds the turn: its vectors are written off the turn by default
        embedded = [text for call in emb.calls for text in call]
        assert (first_pair in embedded) == (run == "corrupt")
        # the pair's vector plus the previous pair's, as one process stores it
        expected = normalize_rows(sum(emb.embed_documents(["And your work?\nI teach maths.", first_pair])))[0]
        [record] = [r for r in parts(worker_b).backend.scan(RecordFilter(user_id="u1")) if r.text == "I teach maths."]
        [hit] = parts(worker_b).backend.query(expected, k=1, where=RecordFilter(ids=(record.id,)))
        assert hit.similarity == pytest.approx(1.0, abs=1e-5)
        release_stores()


def test_forget_drops_the_users_vectors_from_the_shared_cache(redis_server: Service, tmp_path: Path) -> None:
    """Vectors of a forgotten user's texts do not wait out their expiry in
    Redis (derived data of deleted text); another user's stay."""
    from memory_vec import MemoryConfig, MemoryCore, release_stores
    from memory_vec._storage.vector_cache import VectorCache
    from tests.core.test_stored_vectors import CountingEmbedder

    namespace = f"vec:{uuid.uuid4().hex}"
    emb = CountingEmbedder(64)

    def core(user: str) -> MemoryCore:
        return MemoryCore(
            MemoryConfig(
                backend="sqlite",
                persist_dir=str(tmp_path),
                state="redis",
                redis_url=redis_url(redis_server),
                collection=namespace,
                user_id=user,
                session_id="s1",
            ),
            embedder=emb,
        )

    alice, bob = core("alice"), core("bob")
    alice.add_messages([("user", "My passport number is X1234567."), ("assistant", "Noted.")])
    alice.recall("what is my passport number?")
    bob.add_messages([("user", "I keep bees on the roof."), ("assistant", "Lovely.")])
    bob.flush()  # the shared tier is written off the turn
    client = redis.Redis.from_url(redis_url(redis_server))
    ns = base64.urlsafe_b64encode(namespace.encode()).decode().rstrip("=")
    before = set(client.keys(f"memvec:{ns}:v:*"))
    assert before
    receipt = alice.forget(user_id="alice")
    after = set(client.keys(f"memvec:{ns}:v:*"))
    assert after and after < before  # alice's went, bob's stayed
    assert not client.keys(f"memvec:{ns}:vu:{base64.urlsafe_b64encode(b'alice').decode().rstrip('=')}")
    # A new worker finds none of alice's texts in the shared tier, and bob's still there.
    shared = alice._engine.store.state
    docs, queries = VectorCache(8, shared=shared, kind="d"), VectorCache(8, shared=shared, kind="q")  # type: ignore[arg-type]
    model = emb.model_id
    assert docs.get_many(["My passport number is X1234567.", "I keep bees on the roof."], model).keys() == {
        "I keep bees on the roof."
    }
    assert queries.get("what is my passport number?", model) is None
    assert not any("cached vectors" in note for note in receipt.disk_notes)
    release_stores()


def test_forget_user_leaves_no_key_naming_the_user(redis_server: Service) -> None:
    import redis

    namespace = f"forget:{uuid.uuid4().hex}"
    store = RedisStateStore(redis_url(redis_server), namespace=namespace)
    for session in ("s1", "s2"):
        store.append("alice", session, [NewMessage("m1", "user", "hello", 1.0, 1, {})])
    store.append("bob", "s1", [NewMessage("m2", "user", "hi", 1.0, 1, {})])
    store.new_keyword_version("alice", "v1")
    client = redis.Redis.from_url(redis_url(redis_server))
    prefix = "memvec:" + base64.urlsafe_b64encode(namespace.encode()).decode().rstrip("=") + ":"
    alice = base64.urlsafe_b64encode(b"alice").decode().rstrip("=")
    client.hset(f"{prefix}k:{alice}", "counter", 1)  # the keyword log a 0.1 store left
    client.rpush(f"{prefix}kl:{alice}", "m1")
    before = {k.decode() for k in client.scan_iter(match=f"{prefix}*")}
    assert any(alice in k for k in before)
    store.forget_user("alice")
    after = {k.decode() for k in client.scan_iter(match=f"{prefix}*")}
    assert after and not any(alice in k for k in after)  # bob's keys stay, none names alice
    store.close()
