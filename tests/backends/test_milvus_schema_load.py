"""Opening a new Milvus server collection that another process is still creating."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("message", [
    "index not found[collection=c]",  # 2.4+
    "there is no vector index on collection: c, please create index firstly",  # 2.3
])
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
    load(client, "c", index_type="HNSW", index_params={}, timeout=5.0,
         translate=lambda action: Translate("http://server", "c", 5.0, action))
    assert client.loads == 2
