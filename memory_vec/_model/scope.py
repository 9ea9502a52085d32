"""``Scope``: whose memories an operation touches, validated once.

A scope is one value (user, session, agent) instead of loose strings
re-checked in every function. ``MemoryConfig`` validates its ids with the
same :func:`~memory_vec._model.validate.check_id`, so an id the config accepts is
never refused later.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_vec._model import validate as v
from memory_vec._model.config import MemoryConfig

__all__ = ["Scope"]


@dataclass(frozen=True)
class Scope:
    """A user, one of their sessions, and optionally an agent.

    Example:
        >>> Scope("alice", "chat-1").user_id
        'alice'
    """

    user_id: str
    session_id: str
    agent_id: str | None = None

    def __post_init__(self) -> None:
        v.check_id(self.user_id, "user_id")
        v.check_id(self.session_id, "session_id")
        v.check_optional_id(self.agent_id, "agent_id")

    @classmethod
    def resolve(cls, config: MemoryConfig, user_id: str | None = None, session_id: str | None = None) -> Scope:
        """The config's scope with per-call overrides."""
        return cls(
            config.user_id if user_id is None else user_id,
            config.session_id if session_id is None else session_id,
            config.agent_id,
        )
