"""Every notebook runs offline from top to bottom, so none of them rots, with only the
repository: no data from beside the checkout (tests and notebooks run on a fresh clone)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Paths that leave the repository: any '../' that does not lead back into one of its
# top-level directories (data beside the checkout), this machine's layout, or a LoCoMo split.
REPO_DIRS = ("memory_vec", "langchain_memory_vec", "llamaindex_memory_vec", "benchmarks", "notebooks", "tests")
OUTSIDE = re.compile(rf"\.\./(?!(?:{'|'.join(REPO_DIRS)})\b)|/work/|\blocomo_\w+\.json")


def test_notebooks_read_only_the_repository() -> None:
    sources = {p.name: nbformat.read(p, as_version=4) for p in NOTEBOOKS}
    sources["_build.py"] = (ROOT / "notebooks" / "_build.py").read_text(encoding="utf-8")
    for name, nb in sources.items():
        text = nb if isinstance(nb, str) else "\n".join(c.source for c in nb.cells)
        assert not OUTSIDE.search(text), f"{name} reads from outside the repository: {OUTSIDE.search(text)}"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.read(path, as_version=4)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.delenv("MEMVEC_LOCOMO", raising=False)  # the repository's sample, never outside data
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
