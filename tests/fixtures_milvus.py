"""Server fixtures for milvus (see tests/_services.py).

``milvus_lite_server``: ``milvus-lite server`` (pure Python, from the main venv).
``milvus_server``: the C++ Milvus 2.3 from the PyPI ``milvus`` package
(``MILVUS_SERVER_BIN`` or .venv-milvus/bin/milvus-server in the checkout). Its
embedded etcd always binds 127.0.0.1:2379/2380 and its metrics port starts
at 9091, so only one runs per machine; every other port is moved to a
free one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._services import Service, find_binary, free_port, missing, port_open, start_service

DEFAULT_MILVUS_SERVER = str(Path(__file__).resolve().parent.parent / ".venv-milvus" / "bin" / "milvus-server")
_MILVUS_PORT_OPTIONS = (
    "root-coord",
    "proxy-internal",
    "query-coord",
    "query-node",
    "index-coord",
    "index-node",
    "data-coord",
    "data-node",
)


def _client_ready(service: Service) -> bool:
    if not port_open(service.port):
        return False
    try:
        from pymilvus import MilvusClient

        client = MilvusClient(uri=service.url, timeout=3)
        try:
            client.list_collections(timeout=3)
        finally:
            client.close()
        return True
    except Exception:  # not ready yet
        return False


@pytest.fixture(scope="session")
def milvus_lite_server() -> Iterator[Service]:
    binary = find_binary("milvus-lite")
    if binary is None:
        missing("milvus-lite")
    assert binary is not None
    service = start_service(
        "milvus-lite",
        lambda port, data: [
            binary,
            "server",
            "--data-dir",
            os.path.join(data, "db"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        ready=_client_ready,
        timeout=60,
    )
    yield service
    service.stop()


@pytest.fixture(scope="session")
def milvus_server() -> Iterator[Service]:
    binary = os.environ.get("MILVUS_SERVER_BIN") or DEFAULT_MILVUS_SERVER
    if not os.path.exists(binary):
        binary = find_binary("milvus-server") or ""
    if not binary or not os.path.exists(binary):
        missing("milvus-server (PyPI package `milvus` in its own venv; set MILVUS_SERVER_BIN)")
    if port_open(2379):
        pytest.fail("port 2379 is busy: the Milvus server's embedded etcd needs it (another milvus-server?)")
    extra = {name: free_port() for name in _MILVUS_PORT_OPTIONS}

    def argv(port: int, data: str) -> list[str]:
        args = [binary, "--data", os.path.join(data, "milvus"), "--proxy-port", str(port), "--etcd-port", "2379"]
        for name, value in extra.items():
            args += [f"--{name}-port", str(value)]
        return args

    service = start_service("milvus-server", argv, ready=_client_ready, timeout=120)
    service.extra_ports = list(extra.values())
    yield service
    service.stop()
