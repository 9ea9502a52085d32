#!/usr/bin/env bash
# The test command: install, then run every test. Servers (Chroma, Milvus
# Lite server, Milvus, Redis) are started by the test session on free
# loopback ports and stopped when it ends; the trap below stops any that a
# killed run left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/services.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export MEMORY_VEC_REQUIRE_SERVICES=1
export MILVUS_SERVER_BIN="$PWD/.venv-milvus/bin/milvus-server"
export MEMORY_VEC_SERVICE_PIDFILE
MEMORY_VEC_SERVICE_PIDFILE="$(mktemp)"
stop_services() {
  while read -r pgid; do
    kill -TERM -- "-$pgid" 2>/dev/null || true
    sleep 0.2
    kill -KILL -- "-$pgid" 2>/dev/null || true
  done < "$MEMORY_VEC_SERVICE_PIDFILE"
  rm -f "$MEMORY_VEC_SERVICE_PIDFILE"
}
trap stop_services EXIT
.venv/bin/python -m pytest "$@"
