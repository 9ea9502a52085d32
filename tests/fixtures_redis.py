"""Server fixtures for redis (see tests/_services.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._services import Service, find_binary, missing, start_service


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Service]:
    """A foreground redis-server with AOF on a free loopback port (``service.url`` is redis://)."""
    binary = find_binary("redis-server")
    if binary is None:
        missing("redis-server")
    assert binary is not None
    service = start_service(
        "redis",
        lambda port, data: [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "yes", "--dir", data, "--daemonize", "no"],
        timeout=30,
    )
    yield service
    service.stop()


def redis_url(service: Service, db: int = 0) -> str:
    return f"redis://127.0.0.1:{service.port}/{db}"
