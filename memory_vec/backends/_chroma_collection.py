"""Connect to Chroma, and create or check memory-vec's collection.

The collection's metadata records the schema version, the embedding model
and the dimension; :func:`check_compatible` refuses a collection made by
something else or for another model. Chroma never embeds anything here: the
collection is created without an embedding function, so nothing downloads.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from memory_vec._model.errors import DependencyMissingError, EmbeddingModelMismatchError, SchemaMismatchError
from memory_vec.backends import _chroma_lock
from memory_vec.backends._chroma_errors import is_not_found
from memory_vec.backends._names import chroma_name as chroma_name  # the collection's name in Chroma

__all__ = [
    "HNSW_KEYS",
    "SCHEMA_VERSION",
    "check_compatible",
    "chroma_name",
    "connect",
    "get_or_create",
    "import_chromadb",
]

SCHEMA_VERSION = 1
_META_SCHEMA = "memory_vec_schema"
_META_MODEL = "memory_vec_model_id"
_META_DIMENSION = "memory_vec_dimension"
HNSW_KEYS = ("ef_construction", "ef_search", "max_neighbors", "num_threads", "resize_factor", "sync_threshold")


def import_chromadb() -> None:
    try:
        import chromadb  # noqa: F401
    except ImportError as exc:
        raise DependencyMissingError("The Chroma backend needs chromadb: pip install 'memory-vec[chroma]'") from exc


def connect(
    *, path: str | None, url: str | None, headers: dict[str, str], tenant: str | None, database: str | None
) -> tuple[Any, int]:
    """A client for the embedded store at ``path`` (locked for this process) or the server at ``url``.

    Returns:
        The client and the largest batch to send it.
    """
    import_chromadb()
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False, allow_reset=False)
    tenancy = {k: v for k, v in (("tenant", tenant), ("database", database)) if v}
    if path is not None:
        os.makedirs(path, exist_ok=True)
        _chroma_lock.acquire(path)
        try:
            client: Any = chromadb.PersistentClient(path=path, settings=settings, **tenancy)
        except BaseException:
            _chroma_lock.release(path)
            raise
    else:
        assert url is not None
        parsed = urlparse(url)
        ssl = parsed.scheme == "https"
        port = parsed.port or (443 if ssl else 8000)
        client = chromadb.HttpClient(
            host=parsed.hostname or "localhost",
            port=port,
            ssl=ssl,
            headers=headers or None,
            settings=settings,
            **tenancy,
        )
    try:
        max_batch = max(1, min(int(client.get_max_batch_size()), 5000))
    except Exception:  # noqa: BLE001 - older servers fail in their own ways: stay with the conservative default
        max_batch = 1000
    return client, max_batch


def get_or_create(client: Any, name: str, dimension: int, model_id: str, hnsw: dict[str, Any]) -> Any:
    """The collection ``name``, created for this embedder when it does not exist."""
    try:
        return client.get_collection(name, embedding_function=None)
    except Exception as exc:
        if not is_not_found(exc):
            raise
    metadata = {_META_SCHEMA: SCHEMA_VERSION, _META_MODEL: model_id, _META_DIMENSION: dimension}
    try:
        return client.create_collection(
            name,
            metadata=metadata,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine", **hnsw}},
        )
    except Exception as exc:  # another process created it in between
        if "already exists" not in str(exc).lower():
            raise
        return client.get_collection(name, embedding_function=None)


def check_compatible(collection: Any, name: str, where: str | None, dimension: int, model_id: str) -> None:
    """Raise unless ``collection`` was made by this schema version for this embedder.

    Raises:
        SchemaMismatchError: another schema version, or not cosine distance.
        EmbeddingModelMismatchError: another model or dimension.
    """
    meta = collection.metadata or {}
    if meta.get(_META_SCHEMA) != SCHEMA_VERSION:
        raise SchemaMismatchError(
            f"Chroma collection {name!r} at {where} has schema version "
            f"{meta.get(_META_SCHEMA)!r}, this memory-vec needs {SCHEMA_VERSION} (a collection not made by "
            "memory-vec, or by another version). Choose another `collection` name or delete that collection."
        )
    space = (_configuration(collection).get("hnsw") or {}).get("space", "cosine")
    if space != "cosine":
        raise SchemaMismatchError(
            f"Chroma collection {name!r} uses distance {space!r}; memory-vec needs 'cosine'. "
            "Choose another `collection` name."
        )
    stored = (meta.get(_META_MODEL), meta.get(_META_DIMENSION))
    if stored != (model_id, dimension):
        raise EmbeddingModelMismatchError(
            f"Chroma collection {name!r} at {where} holds vectors of {stored[0]!r} "
            f"(dimension {stored[1]}); it was opened with {model_id!r} (dimension {dimension}). "
            "Use the original embedding model, another `collection`, or memory_vec._pipelines.maintenance.reembed()."
        )


def _configuration(collection: Any) -> dict[str, Any]:
    try:
        # The raw JSON: the parsed `.configuration` warns about the (intended) absent embedding function.
        config = collection.configuration_json
    except Exception:  # noqa: BLE001 - a client without it: no configuration to check
        return {}
    return dict(config) if isinstance(config, dict) else {}
