"""Every Python block of docs/incoming/adapters.md runs on its own, offline, in a
fresh interpreter and a fresh directory (each block is self-contained)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "incoming" / "adapters.md"
_spec = importlib.util.spec_from_file_location("readme_blocks", ROOT / "scripts" / "readme_blocks.py")
assert _spec is not None and _spec.loader is not None
readme_blocks = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("readme_blocks", readme_blocks)  # dataclasses look their module up
_spec.loader.exec_module(readme_blocks)

BLOCKS = readme_blocks.python_blocks(DOC)

_RUNNER = """\
import sys
line, path = int(sys.argv[1]), sys.argv[2]
code = sys.stdin.read()
exec(compile("\\n" * (line - 1) + code, path, "exec"), {"__name__": "__main__"})
"""


def test_the_doc_has_its_blocks_and_none_needs_a_server() -> None:
    assert {b.section for b in BLOCKS} >= {
        "Agents: `create_agent` with a summarizer of its own",
        "A retriever over recall in an LCEL chain",
        "`RunnableWithMessageHistory` with recall across the user's sessions",
        "LlamaIndex: a retriever over recall in a query engine",
    }
    assert all(not b.needs for b in BLOCKS)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"line-{b.line}" for b in BLOCKS])
def test_block_runs_alone_offline(block: readme_blocks.Block, tmp_path: Path) -> None:  # type: ignore[name-defined]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(block.line), str(DOC)],
        input=block.code,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{DOC.name} line {block.line} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert proc.stdout.strip(), "every block prints what it shows"
