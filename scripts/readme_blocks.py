"""The Python blocks of README.md, in order, for tests/test_readme.py and CI.

A block whose first line is ``# needs: WHAT [WHAT...]`` needs a server or a key
(``chroma-server``, ``milvus-server``, ``redis-server``, ``openai-key``); every
other block must run offline as pasted, after the blocks before it.

    python scripts/readme_blocks.py --section "Quick start"   # print that section's blocks

Standard library only: CI runs it before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["KNOWN_NEEDS", "Block", "python_blocks"]

README = Path(__file__).resolve().parent.parent / "README.md"
KNOWN_NEEDS = frozenset({"chroma-server", "milvus-server", "redis-server", "openai-key"})
_FENCE = re.compile(r"^```(\w*)\s*$")
_NEEDS = re.compile(r"^#\s*needs:\s*(.+)$")


@dataclass
class Block:
    line: int  # README line of the block's first code line
    section: str  # the nearest heading above it
    code: str
    needs: frozenset[str] = field(default_factory=frozenset)

    def compiled_source(self) -> str:
        """The code padded with blank lines, so tracebacks give README.md line numbers."""
        return "\n" * (self.line - 1) + self.code


def python_blocks(path: Path = README) -> list[Block]:
    """Every fenced ``python`` block, in order, with its marker."""
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
                first = body[0].strip() if body else ""
                marker = _NEEDS.match(first)
                needs = frozenset(re.split(r"[\s,]+", marker.group(1).strip())) if marker else frozenset()
                blocks.append(Block(start, section, "\n".join(body) + "\n", needs))
            lang = None
            continue
        body.append(line)
    if lang is not None:
        raise ValueError(f"{path}: a code block opened at line {start - 1} is never closed")
    return blocks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", help="only the blocks under this heading")
    parser.add_argument("readme", nargs="?", default=str(README))
    args = parser.parse_args(argv)
    chosen = [b for b in python_blocks(Path(args.readme)) if args.section in (None, b.section)]
    if not chosen:
        print(f"no python block under {args.section!r} in {args.readme}", file=sys.stderr)
        return 1
    sys.stdout.write("\n".join(b.code for b in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
