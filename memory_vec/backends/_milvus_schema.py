"""The Milvus collection memory-vec writes: its fields, creating it, checking it, loading it.

Collection properties record the schema version, the embedding model and
the dimension; :func:`verify` refuses a collection made by something else
or for another model. Changing a field here changes the on-disk schema:
existing collections must keep opening, so bump ``SCHEMA_VERSION`` instead.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from memory_vec._model.errors import BackendError, EmbeddingModelMismatchError, SchemaMismatchError
from memory_vec.backends._milvus_errors import Translate

log = logging.getLogger("memory_vec")

__all__ = [
    "ID_BYTES",
    "OUTPUT",
    "SCALARS",
    "SCHEMA_VERSION",
    "SCOPE_FIELDS",
    "TEXT_BYTES",
    "create",
    "create_like",
    "load",
    "verify",
]

SCHEMA_VERSION = "1"
_PROP_MODEL, _PROP_DIM, _PROP_SCHEMA = "memvec.model_id", "memvec.dimension", "memvec.schema_version"
ID_BYTES = 1024  # 256 characters (MAX_ID_LENGTH) of up to 4 UTF-8 bytes
TEXT_BYTES = 65535
SCALARS = (
    "id",
    "owner",
    "user_id",
    "session_id",
    "agent_id",
    "role",
    "kind",
    "visibility",
    "timestamp",
    "seq",
    "importance",
    "superseded",
    "valid_to",
    "superseded_by",
    "archived",
    "pinned",
    "expire_at",
    "subject",
    "text",
    "metadata",
    "attrs",
)
OUTPUT = list(SCALARS)
#: The fields of a user's scope filter, indexed in a server collection made here
#: (Trie on 2.3, INVERTED from 2.4 and on Milvus Lite's server, which has no Trie).
#: Unindexed, a server compares every row's string per query: at 1M rows over 10k
#: users on 2.3, the server answered a user's rows with vectors in 27-30 ms, in 16.5
#: with user_id and visibility indexed (end to end a first recall moved 3.6 ms,
#: benchmarks/RESULTS.md).
SCOPE_FIELDS = ("user_id", "visibility", "kind")


def create(
    client: Any,
    collection: str,
    *,
    dimension: int,
    model_id: str,
    partition_key: bool,
    num_partitions: int,
    index_type: str,
    index_params: dict[str, Any],
    timeout: float,
    scope_index: str | None = None,
) -> None:
    """Create the collection with its vector index, and the :data:`SCOPE_FIELDS`' scalar
    indexes of type ``scope_index`` when given (a server; the caller translates driver errors)."""
    from pymilvus import DataType, MilvusClient  # type: ignore[import-untyped]

    pk = partition_key
    schema = MilvusClient.create_schema(
        auto_id=False, enable_dynamic_field=False, description=f"memory-vec records ({model_id}, {dimension}-d)"
    )
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_BYTES)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
    schema.add_field("owner", DataType.VARCHAR, max_length=ID_BYTES, is_partition_key=pk)
    for name in ("user_id", "session_id", "agent_id", "superseded_by", "subject"):
        schema.add_field(name, DataType.VARCHAR, max_length=ID_BYTES)
    for name in ("role", "kind", "visibility"):
        schema.add_field(name, DataType.VARCHAR, max_length=64)
    for name in ("timestamp", "importance", "valid_to", "expire_at"):
        schema.add_field(name, DataType.DOUBLE)
    schema.add_field("seq", DataType.INT64)
    for name in ("superseded", "archived", "pinned"):
        schema.add_field(name, DataType.BOOL)
    schema.add_field("text", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("attrs", DataType.JSON)  # exact nullable fields, source ids, recall stats
    index = client.prepare_index_params()
    index.add_index("vector", index_type=index_type, metric_type="COSINE", params=index_params)
    extra: dict[str, Any] = {"num_partitions": num_partitions} if pk else {}
    properties = {_PROP_MODEL: model_id, _PROP_DIM: str(dimension), _PROP_SCHEMA: SCHEMA_VERSION}
    if scope_index is None:
        client.create_collection(
            collection,
            schema=schema,
            index_params=index,
            consistency_level="Session",
            properties=properties,
            timeout=timeout,
            **extra,
        )
        return
    # Not loaded here (:func:`load` does it). The scalar indexes come before the vector
    # index: nobody can load the collection before that one exists, and a 2.3 server will not
    # load again a collection whose indexes changed after it was loaded. Empty, they build at once.
    client.create_collection(
        collection, schema=schema, consistency_level="Session", properties=properties, timeout=timeout, **extra
    )
    scope = client.prepare_index_params()
    for field in SCOPE_FIELDS:
        scope.add_index(field, index_type=scope_index, index_name=field)
    try:
        client.create_index(collection, scope, timeout=timeout, sync=False)
    except Exception as exc:  # noqa: BLE001  # an engine without this index type: reads are exact without it
        log.info("memory-vec: %s: no %s index on %s (%s)", collection, scope_index, ", ".join(SCOPE_FIELDS), exc)
    client.create_index(collection, index, timeout=timeout)


def create_like(
    client: Any,
    collection: str,
    info: dict[str, Any],
    *,
    num_partitions: int,
    index_type: str,
    index_params: dict[str, Any],
    timeout: float,
) -> None:
    """Create ``collection`` with the schema of the one ``info`` (``describe_collection``) describes."""
    props = info.get("properties") or {}
    pk = any(f.get("is_partition_key") for f in info.get("fields", []))
    create(
        client,
        collection,
        dimension=int(props[_PROP_DIM]),
        model_id=str(props[_PROP_MODEL]),
        partition_key=pk,
        num_partitions=num_partitions,
        index_type=index_type,
        index_params=index_params,
        timeout=timeout,
    )


def verify(info: dict[str, Any], *, collection: str, uri: str, dimension: int, model_id: str) -> None:
    """Raise unless ``info`` (``describe_collection``) is memory-vec's schema for this embedder.

    Raises:
        SchemaMismatchError: another schema version, or fields missing.
        EmbeddingModelMismatchError: another model or dimension.
    """
    props = info.get("properties") or {}
    fields = {f["name"]: f for f in info.get("fields", [])}
    missing = [name for name in (*SCALARS, "vector") if name not in fields]
    if props.get(_PROP_SCHEMA) != SCHEMA_VERSION or missing:
        raise SchemaMismatchError(
            f"Milvus collection {collection!r} at {uri} was not created by memory-vec schema "
            f"version {SCHEMA_VERSION} (found version {props.get(_PROP_SCHEMA)!r}, missing fields "
            f"{missing}). Use another collection name (MemoryConfig.collection) or drop this one."
        )
    stored_dim, stored_model = stored_space(info)
    if (stored_model, stored_dim) != (model_id, dimension):
        raise EmbeddingModelMismatchError(
            f"Milvus collection {collection!r} holds vectors of {stored_model!r} (dimension "
            f"{stored_dim}); it was opened with {model_id!r} (dimension {dimension}). Use the same "
            "embedding model, another collection name, or re-embed the collection."
        )


def stored_space(info: dict[str, Any]) -> tuple[int, str]:
    """(dimension, model id) of the vectors a memory-vec collection holds ("" when unnamed)."""
    props = info.get("properties") or {}
    vector: dict[str, Any] = next((f for f in info.get("fields", []) if f["name"] == "vector"), {})
    return int(vector.get("params", {}).get("dim", props.get(_PROP_DIM, 0))), str(props.get(_PROP_MODEL) or "")


_NO_INDEX_YET = ("index not found", "no vector index", "create index first")


def load(
    client: Any,
    collection: str,
    *,
    index_type: str,
    index_params: dict[str, Any],
    timeout: float,
    translate: Callable[[str], Translate],
) -> None:
    """Load the collection for search, waiting for (or making) its vector index.

    Another process may have created the collection a moment ago and not
    yet its index (MilvusClient creates, then indexes, then loads): wait
    for the index, and create it if its creator died in between.
    """
    deadline = time.monotonic() + max(timeout, 30.0)
    while True:
        try:
            with translate("load the collection"):
                client.load_collection(collection, timeout=timeout)
            return
        except BackendError as exc:
            if "can't change the index for loaded collection" in str(exc).lower():
                return  # loaded, with the indexes it had then (someone indexed a field since): readable
            message = str(exc).lower()
            # "index not found" (2.4+), "there is no vector index ... please create index firstly" (2.3)
            if not any(m in message for m in _NO_INDEX_YET) or time.monotonic() > deadline:
                raise
        time.sleep(0.5)
        # The creator's index request may win the race (and ours fail): loading again tells.
        with contextlib.suppress(Exception):
            if not client.list_indexes(collection, field_name="vector", timeout=timeout):
                index = client.prepare_index_params()
                index.add_index("vector", index_type=index_type, metric_type="COSINE", params=index_params)
                client.create_index(collection, index, timeout=timeout)
