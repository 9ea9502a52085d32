"""Whose memories a run may read: the user id a LangChain / LangGraph run carries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_vec._model.errors import InvalidInputError

__all__ = ["MissingUserIdError", "run_user"]

WHERE_TO_PASS = (
    "pass it in the run's config as config['configurable']['user_id'] "
    "(e.g. chain.invoke(..., {'configurable': {'user_id': 'alice'}})) or, in a LangGraph agent, "
    "as the runtime context (agent.invoke(..., context={'user_id': 'alice'}))"
)


class MissingUserIdError(InvalidInputError):
    """A per-user call has no user id: memory-vec will not pool users under a default one.

    The message names where the caller passes it (the run's context or
    ``config["configurable"]["user_id"]``); nothing was read or stored.
    """


def run_user(configurable: Mapping[str, Any], context: Any = None) -> str | None:
    """The user id of a run: ``user_id`` of the runtime context (a mapping or an
    object with that attribute), else ``configurable["user_id"]``; None when
    neither names one (an empty string names none)."""
    user = context.get("user_id") if isinstance(context, Mapping) else getattr(context, "user_id", None)
    if user is None or user == "":
        user = configurable.get("user_id")
    return None if user is None or user == "" else str(user)
