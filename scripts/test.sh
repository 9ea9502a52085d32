#!/usr/bin/env bash
# The test command: install, then run every test. Servers (Chroma, Milvus
# Lite server, Milvus, Redis) are started by the test session on free
# loopback ports and stopped when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/services.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export MEMORY_VEC_REQUIRE_SERVICES=1
export MILVUS_SERVER_BIN="$PWD/.venv-milvus/bin/milvus-server"
exec .venv/bin/python -m pytest "$@"
