"""Server fixtures for chroma (see tests/_services.py)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest

from tests._services import Service, find_binary, missing, start_service


def _heartbeat_ok(service: Service) -> bool:
    # The port opens before the API answers; wait for the heartbeat itself.
    try:
        with urllib.request.urlopen(f"{service.url}/api/v2/heartbeat", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[Service]:
    """A real Chroma server (`chroma run`) on a free loopback port, for the whole session."""
    binary = find_binary("chroma", "MEMVEC_CHROMA_BIN")
    if binary is None:
        missing("the `chroma` server binary (pip install chromadb)")
    assert binary is not None
    service = start_service(
        "chroma",
        lambda port, data_dir: [
            binary,
            "run",
            "--path",
            f"{data_dir}/data",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        ready=_heartbeat_ok,
        timeout=60,
    )
    try:
        yield service
    finally:
        service.stop()
