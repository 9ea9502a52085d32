"""Start and stop real servers for the integration tests.

Each server runs in its own process group on a free loopback port and is
stopped by killing the group (Milvus' child processes need SIGKILL). When a
binary is missing the test is skipped, unless MEMVEC_TEST_REQUIRE_SERVICES=1
(set by scripts/test.sh and CI), where it fails instead.

Every server's data directory (with its TMPDIR) lies under one directory per test session
(``services_root()``, inside ``$MEMVEC_TEST_SERVICE_ROOT`` or the system temp
directory), removed when the session ends (tests/conftest.py) unless
``MEMVEC_TEST_KEEP_SERVICE_DATA=1``; scripts/test.sh also removes it if pytest
itself is killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REQUIRE = os.environ.get("MEMVEC_TEST_REQUIRE_SERVICES") == "1"
VENV_BIN = Path(sys.executable).parent
_root: str | None = None


def services_root() -> str:
    """This session's directory for server data (created on first use)."""
    global _root
    if _root is None:
        parent = os.environ.get("MEMVEC_TEST_SERVICE_ROOT") or None
        if parent:
            os.makedirs(parent, exist_ok=True)
        _root = tempfile.mkdtemp(prefix="memvec-services-", dir=parent)
    return _root


def remove_service_data() -> None:
    """Delete every server data directory this session created (servers are stopped by then)."""
    global _root
    if _root is None:
        return
    if os.environ.get("MEMVEC_TEST_KEEP_SERVICE_DATA") == "1":
        print(f"\nserver data kept in {_root} (MEMVEC_TEST_KEEP_SERVICE_DATA=1)")
    else:
        shutil.rmtree(_root, ignore_errors=True)
    _root = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def missing(what: str) -> None:
    if REQUIRE:
        pytest.fail(f"{what} is required in CI (MEMVEC_TEST_REQUIRE_SERVICES=1) but missing")
    pytest.skip(f"{what} not available")


def find_binary(name: str, env_var: str | None = None) -> str | None:
    if env_var and os.environ.get(env_var) and os.path.exists(os.environ[env_var]):
        return os.environ[env_var]
    local = VENV_BIN / name
    if local.exists():
        return str(local)
    return shutil.which(name)


# Files a server writes outside its data directory whatever its environment says, by the pid of
# the process that wrote them: the C++ Milvus server's /tmp/milvus/server_id_<pid> (a fixed path,
# not the TMPDIR it is given), which it never removes.
LEFTOVERS = ("/tmp/milvus/server_id_{pid}",)


def group_members(pgid: int) -> list[int]:
    """The pids of a process group (Linux /proc; an empty list elsewhere)."""
    members = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after "pid (comm)": state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid):
            members.append(int(entry.name))
    return members


def _running_members(pgid: int) -> list[int]:
    """The members of a process group that have not exited (zombies, waiting for a parent
    to reap them, have)."""
    running = []
    for pid in group_members(pgid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z":
                running.append(pid)
    return running


def stop_group(pgid: int, timeout: float = 10.0) -> None:
    """Stop a server's process group that another process started (no Popen to wait on):
    SIGTERM, then SIGKILL to whatever is left after ``timeout``; then its LEFTOVERS."""
    members = group_members(pgid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + timeout
        while _running_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not _running_members(pgid):
            break
    remove_leftovers(members)


def remove_leftovers(pids: Sequence[int]) -> None:
    """Delete what stopped servers left outside their data directory (LEFTOVERS); an emptied
    /tmp/milvus goes too."""
    removed = False
    for pid in pids:
        for pattern in LEFTOVERS:
            with contextlib.suppress(FileNotFoundError):
                os.remove(pattern.format(pid=pid))
                removed = True
    if removed:
        with contextlib.suppress(OSError):  # another server's file still in it
            os.rmdir("/tmp/milvus")


@dataclass
class Service:
    name: str
    port: int
    data_dir: str
    proc: subprocess.Popen[bytes] | None = None
    log_path: str = ""
    extra_ports: list[int] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is None:
            return
        members = group_members(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self.proc = None
        remove_leftovers(members)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "".join(Path(self.log_path).read_text(errors="replace").splitlines(True)[-n:])
        except OSError:
            return ""


def start_service(
    name: str,
    argv_for: Callable[[int, str], Sequence[str]],
    *,
    ready: Callable[[Service], bool] | None = None,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
    port: int | None = None,
    data_dir: str | None = None,
) -> Service:
    """Start ``argv_for(port, data_dir)`` in a new process group and wait until ready.

    Pass ``port`` and ``data_dir`` of a stopped service to restart it on its data.
    """
    port = port or free_port()
    data_dir = data_dir or tempfile.mkdtemp(prefix=f"{name}-", dir=services_root())
    log_path = os.path.join(data_dir, f"server-{int(time.time() * 1000)}.log")
    service = Service(name, port, data_dir, log_path=log_path)
    # A temp directory of its own, inside its data directory: what a server puts in "the temp
    # directory" goes with its data (files at fixed paths are LEFTOVERS, removed by stop()).
    tmp = os.path.join(data_dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    with open(log_path, "wb") as log:
        service.proc = subprocess.Popen(
            list(argv_for(port, data_dir)),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "TMPDIR": tmp, **(env or {})},
            cwd=data_dir,
        )
    pidfile = os.environ.get("MEMVEC_TEST_SERVICE_PIDFILE")
    if pidfile:  # scripts/test.sh kills these groups even if pytest itself is killed
        with open(pidfile, "a", encoding="utf-8") as f:
            f.write(f"{service.proc.pid}\n")
    check = ready or (lambda s: port_open(s.port))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if service.proc.poll() is not None:
            break
        if check(service):
            return service
        time.sleep(0.2)
    tail = service.log_tail()
    service.stop()
    pytest.fail(f"{name} did not start on port {port} within {timeout}s:\n{tail}")
    raise AssertionError  # unreachable
