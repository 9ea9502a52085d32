#!/usr/bin/env bash
# The main job: install memory-vec, then run the offline demo on embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/memory-vec demo "$@"
