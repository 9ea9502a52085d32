"""Server fixtures for milvus (see tests/_services.py).

``milvus_lite_server``: ``milvus-lite server`` (pure Python, from the main venv).
``milvus_server``: the C++ Milvus 2.3 from the PyPI ``milvus`` package
(``MILVUS_SERVER_BIN`` or .venv-milvus/bin/milvus-server in the checkout). Its
embedded etcd always binds 127.0.0.1:2379/2380 and its metrics port starts
at 9091, so only one runs per machine; every other port is moved to a
free one. Under pytest-xdist the workers share that one server (see below).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._services import Service, find_binary, free_port, missing, port_open, start_service, stop_group

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


def _start_milvus_server(binary: str, data_dir: str | None = None) -> Service:
    if port_open(2379):
        pytest.fail("port 2379 is busy: the Milvus server's embedded etcd needs it (another milvus-server?)")
    extra = {name: free_port() for name in _MILVUS_PORT_OPTIONS}

    def argv(port: int, data: str) -> list[str]:
        args = [binary, "--data", os.path.join(data, "milvus"), "--proxy-port", str(port), "--etcd-port", "2379"]
        for name, value in extra.items():
            args += [f"--{name}-port", str(value)]
        return args

    service = start_service("milvus-server", argv, ready=_client_ready, timeout=120, data_dir=data_dir)
    service.extra_ports = list(extra.values())
    return service


# Under pytest-xdist the workers share one C++ Milvus server (it binds fixed ports: one per
# machine). The controller gives each worker one directory (pytest_configure_node); the first
# worker to need the server starts it there under a file lock and writes where it listens; the
# others find it there. Every test on it uses collections of its own (uuid names), so the workers'
# tests run on it side by side. The controller stops it once every worker has finished
# (pytest_unconfigure); scripts/test.sh's pidfile trap stops it if the controller is killed.
_SHARED_KEY = "memvec_milvus_server_dir"
_shared_dir = pytest.StashKey[str]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # xdist's controller, once per worker it starts
    config: pytest.Config = node.config
    if _shared_dir not in config.stash:
        parent = os.environ.get("MEMVEC_TEST_SERVICE_ROOT") or None
        if parent:
            os.makedirs(parent, exist_ok=True)
        config.stash[_shared_dir] = tempfile.mkdtemp(prefix="memvec-milvus-server-", dir=parent)
    node.workerinput[_SHARED_KEY] = config.stash[_shared_dir]


def pytest_unconfigure(config: pytest.Config) -> None:
    shared = config.stash.get(_shared_dir, None)
    if shared is None:  # not xdist's controller
        return
    state = Path(shared, "server.json")
    if state.exists():
        stop_group(json.loads(state.read_text())["pgid"])
    if os.environ.get("MEMVEC_TEST_KEEP_SERVICE_DATA") == "1":
        print(f"\nthe Milvus server's data kept in {shared} (MEMVEC_TEST_KEEP_SERVICE_DATA=1)")
    else:
        shutil.rmtree(shared, ignore_errors=True)


def _shared_milvus_server(binary: str, shared: str) -> Service:
    """The session's one server: started by the first worker that asks, found by the others."""
    state = Path(shared, "server.json")
    with open(Path(shared, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed, or when its worker dies
        if state.exists():
            found = json.loads(state.read_text())
            return Service("milvus-server", found["port"], found["data_dir"], log_path=found["log_path"])
        data_dir = os.path.join(shared, "server")
        os.makedirs(data_dir)
        service = _start_milvus_server(binary, data_dir)
        assert service.proc is not None
        found = {"pgid": service.proc.pid, "port": service.port, "data_dir": data_dir, "log_path": service.log_path}
        state.write_text(json.dumps(found))
        return service


@pytest.fixture(scope="session")
def milvus_server(request: pytest.FixtureRequest) -> Iterator[Service]:
    binary = os.environ.get("MILVUS_SERVER_BIN") or DEFAULT_MILVUS_SERVER
    if not os.path.exists(binary):
        binary = find_binary("milvus-server") or ""
    if not binary or not os.path.exists(binary):
        missing("milvus-server (PyPI package `milvus` in its own venv; set MILVUS_SERVER_BIN)")
    shared = getattr(request.config, "workerinput", {}).get(_SHARED_KEY)
    if shared is not None:
        yield _shared_milvus_server(binary, shared)  # stopped by the controller (see above)
        return
    service = _start_milvus_server(binary)
    yield service
    service.stop()
