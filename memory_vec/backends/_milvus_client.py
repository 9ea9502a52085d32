"""The Milvus backend's pymilvus client: one connection per process.

gRPC does not let one channel serve both sides of a fork, and pymilvus
shares one connection per address within a process (its connection
manager, copied into a forked child). So a backend a child inherits
connected (``gunicorn --preload``, a module-level core) opens a dedicated
connection of its own there and leaves the parent's alone: closing that
copy in the child could close the parent's connection.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from memory_vec.backends._milvus_errors import require_pymilvus

__all__ = ["abandon", "close", "connect"]

_PING_RETRY_PAUSES = (0.2, 0.5, 1.0, 2.0)
# pymilvus pings every 10 s, idle or not. A gRPC server's default policy (Milvus Lite's server
# keeps it) allows a ping without data every 5 minutes and answers more with GOAWAY
# "too_many_pings": an idle connection (a parent while its forked child works, a quiet worker)
# was cut after ~30 s and its next call failed. Ping only during calls, at most once a minute.
_KEEPALIVE = {"grpc.keepalive_time_ms": 60_000, "grpc.keepalive_permit_without_calls": False}
_abandoned: list[Any] = []  # a parent's clients copied into this child: never closed nor freed here


def connect(uri: str, *, timeout: float, token: str | None, db_name: str | None, dedicated: bool) -> Any:
    """A ``MilvusClient`` for ``uri``; ``dedicated``: a connection no other client shares."""
    pymilvus = require_pymilvus()
    kwargs: dict[str, Any] = {"uri": uri, "timeout": timeout, "grpc_options": dict(_KEEPALIVE)}
    if token:
        kwargs["token"] = token
    if db_name:
        kwargs["db_name"] = db_name
    if dedicated:
        kwargs["dedicated"] = True
    for pause in _PING_RETRY_PAUSES:
        try:
            return pymilvus.MilvusClient(**kwargs)
        except Exception as exc:
            # A server that just sent a connection GOAWAY for keepalive pings (a forked child's
            # new channel on a loaded machine) takes a later channel: try again after a pause.
            if "too many pings" not in str(exc).lower():
                raise
            time.sleep(pause)
    return pymilvus.MilvusClient(**kwargs)


def abandon(client: Any) -> None:
    """Keep a parent's client, copied across a fork, from being closed or freed in the child."""
    _abandoned.append(client)


def close(client: Any, *, connected_by: int) -> None:
    """Close ``client`` (best effort), or keep it when another process (the parent) connected it."""
    if connected_by != os.getpid():
        abandon(client)
        return
    with contextlib.suppress(Exception):
        client.close()
