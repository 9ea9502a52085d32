"""memory-vec: conversation memory for LLM apps.

Rolling summary compression, vector recall and conflict-overwrite behind one
framework-free core. Quick start::

    from memory_vec import MemoryConfig, MemoryCore

    core = MemoryCore(MemoryConfig(user_id="u1", session_id="s1"))
    core.add_message("user", "The budget cap is 5000.")
    core.recall("what is the budget?", k=5)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memory_vec import _moved
from memory_vec._model.errors import (
    BackendError,
    BackendTimeoutError,
    BackendUnavailableError,
    ConfigError,
    ContentTooLargeError,
    CrossUserImportError,
    DependencyMissingError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    InvalidContentError,
    InvalidIdError,
    InvalidInputError,
    InvalidMetadataError,
    InvalidRoleError,
    InvalidTimestampError,
    MemoryNotFoundError,
    MemoryVecError,
    RecordRejectedError,
    SchemaMismatchError,
    StateStoreError,
    StoreLockedError,
    SummaryRejectedError,
    SupersededMemoryError,
    UnknownEmbeddingModelError,
)

if TYPE_CHECKING:
    from memory_vec._core import MemoryCore, MessageInput
    from memory_vec._model.config import MemoryConfig, RankingPolicy
    from memory_vec._model.records import (
        ChatMessage,
        DeleteResult,
        ForgetReceipt,
        MemoryContext,
        MemoryKind,
        MemoryRecord,
        RecalledMemory,
        WriteEvent,
        WriteResult,
    )
    from memory_vec._model.scope import Scope
    from memory_vec._rules.summary import ExtractiveSummarizer, LLMSummarizer, Summarizer
    from memory_vec._rules.tokens import CallableTokenCounter, TiktokenCounter, TokenCounter
    from memory_vec._storage.store import Store, open_store, release_stores

# The public names outside the errors, by the module that defines them: imported on first use, so
# `import memory_vec` stays light (numpy, pydantic and the rule tables load with the first of them).
_LAZY = {
    "MemoryCore": "memory_vec._core",
    "MessageInput": "memory_vec._core",
    "MemoryConfig": "memory_vec._model.config",
    "RankingPolicy": "memory_vec._model.config",
    "ChatMessage": "memory_vec._model.records",
    "DeleteResult": "memory_vec._model.records",
    "ForgetReceipt": "memory_vec._model.records",
    "MemoryContext": "memory_vec._model.records",
    "MemoryKind": "memory_vec._model.records",
    "MemoryRecord": "memory_vec._model.records",
    "RecalledMemory": "memory_vec._model.records",
    "WriteEvent": "memory_vec._model.records",
    "WriteResult": "memory_vec._model.records",
    "Scope": "memory_vec._model.scope",
    "ExtractiveSummarizer": "memory_vec._rules.summary",
    "LLMSummarizer": "memory_vec._rules.summary",
    "Summarizer": "memory_vec._rules.summary",
    "CallableTokenCounter": "memory_vec._rules.tokens",
    "TiktokenCounter": "memory_vec._rules.tokens",
    "TokenCounter": "memory_vec._rules.tokens",
    "Store": "memory_vec._storage.store",
    "open_store": "memory_vec._storage.store",
    "release_stores": "memory_vec._storage.store",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memory_vec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


_moved.install()

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "BackendTimeoutError",
    "BackendUnavailableError",
    "CallableTokenCounter",
    "ChatMessage",
    "ConfigError",
    "ContentTooLargeError",
    "CrossUserImportError",
    "DeleteResult",
    "DependencyMissingError",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "ExtractiveSummarizer",
    "ForgetReceipt",
    "InvalidContentError",
    "InvalidIdError",
    "InvalidInputError",
    "InvalidMetadataError",
    "InvalidRoleError",
    "InvalidTimestampError",
    "LLMSummarizer",
    "MemoryConfig",
    "MemoryContext",
    "MemoryCore",
    "MemoryKind",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryVecError",
    "MessageInput",
    "RankingPolicy",
    "RecalledMemory",
    "RecordRejectedError",
    "SchemaMismatchError",
    "Scope",
    "StateStoreError",
    "Store",
    "StoreLockedError",
    "Summarizer",
    "SummaryRejectedError",
    "SupersededMemoryError",
    "TiktokenCounter",
    "TokenCounter",
    "UnknownEmbeddingModelError",
    "WriteEvent",
    "WriteResult",
    "__version__",
    "open_store",
    "release_stores",
]
