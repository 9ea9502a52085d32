"""CI's static check of the install files: no local-version pins.

A local version (``torch==2.13.0+cpu``) names a build that no public index serves
under that name, so ``pip install -c constraints.txt ...`` cannot resolve it on a
user's machine. ``torch==2.13.0`` admits the local CPU build where one is offered
(PEP 440 ignores the local label when the pin has none) and a public build elsewhere.

Usage: python scripts/check_constraints.py [FILE ...]   (default: constraints.txt, pyproject.toml)
Exit 1 with one line per offending pin.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# name==1.2.3+local (also ===), in a requirements line or a quoted pyproject dependency.
LOCAL_PIN = re.compile(r"""(?P<pin>[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?\s*===?\s*[^\s,;"'#+]+\+[^\s,;"'#]+)""")


def local_pins(text: str) -> list[tuple[int, str]]:
    """(line number, pin) of every local-version pin outside comments."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        code = line.split("#", 1)[0]
        found += [(number, m.group("pin")) for m in LOCAL_PIN.finditer(code)]
    return found


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parent.parent
    files = [Path(a) for a in argv] or [root / "constraints.txt", root / "pyproject.toml"]
    bad = [(f, n, pin) for f in files for n, pin in local_pins(f.read_text(encoding="utf-8"))]
    for f, n, pin in bad:
        name, _, version = pin.partition("==")
        print(
            f"{f.name}:{n}: {pin}: a local version no public index serves; pin {name.strip()}=="
            f"{version.lstrip('=').split('+')[0].strip()} instead",
            file=sys.stderr,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
