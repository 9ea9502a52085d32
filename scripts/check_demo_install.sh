#!/usr/bin/env bash
# CI: the README's demo command on a fresh copy of the repository, with an empty pip
# cache (as on a fresh machine): measure what `bash scripts/demo.sh` installs (size of
# .venv, seconds before the demo starts), run a short demo, and check that the command
# it prints inspects the store it kept. Fails past MAX_DEMO_MB / MAX_DEMO_SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_DEMO_MB=${MAX_DEMO_MB:-500}
MAX_DEMO_SECONDS=${MAX_DEMO_SECONDS:-120}
work="$(mktemp -d "${TMPDIR:-/tmp}/memvec-demo-XXXXXX")"
trap 'rm -rf "$work"' EXIT
# the repository's files only (tracked, or new and not ignored): no .venv, no ../shared
mkdir "$work/repo"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    if [ -f "$f" ]; then printf '%s\0' "$f"; fi
  done | tar -c --null -T - | tar -x -C "$work/repo"
else
  tar -c --exclude=./.git --exclude='./.venv*' --exclude=./.memory_vec . | tar -x -C "$work/repo"
fi
cd "$work/repo"
export PIP_CACHE_DIR="$work/pip-cache"
start=$SECONDS
bash scripts/setup.sh demo
seconds=$((SECONDS - start))
mb=$(du -sm .venv | cut -f1)
echo "demo install: ${mb} MB in .venv, ${seconds} s (limits ${MAX_DEMO_MB} MB, ${MAX_DEMO_SECONDS} s)"
if .venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -c "import langchain_core" 2>/dev/null; then
  echo "demo install pulled torch or LangChain" >&2; exit 1
fi
bash scripts/demo.sh --turns 40 --every 20 | tee "$work/demo.out"
grep -q "UPDATE " "$work/demo.out"
inspect=$(grep -m1 " list --config " "$work/demo.out" | sed 's/^ *//')
echo "running the printed command: $inspect"
eval "$inspect --json" > "$work/list.json"
.venv/bin/python - "$work/list.json" <<'EOF'
import json, sys
records = json.load(open(sys.argv[1]))["records"]
old = [r for r in records if r["text"].startswith("Our travel budget is 5000")]
assert old and all(r["valid_to"] is not None for r in old), "the old budget is not kept as history"
print(f"the store lists {len(records)} facts, the old budget superseded")
EOF
[ "$mb" -le "$MAX_DEMO_MB" ] && [ "$seconds" -le "$MAX_DEMO_SECONDS" ] || { echo "demo install too big or too slow" >&2; exit 1; }
