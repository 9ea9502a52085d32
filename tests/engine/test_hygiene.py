"""No import cycles between memory_vec modules (imports under TYPE_CHECKING
count, a package and its own submodules excepted). The layers themselves are
an import-linter contract (pyproject.toml), run by CI with ruff and mypy."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["memory_vec", "langchain_memory_vec", "llamaindex_memory_vec"]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            module = target
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module and module != name:
                found.add(module)
    return found


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in (ROOT / "memory_vec").rglob("*.py")}
    known = set(files)
    graph = {}
    for name, path in files.items():
        # A package and its own submodules may import each other.
        graph[name] = {
            t for t in _imports(path, name, known) if not (t.startswith(name + ".") or name.startswith(t + "."))
        }
    return graph


def test_no_import_cycles_in_memory_vec() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    a.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memory_vec._core import MemoryCore\n")
    assert "memory_vec._core" in _imports(a, "memory_vec.a", {"memory_vec._core", "memory_vec"})
