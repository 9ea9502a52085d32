"""Processes the benchmark starts: each in its own process group, stopped by
killing that group (uvicorn's workers and Chroma's children go with it)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["Proc", "free_port", "heartbeat_ok", "port_open", "start_chroma", "start_redis"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def heartbeat_ok(port: int) -> bool:
    # Chroma opens its port before the API answers.
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


class Proc:
    """A started process group with its log file."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.name, self.log_path = name, log_path
        with open(log_path, "wb") as log:
            self.popen = subprocess.Popen(
                list(argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
                cwd=cwd,
            )
        pidfile = os.environ.get("MEMVEC_TEST_SERVICE_PIDFILE")
        if pidfile:  # scripts/test.sh kills these groups even if the test run itself is killed
            with open(pidfile, "a", encoding="utf-8") as f:
                f.write(f"{self.popen.pid}\n")

    @property
    def pid(self) -> int:
        return self.popen.pid

    def wait_ready(self, ready: Callable[[], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                break
            if ready():
                return
            time.sleep(0.2)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"{self.name} was not ready within {timeout_s:.0f} s; log tail:\n{tail}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        # Stragglers of the group (workers, children), even when the leader is gone.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10)


def start_chroma(binary: str, data_dir: Path, log_dir: Path) -> tuple[Proc, str]:
    port = free_port()
    proc = Proc(
        "chroma",
        [binary, "run", "--path", str(data_dir), "--host", "127.0.0.1", "--port", str(port)],
        log_dir / "chroma.log",
        cwd=str(data_dir.parent),
    )
    proc.wait_ready(lambda: heartbeat_ok(port), 60)
    return proc, f"http://127.0.0.1:{port}"


def start_redis(binary: str, data_dir: Path, log_dir: Path) -> tuple[Proc, str]:
    port = free_port()
    proc = Proc(
        "redis",
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data_dir),
            "--daemonize",
            "no",
        ],
        log_dir / "redis.log",
    )
    proc.wait_ready(lambda: port_open(port), 30)
    return proc, f"redis://127.0.0.1:{port}/0"
