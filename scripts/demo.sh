#!/usr/bin/env bash
# The main job: install what the demo needs (the core only, see scripts/setup.sh),
# then run the offline demo. Its store is kept in ./.memory_vec/demo (--persist-dir DIR to
# move it); the last lines print the memory-vec commands that inspect it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
extra=""  # --backend chroma|milvus needs its driver, which the demo install leaves out
case " $* " in
  *" --backend chroma "*|*" --backend=chroma "*) extra=chroma module=chromadb ;;
  *" --backend milvus "*|*" --backend=milvus "*) extra=milvus module=milvus_lite ;;
esac
if [ -n "$extra" ] && ! .venv/bin/python -c "import $module" 2>/dev/null; then
  echo "demo: installing memory-vec[$extra] for --backend $extra"
  log="$(mktemp)"  # pip's output only if it fails (the build backend prints a banner even under -q)
  .venv/bin/pip install -q -c constraints.txt -e ".[$extra]" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/memory-vec demo "$@"
