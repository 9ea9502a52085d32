"""Chroma driver exceptions become memory-vec errors that say what to do."""

from __future__ import annotations

from types import TracebackType

from memory_vec._model.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    InvalidInputError,
    StoreLockedError,
)

__all__ = ["Translate", "is_auth_error", "is_connection_error", "is_index_not_on_disk_yet", "is_not_found"]


class Translate:
    """Context manager: a driver exception raised inside becomes a memory-vec error, ``from`` it.

    Args:
        where: the store's URL or path, for the message.
        action: what was being done ("write records"), for the message.
    """

    def __init__(self, where: str | None, action: str) -> None:
        self.where, self.action = where, action

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None or isinstance(exc, (BackendError, InvalidInputError, StoreLockedError, ConfigError)):
            return
        if not isinstance(exc, Exception):
            return
        where = self.where
        if is_connection_error(exc):
            raise BackendUnavailableError(
                f"Could not {self.action}: the Chroma server at {where} is unreachable ({exc}). "
                "Check that it is running and that `url` is right."
            ) from exc
        if is_index_not_on_disk_yet(exc):
            raise BackendUnavailableError(
                f"Could not {self.action}: the Chroma server at {where} was still writing a new "
                f"collection's index to disk ({exc}); retried with backoff (backend_retries)."
            ) from exc
        if is_read_during_delete(exc):
            raise BackendUnavailableError(
                f"Could not {self.action}: the Chroma server at {where} met rows another client was "
                f"deleting ({exc}); retried with backoff (backend_retries)."
            ) from exc
        if is_auth_error(exc):
            raise BackendError(
                f"Could not {self.action}: the Chroma server at {where} refused the credentials ({exc}). "
                "Check backend_options.headers / tenant / database."
            ) from exc
        raise BackendError(f"Chroma failed to {self.action} at {where}: {type(exc).__name__}: {exc}") from exc


def is_not_found(exc: BaseException) -> bool:
    return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc).lower()


def is_connection_error(exc: BaseException) -> bool:
    try:
        import httpx
    except ImportError:  # pragma: no cover - chromadb depends on httpx
        pass
    else:
        if isinstance(exc, httpx.TransportError):
            return True
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    text = str(exc).lower()
    return "could not connect" in text or "connection refused" in text


def is_index_not_on_disk_yet(exc: BaseException) -> bool:
    # Chroma 1.x server: a read that opens a new collection's HNSW segment while the
    # server's first flush of it is under way fails with this; a moment later it works.
    # ("Error loading hnsw index", a damaged index, is not retried.)
    text = str(exc)
    return "hnsw segment reader" in text and "Nothing found on disk" in text


def is_read_during_delete(exc: BaseException) -> bool:
    # Chroma 1.x server: a query whose plan found ids that a concurrent delete removed
    # ("Error executing plan: Internal error: Error finding id"); the same read again works.
    return "Error finding id" in str(exc)


def is_auth_error(exc: BaseException) -> bool:
    return type(exc).__name__ in {"ChromaAuthError", "AuthorizationError"} or "401" in str(exc) or "403" in str(exc)
