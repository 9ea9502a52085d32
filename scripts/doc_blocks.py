"""The Python blocks of README.md and the docs, for tests/test_docs.py and CI.

Each block runs as pasted, on its own: a fresh interpreter namespace per block. Marker
lines at the top of a block change that:

- ``# needs: WHAT [WHAT...]``: a server or an API (``chroma-server``, ``milvus-server``,
  ``redis-server``, ``openai``); the test runs it against what the session starts (the
  OpenAI API: a local stub of it).
- ``# continued``: runs after the block before it on the same page, in its namespace
  (the page shows one example in steps).

    python scripts/doc_blocks.py --section "Quick start"   # print that section's blocks of README.md
    python scripts/doc_blocks.py docs/guides/langchain.md  # or of any page

Standard library only: CI runs it before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["KNOWN_NEEDS", "Block", "doc_pages", "python_blocks"]

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
KNOWN_NEEDS = frozenset({"chroma-server", "milvus-server", "redis-server", "openai"})
_FENCE = re.compile(r"^```(\w*)\s*$")
_NEEDS = re.compile(r"^#\s*needs:\s*(.+)$")
_CONTINUED = re.compile(r"^#\s*continued\b")
# Pages that are records, not instructions: their blocks are not run.
_NOT_RUN = ("decisions", "incoming", "_hooks")


@dataclass
class Block:
    path: Path
    line: int  # line of the block's first code line in its page
    section: str  # the nearest heading above it
    code: str
    needs: frozenset[str] = field(default_factory=frozenset)
    continued: bool = False

    def compiled_source(self) -> str:
        """The code padded with blank lines, so tracebacks give the page's line numbers."""
        return "\n" * (self.line - 1) + self.code


def _markers(body: list[str]) -> tuple[frozenset[str], bool]:
    needs: frozenset[str] = frozenset()
    continued = False
    for line in body:
        marker = _NEEDS.match(line.strip())
        if marker:
            needs = frozenset(re.split(r"[\s,]+", marker.group(1).strip()))
        elif _CONTINUED.match(line.strip()):
            continued = True
        else:
            break
    return needs, continued


def python_blocks(path: Path = README) -> list[Block]:
    """Every fenced ``python`` block of a page, in order, with its markers."""
    blocks: list[Block] = []
    section = ""
    lang: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if lang is None:
            if fence:
                lang, start, body = fence.group(1), number + 1, []
            elif line.startswith("#"):
                section = line.lstrip("#").strip()
            continue
        if line.strip() == "```":
            if lang == "python":
                needs, continued = _markers(body)
                blocks.append(Block(path, start, section, "\n".join(body) + "\n", needs, continued))
            lang = None
            continue
        body.append(line)
    if lang is not None:
        raise ValueError(f"{path}: a code block opened at line {start - 1} is never closed")
    return blocks


def doc_pages(root: Path = ROOT) -> list[Path]:
    """README.md and every page of the docs site whose blocks CI runs."""
    pages = [root / "README.md"]
    for page in sorted((root / "docs").rglob("*.md")):
        if not any(part in _NOT_RUN for part in page.relative_to(root / "docs").parts):
            pages.append(page)
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--section", help="only the blocks under this heading")
    parser.add_argument("page", nargs="?", default=str(README))
    args = parser.parse_args(argv)
    chosen = [b for b in python_blocks(Path(args.page)) if args.section in (None, b.section)]
    if not chosen:
        print(f"no python block under {args.section!r} in {args.page}", file=sys.stderr)
        return 1
    sys.stdout.write("\n".join(b.code for b in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
