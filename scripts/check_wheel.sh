#!/usr/bin/env bash
# CI: build the sdist and the wheel (the wheel from the sdist, as `python -m build`
# does), install the wheel into a clean virtualenv with the core dependencies only,
# and run the README's Quick start there, outside the checkout. This is how the
# README tells users to install memory-vec, since it is not published on PyPI.
# Needs `build` in .venv (the dev extra has it).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
work="$(mktemp -d "${TMPDIR:-/tmp}/memvec-wheel-XXXXXX")"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
echo "wheel: building the sdist and the wheel (python -m build)"
.venv/bin/python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
ls -l "$work/dist"
wheel=("$work"/dist/memory_vec-*-py3-none-any.whl)
echo "wheel: installing ${wheel[0]##*/} into a clean virtualenv (core dependencies only)"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q -c constraints.txt "${wheel[0]}"
.venv/bin/python scripts/doc_blocks.py --section "Quick start (plain Python)" > "$work/quickstart.py"
echo "wheel: running the README's Quick start from $work (not the checkout)"
cd "$work"
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$work/venv/bin/python" - "$repo" <<'EOF'
import sys
import memory_vec
assert not memory_vec.__file__.startswith(sys.argv[1]), f"imported from the checkout: {memory_vec.__file__}"
print("memory_vec imported from", memory_vec.__file__)
EOF
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$work/venv/bin/python" quickstart.py
"$work/venv/bin/memory-vec" --help >/dev/null
echo "wheel: OK in $((SECONDS - start)) s"
