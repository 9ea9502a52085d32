"""RedisStateStore against a real redis-server, through the state conformance suite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from memory_vec.errors import StateStoreError
from memory_vec.state.redis import RedisStateStore
from memory_vec.testing.state_conformance import StateStoreConformance, new_message
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
        return ("from memory_vec.state.redis import RedisStateStore\n"
                f"store = RedisStateStore({store.url!r}, namespace={store.namespace!r})\n")


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
