"""Every Python block of README.md and of the docs site runs as pasted, in CI.

Each page runs in a fresh directory and interpreter; each block in a namespace of its own
unless it is marked ``# continued`` (scripts/doc_blocks.py). Blocks marked ``# needs:
chroma-server`` / ``milvus-server`` / ``redis-server`` run against this session's servers
(the page's localhost URLs are pointed at them); ``# needs: openai`` blocks run against a
local stub of the OpenAI API that answers every chat completion with one fixed line.
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._services import Service

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("doc_blocks", ROOT / "scripts" / "doc_blocks.py")
assert _spec is not None and _spec.loader is not None
doc_blocks = importlib.util.module_from_spec(_spec)
sys.modules["doc_blocks"] = doc_blocks  # dataclasses look their module up
_spec.loader.exec_module(doc_blocks)

PAGES = {page: doc_blocks.python_blocks(page) for page in doc_blocks.doc_pages(ROOT)}
# marker -> (session fixture, the URL the docs write for it). Milvus: the server of Milvus
# Lite, same protocol, no fixed ports (the C++ server's etcd port allows one per machine; the
# backend suite covers the C++ server).
SERVERS = {
    "chroma-server": ("chroma_server", "http://localhost:8000"),
    "milvus-server": ("milvus_lite_server", "http://localhost:19530"),
    "redis-server": ("redis_server", "redis://localhost:6379/0"),
}
STUB_REPLY = "- The budget is 8000."

_RUNNER = """\
import json, sys
namespace = None
for block in json.load(open(sys.argv[1], encoding="utf-8")):
    print(f"--- {block['path']} line {block['line']} ({block['section']})", flush=True)
    if namespace is None or not block["continued"]:
        namespace = {"__name__": "__main__"}
    exec(compile("\\n" * (block["line"] - 1) + block["code"], block["path"], "exec"), namespace)
"""


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


class _OpenAIStub(http.server.BaseHTTPRequestHandler):
    """Answers POST /v1/chat/completions as the OpenAI API does, with STUB_REPLY."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        answer = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": STUB_REPLY}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:  # keep the test output clean
        pass


@pytest.fixture
def openai_stub() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _service_url(marker: str, service: Service) -> str:
    return f"redis://127.0.0.1:{service.port}/0" if marker == "redis-server" else service.url


def test_markers_are_known() -> None:
    assert len(PAGES[ROOT / "README.md"]) >= 5
    for page, blocks in PAGES.items():
        for index, block in enumerate(blocks):
            where = f"{_page_id(page)} line {block.line}"
            unknown = block.needs - doc_blocks.KNOWN_NEEDS
            assert not unknown, f"{where}: unknown marker {sorted(unknown)}"
            assert not (block.continued and index == 0), f"{where}: '# continued' on a page's first block"
            for marker in block.needs & SERVERS.keys():
                assert SERVERS[marker][1] in block.code, f"{where} needs {marker} but does not use {SERVERS[marker][1]}"


def test_readme_installs_from_the_repository() -> None:
    """memory-vec is not on PyPI: no command may install it from there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    from_pypi = re.findall(r"pip install ['\"]?memory-vec\b.*", text)
    assert not from_pypi, from_pypi
    assert "pip install -e ." in text


def test_the_openai_stub_answers_as_the_api_does(openai_stub: str) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=openai_stub, api_key="stub")
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == STUB_REPLY


@pytest.mark.integration
@pytest.mark.services
@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p, blocks in PAGES.items() if blocks], ids=_page_id)
def test_page_blocks_run(page: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    blocks = PAGES[page]
    urls: dict[str, str] = {}
    for marker in sorted({m for b in blocks for m in b.needs}):
        if marker == "openai":
            urls[marker] = request.getfixturevalue("openai_stub")
        else:  # not installed here: skips; CI (MEMVEC_TEST_REQUIRE_SERVICES=1) fails instead
            urls[marker] = _service_url(marker, request.getfixturevalue(SERVERS[marker][0]))
    runnable = []
    for block in blocks:
        code = block.code
        for marker in block.needs & SERVERS.keys():
            code = code.replace(SERVERS[marker][1], urls[marker])
        runnable.append(
            {
                "line": block.line,
                "section": block.section,
                "code": code,
                "path": str(page),
                "continued": block.continued,
            }
        )
    (tmp_path / "blocks.json").write_text(json.dumps(runnable), encoding="utf-8")
    (tmp_path / "run_blocks.py").write_text(_RUNNER, encoding="utf-8")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    if "openai" in urls:
        env |= {"OPENAI_BASE_URL": urls["openai"], "OPENAI_API_KEY": "stub-key"}
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "run_blocks.py"), str(tmp_path / "blocks.json")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"a block of {_page_id(page)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    assert proc.stdout.count("--- ") == len(runnable)
