"""The one error tree of memory-vec.

Every error the library raises on purpose derives from :class:`MemoryVecError`,
so ``except MemoryVecError`` catches exactly our errors. Input errors also
derive from :class:`ValueError` / :class:`TypeError` so that generic handlers
keep working. Driver exceptions are translated at the backend boundary with
``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BackendTimeoutError",
    "BackendUnavailableError",
    "ConfigError",
    "ContentTooLargeError",
    "CrossUserImportError",
    "DependencyMissingError",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "InvalidContentError",
    "InvalidIdError",
    "InvalidInputError",
    "InvalidMetadataError",
    "InvalidRoleError",
    "InvalidTimestampError",
    "MemoryNotFoundError",
    "MemoryVecError",
    "RecordRejectedError",
    "SchemaMismatchError",
    "StateStoreError",
    "StoreLockedError",
    "SummaryRejectedError",
    "SupersededMemoryError",
    "UnknownEmbeddingModelError",
]


class MemoryVecError(Exception):
    """Base class of every error memory-vec raises on purpose."""


class ConfigError(MemoryVecError, ValueError):
    """A configuration value is invalid; the message names the field."""


class InvalidInputError(MemoryVecError, ValueError):
    """An argument to a public method is invalid. Nothing was written."""


class CrossUserImportError(InvalidInputError):
    """An import aimed at a user other than the core's own: an operator's path,
    taken only with ``allow_other_user=True``."""


class InvalidContentError(InvalidInputError):
    """Message content is empty, not a string, or not valid text."""


class ContentTooLargeError(InvalidContentError):
    """Message content is larger than ``max_content_bytes``."""


class InvalidRoleError(InvalidInputError):
    """The role is not one of user, assistant, system, tool."""


class InvalidTimestampError(InvalidInputError):
    """A timestamp is not a finite epoch value or a datetime."""


class InvalidIdError(InvalidInputError):
    """A user/session/agent/memory id is empty, too long or not a string."""


class InvalidMetadataError(InvalidInputError):
    """Caller metadata is not a JSON-serializable dict within the size limit."""


class BackendError(MemoryVecError):
    """A vector backend failed."""


class BackendUnavailableError(BackendError):
    """The backend cannot be reached (server down, connection lost)."""


class BackendTimeoutError(BackendUnavailableError):
    """A backend call took longer than ``backend_timeout``."""


class RecordRejectedError(BackendError):
    """The backend refused some records while it stored the others.

    The refused records are kept on the store's dead-letter list
    (``memory-vec dead-letters``), never retried on their own and never
    blocking other writes. ``record_ids`` names them; ``reasons`` maps each
    id to the backend's message.
    """

    def __init__(self, message: str, *, reasons: dict[str, str]) -> None:
        super().__init__(message)
        self.reasons = dict(reasons)

    @property
    def record_ids(self) -> list[str]:
        return list(self.reasons)


class SchemaMismatchError(BackendError):
    """An existing collection has a schema this version cannot use."""


class EmbeddingModelMismatchError(SchemaMismatchError):
    """The collection was built with another embedding model or dimension."""


class EmbeddingError(MemoryVecError):
    """The embedder failed or returned vectors of the wrong shape."""


class StateStoreError(MemoryVecError):
    """The working-state store (SQLite, Redis) failed."""


class StoreLockedError(MemoryVecError):
    """An embedded store is already open in another process."""


class MemoryNotFoundError(MemoryVecError, KeyError):
    """No memory with that id exists in the caller's scope."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "memory not found"


class SummaryRejectedError(MemoryVecError):
    """A summarizer produced an empty, error-like or over-budget summary."""


class DependencyMissingError(MemoryVecError, ImportError):
    """An optional dependency is not installed; the message names the extra."""


class SupersededMemoryError(InvalidInputError):
    """The memory was superseded: pin, unpin, update or delete would act on
    history instead of the current value. ``current_id`` names the memory
    that is current now (the end of the supersede chain)."""

    def __init__(self, message: str, *, memory_id: str, current_id: str | None) -> None:
        super().__init__(message)
        self.memory_id = memory_id
        self.current_id = current_id


class UnknownEmbeddingModelError(ConfigError, EmbeddingError):
    """The ``embedding_model`` setting names a model that cannot be loaded here
    (not packaged, not a local path, not in the local Hugging Face cache)."""
