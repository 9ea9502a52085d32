#!/usr/bin/env bash
# Create .venv and install memory-vec with every extra, offline-capable.
# torch goes first: the local CPU build (2.13.0) instead of a multi-GB CUDA one.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=".venv/.memory-vec-installed"
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)-${1:-dev}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q -c constraints.txt -e ".[${1:-dev}]"
echo "$want" > "$stamp"
