#!/usr/bin/env bash
# Install (not start) what the integration tests start themselves:
# Redis from Debian, and the C++ Milvus server (PyPI 'milvus') in its own venv
# because it pins an older pymilvus than the project uses. Says what it installs.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "services: installing the Debian package redis-server with apt-get (the tests start their own redis-server on a free port)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server
  else
    echo "redis-server is missing: sudo apt-get install redis-server" >&2
    exit 1
  fi
fi
if [ ! -x .venv-milvus/bin/milvus-server ]; then
  echo "services: installing the C++ Milvus server (PyPI milvus==2.3.5) into .venv-milvus"
  python3 -m venv .venv-milvus
  .venv-milvus/bin/pip install -q --upgrade pip
  .venv-milvus/bin/pip install -q milvus==2.3.5
fi
