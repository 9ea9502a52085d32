#!/usr/bin/env bash
# The main job: install what the demo needs (the core + Milvus Lite, see scripts/setup.sh),
# then run the offline demo. Its store is kept in ./.memory_vec/demo (--persist-dir DIR to
# move it); the last lines print the memory-vec commands that inspect it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
case " $* " in  # --backend chroma needs its driver, which the demo install leaves out
  *" --backend chroma "*|*" --backend=chroma "*)
    .venv/bin/python -c "import chromadb" 2>/dev/null || {
      echo "demo: installing memory-vec[chroma] for --backend chroma"
      .venv/bin/pip install -q -c constraints.txt -e ".[demo,chroma]"
    } ;;
esac
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/memory-vec demo "$@"
