"""Progress bars and questions of the ``memory-vec`` command, on a terminal only.

The library draws nothing by itself: its long operations take a
``progress(what, done, total)`` callback (off by default). The CLI passes one
that draws a tqdm bar on stderr when stderr is a terminal and ``--json`` is not
given, so a pipe, a log file or a script reading JSON gets no bar.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Self

__all__ = ["TerminalProgress", "ask", "on_terminal", "stdin_is_terminal"]


def on_terminal() -> bool:
    """Whether stderr (where bars and questions go) is a terminal."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def stdin_is_terminal() -> bool:
    """Whether a question can be answered (stdin is a terminal)."""
    return bool(getattr(sys.stdin, "isatty", lambda: False)())


def ask(question: str) -> bool:
    """Ask a yes/no question on stderr, read the answer from stdin; only 'y' or 'yes' is yes."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


class TerminalProgress:
    """A ``progress(what, done, total)`` callback: one tqdm bar per phase ("embedding",
    "storing", ...), labelled with the command; does nothing when not enabled."""

    def __init__(self, command: str, *, enabled: bool) -> None:
        self.command = command
        self.enabled = enabled
        self._what: str | None = None
        self._bar: Any = None

    def __call__(self, what: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if what != self._what:
            self.close()
            from tqdm import tqdm

            self._what = what
            self._bar = tqdm(total=total, desc=f"{self.command}: {what}", unit="rec", file=sys.stderr)
        self._bar.update(max(0, done - self._bar.n))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._what = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
