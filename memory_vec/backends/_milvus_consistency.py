"""When a read sees which writes: the Milvus backend's consistency handling
(docs/architecture.md, "Milvus reads are Session reads").

Reads are ``"Session"`` by default: a read waits until the server applied
this client's last write. ``MilvusBackend.open`` makes one ``"Strong"`` read
(:func:`read_barrier`), so what was acknowledged before the process opened
the store is visible; another client's later writes within
:data:`OTHERS_BOUND_S` (tested in ``tests/engine/test_hosts.py``). A 2.3
server returns no delete timestamp, so there a delete ends with one
``"Strong"`` read (:func:`barrier_after_delete`). ``"Strong"`` on every read
costs ~400 ms a read on 2.3.5 (the server's time tick).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory_vec._model.errors import ConfigError
from memory_vec.backends._milvus_errors import Translate

__all__ = ["LEVELS", "OTHERS_BOUND_S", "barrier_after_delete", "check_level", "read_barrier", "server_before_2_4"]

LEVELS = ("Session", "Strong", "Bounded", "Eventually")

#: Seconds within which a Session read shows another client's acknowledged write
#: (the server's time tick and DML consumption; its default ``gracefulTime`` is 5 s).
OTHERS_BOUND_S = 10.0


def check_level(level: str) -> str:
    """``level`` if Milvus knows it, else a :class:`ConfigError` naming the allowed ones."""
    if level not in LEVELS:
        raise ConfigError(f"Milvus backend_options['consistency_level'] = {level!r} is not one of {list(LEVELS)}")
    return level


def server_before_2_4(client: Any, *, is_server: bool, timeout: float) -> bool:
    """True for a Milvus server older than 2.4 (never for Milvus Lite, or an unparsable version)."""
    if not is_server:
        return False
    version = str(client.get_server_version(timeout=timeout)).lstrip("v")
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < (2, 4)


def barrier_after_delete(level: str, *, before_2_4: bool) -> bool:
    """Whether a delete must end with a Strong read for this process to see it (see module doc)."""
    # 2.3 servers answer a delete without its timestamp, so a Session (or
    # Bounded) read would not wait for it: a Strong read after each delete does.
    return level != "Strong" and before_2_4


def read_barrier(
    client: Any, collection: str, level: str, *, timeout: float, translate: Callable[[str], Translate]
) -> None:
    """One read at ``level``; later reads of this process see at least the state it waited for.

    A read at ``level`` waits until the server has applied the writes that
    level covers ("Strong": all before it; "Session": this process').
    """
    with translate("read the collection"):
        client.query(
            collection, filter='id != ""', output_fields=["id"], limit=1, consistency_level=level, timeout=timeout
        )
