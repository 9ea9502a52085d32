"""The install files and the test session's servers (#46): no local-version pin in
constraints.txt or pyproject.toml (scripts/check_constraints.py, run by scripts/lint.sh),
and every server the tests start gets a TMPDIR inside its data directory, so what it
writes to "the temp directory" goes with it (the C++ Milvus server's fixed-path
/tmp/milvus/server_id_<pid> is removed by Service.stop, see tests/_services.LEFTOVERS)."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from tests._services import services_root, start_service

ROOT = Path(__file__).resolve().parent.parent


def _check_constraints() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_constraints", ROOT / "scripts" / "check_constraints.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_repository_pins_no_local_versions() -> None:
    assert _check_constraints().main([]) == 0


def test_a_local_version_pin_is_found_outside_comments(tmp_path: Path) -> None:
    check = _check_constraints()
    text = 'numpy==2.4.6\ntorch==2.13.0+cpu\n# torch==2.13.0+cu121 in a comment\n"foo[x]>=1", "bar==1.0+local",\n'
    assert check.local_pins(text) == [(2, "torch==2.13.0+cpu"), (4, "bar==1.0+local")]
    bad = tmp_path / "constraints.txt"
    bad.write_text(text, encoding="utf-8")
    assert check.main([str(bad)]) == 1


# A stand-in server: writes where its temp directory is, then listens until stopped.
_SERVER = """
import socket, sys, tempfile, time
open("tmpdir.txt", "w").write(tempfile.gettempdir())
with socket.socket() as s:
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen()
    time.sleep(120)
"""


def test_a_started_server_has_its_temp_directory_inside_its_data(tmp_path: Path) -> None:
    service = start_service("probe", lambda port, data: [sys.executable, "-c", _SERVER, str(port)], timeout=30)
    try:
        seen = Path(service.data_dir, "tmpdir.txt").read_text(encoding="utf-8")
    finally:
        service.stop()
    assert os.path.realpath(seen) == os.path.realpath(os.path.join(service.data_dir, "tmp"))
    assert service.data_dir.startswith(services_root()) and seen != tempfile.gettempdir()
