"""Milvus driver exceptions become memory-vec errors, always ``from`` the original."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Literal

from memory_vec._model.errors import (
    BackendError,
    BackendTimeoutError,
    BackendUnavailableError,
    DependencyMissingError,
    InvalidInputError,
    StoreLockedError,
)

__all__ = ["Translate", "require_pymilvus"]


def require_pymilvus() -> Any:
    """The ``pymilvus`` module, or a :class:`DependencyMissingError` that says what to install."""
    try:
        import pymilvus  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DependencyMissingError(
            "The Milvus backend needs pymilvus (and milvus-lite for a local path): pip install 'memory-vec[milvus]'"
        ) from exc
    return pymilvus


class Translate:
    """Context manager: a driver exception raised inside becomes a memory-vec error.

    Args:
        uri: the server URI or Lite path, for the message.
        collection: the collection's name, for the message.
        timeout: seconds per call, for the message of a timeout.
        action: what was being done ("upsert 10 records"), for the message.
    """

    def __init__(self, uri: str, collection: str, timeout: float, action: str) -> None:
        self.uri, self.collection, self.timeout, self.action = uri, collection, timeout, action

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if exc is None or isinstance(exc, (BackendError, InvalidInputError, StoreLockedError)):
            return False
        if not isinstance(exc, Exception):
            return False
        where = f"Milvus at {self.uri} (collection {self.collection!r})"
        text = f"{exc}".lower()
        if "deadline" in text or "timeout" in text or "timed out" in text:
            raise BackendTimeoutError(
                f"{where} did not answer within {self.timeout}s while trying to {self.action}: {exc}"
            ) from exc
        if any(s in text for s in ("auth", "credential", "password", "permission denied")):
            raise BackendUnavailableError(
                f"{where} rejected the credentials while trying to {self.action}: check "
                f"backend_options['token'] ('user:password' or an API key). Driver said: {exc}"
            ) from exc
        if any(s in text for s in ("connect", "unavailable", "not ready", "closed channel")) or _is_grpc_error(exc):
            raise BackendUnavailableError(
                f"{where} is unreachable while trying to {self.action}: {exc}. Check that the server "
                "is running and the URL (MemoryConfig.url) is right."
            ) from exc
        raise BackendError(f"{where} failed to {self.action}: {exc}") from exc


def _is_grpc_error(exc: BaseException) -> bool:
    try:
        import grpc  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, grpc.RpcError)
