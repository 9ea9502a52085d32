#!/usr/bin/env bash
# The static checks CI runs before the tests (they are not tests): no local-version pins in the
# install files, the formatter, ruff's rules (function size included: complexity <= 12),
# mypy --strict, and the import layers contract.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/check_constraints.py  # standard library only: runs before anything is installed
bash scripts/setup.sh dev
paths=(memory_vec langchain_memory_vec llamaindex_memory_vec tests benchmarks scripts)
.venv/bin/ruff format --check "${paths[@]}"
.venv/bin/ruff check "${paths[@]}"
.venv/bin/mypy
.venv/bin/lint-imports
# the docs site: a broken link, page or API reference fails the build
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir site  # git-ignored
