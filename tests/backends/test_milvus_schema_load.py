"""Opening a new Milvus server collection that another process is still creating."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "message",
    [
        "index not found[collection=c]",  # 2.4+
        "there is no vector index on collection: c, please create index firstly",  # 2.3
    ],
)
def test_loading_a_collection_another_process_is_still_indexing_waits_for_its_index(message: str) -> None:
    """Four processes opening one new server collection: one loads before the creator's index exists."""
    from memory_vec.backends._milvus_errors import Translate
    from memory_vec.backends._milvus_schema import load

    class Client:
        loads = 0

        def load_collection(self, name: str, timeout: float) -> None:
            self.loads += 1
            if self.loads == 1:
                raise RuntimeError(message)

        def list_indexes(self, name: str, field_name: str, timeout: float) -> list[str]:
            return ["vector"]  # the creator's index arrived meanwhile

    client = Client()
    load(
        client,
        "c",
        index_type="HNSW",
        index_params={},
        timeout=5.0,
        translate=lambda action: Translate("http://server", "c", 5.0, action),
    )
    assert client.loads == 2


def test_connect_tries_once_more_after_a_too_many_pings_goaway(monkeypatch: pytest.MonkeyPatch) -> None:
    import pymilvus

    from memory_vec.backends import _milvus_client

    calls: list[dict[str, object]] = []

    class Flaky:
        def __init__(self, **kwargs: object) -> None:
            calls.append(kwargs)
            if len(calls) == 1:
                raise RuntimeError('<_InactiveRpcError: status = StatusCode.UNAVAILABLE, "Too many pings">')

    monkeypatch.setattr(pymilvus, "MilvusClient", Flaky)
    client = _milvus_client.connect("http://127.0.0.1:1", timeout=1, token=None, db_name=None, dedicated=True)
    assert isinstance(client, Flaky) and len(calls) == 2 and calls[1]["dedicated"] is True

    class Down:
        def __init__(self, **kwargs: object) -> None:
            calls.append(kwargs)
            raise RuntimeError("connection refused")

    monkeypatch.setattr(pymilvus, "MilvusClient", Down)
    with pytest.raises(RuntimeError, match="refused"):
        _milvus_client.connect("http://127.0.0.1:1", timeout=1, token=None, db_name=None, dedicated=False)
    assert len(calls) == 3  # any other failure is not retried here (the guard retries calls)
