"""memory-vec: conversation memory for LLM apps.

Rolling summary compression, vector recall and conflict-overwrite behind one
framework-free core. Quick start::

    from memory_vec import MemoryConfig, MemoryCore

    core = MemoryCore(MemoryConfig(user_id="u1", session_id="s1"))
    core.add_message("user", "The budget cap is 5000.")
    core.recall("what is the budget?", k=5)
"""

from __future__ import annotations

from memory_vec import _moved
from memory_vec._core import MemoryCore, MessageInput
from memory_vec._model.config import MemoryConfig
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
from memory_vec._model.records import (
    ChatMessage,
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
