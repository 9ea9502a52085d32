"""The ``memory-vec`` command (also ``python -m memory_vec``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(lang=args.lang, backend=args.backend, turns=args.turns, persist_dir=args.persist_dir,
             llm_url=args.llm, llm_model=args.llm_model, every=args.every)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory-vec", description="Conversation memory for LLM apps.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the offline demo conversation")
    demo.add_argument("--lang", choices=["en", "zh"], default="en")
    demo.add_argument("--backend", choices=["memory", "chroma", "milvus"], default="memory")
    demo.add_argument("--turns", type=int, default=150)
    demo.add_argument("--every", type=int, default=10, help="print every N turns")
    demo.add_argument("--persist-dir", default=None)
    demo.add_argument("--llm", default=None, metavar="URL", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
    demo.add_argument("--llm-model", default="gpt-4o-mini")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI reports our named errors without a traceback
        from .errors import MemoryVecError

        if isinstance(exc, MemoryVecError):
            print(f"memory-vec: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        raise
