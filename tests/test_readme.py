"""Every Python block of README.md runs as pasted, in order, in a fresh directory.

Blocks marked ``# needs: chroma-server`` / ``milvus-server`` / ``redis-server`` run
against this session's servers (the README's localhost URLs are pointed at them);
blocks marked ``# needs: openai-key`` are skipped, by that marker only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._services import Service

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("readme_blocks", ROOT / "scripts" / "readme_blocks.py")
assert _spec is not None and _spec.loader is not None
readme_blocks = importlib.util.module_from_spec(_spec)
sys.modules["readme_blocks"] = readme_blocks  # dataclasses look their module up
_spec.loader.exec_module(readme_blocks)

BLOCKS = readme_blocks.python_blocks(ROOT / "README.md")
# marker -> (session fixture, the URL the README writes for it). Milvus: the server of Milvus
# Lite, same protocol, no fixed ports (the C++ server's etcd port allows one per machine; the
# backend suite covers the C++ server).
SERVERS = {
    "chroma-server": ("chroma_server", "http://localhost:8000"),
    "milvus-server": ("milvus_lite_server", "http://localhost:19530"),
    "redis-server": ("redis_server", "redis://localhost:6379/0"),
}
NEVER_RUN = {"openai-key": "needs an OpenAI API key and network"}

_RUNNER = """\
import json, sys
ns = {"__name__": "__main__"}
for block in json.load(open(sys.argv[1], encoding="utf-8")):
    print(f"--- README.md line {block['line']} ({block['section']})", flush=True)
    exec(compile("\\n" * (block["line"] - 1) + block["code"], block["path"], "exec"), ns)
"""


def _service_url(marker: str, service: Service) -> str:
    return f"redis://127.0.0.1:{service.port}/0" if marker == "redis-server" else service.url


def test_readme_markers_are_known() -> None:
    assert len(BLOCKS) >= 10
    for block in BLOCKS:
        unknown = block.needs - readme_blocks.KNOWN_NEEDS
        assert not unknown, f"README.md line {block.line}: unknown marker {sorted(unknown)}"
        for marker in block.needs & SERVERS.keys():
            assert SERVERS[marker][1] in block.code, (
                f"README.md line {block.line} needs {marker} but does not use {SERVERS[marker][1]}"
            )


def test_readme_installs_from_the_repository() -> None:
    """memory-vec is not on PyPI: no command may install it from there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    from_pypi = re.findall(r"pip install ['\"]?memory-vec\b.*", text)
    assert not from_pypi, from_pypi
    assert "pip install -e ." in text and "python -m build" in text


@pytest.mark.integration
@pytest.mark.services
@pytest.mark.slow
def test_readme_blocks_run(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    wanted = {m for b in BLOCKS for m in b.needs if m in SERVERS}
    urls: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    for marker in sorted(wanted):
        fixture, _ = SERVERS[marker]
        try:
            urls[marker] = _service_url(marker, request.getfixturevalue(fixture))
        except pytest.skip.Exception as exc:  # not installed here; CI (REQUIRE=1) fails instead
            unavailable[marker] = str(exc)
    runnable, skipped = [], []
    for block in BLOCKS:
        if block.needs & (NEVER_RUN.keys() | unavailable.keys()):
            skipped.append(f"line {block.line}: needs {' '.join(sorted(block.needs))}")
            continue
        code = block.code
        for marker in block.needs:
            code = code.replace(SERVERS[marker][1], urls[marker])
        runnable.append({"line": block.line, "section": block.section, "code": code, "path": str(ROOT / "README.md")})
    (tmp_path / "blocks.json").write_text(json.dumps(runnable), encoding="utf-8")
    (tmp_path / "run_readme.py").write_text(_RUNNER, encoding="utf-8")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "run_readme.py"), str(tmp_path / "blocks.json")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"a README block failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    assert proc.stdout.count("--- README.md line") == len(runnable)
    if skipped:
        print("README blocks not run:", "; ".join(skipped), "|", "; ".join(unavailable.values()))


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.needs & NEVER_RUN.keys()], ids=lambda b: f"README.md:{b.line}"
)
@pytest.mark.slow
def test_readme_block_needing_a_key(block: object) -> None:
    needs = sorted(block.needs & NEVER_RUN.keys())  # type: ignore[attr-defined]
    pytest.skip(f"README.md line {block.line} {NEVER_RUN[needs[0]]}")  # type: ignore[attr-defined]
