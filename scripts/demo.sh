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
  .venv/bin/pip install -q -c constraints.txt -e ".[$extra]"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/memory-vec demo "$@"
