#!/usr/bin/env bash
# The project's checks: lint, strict types, the code's shape (issue 11's limits: duplicates,
# Any, module and function sizes, import cycles, Agent.__init__, ui/server -> cli), then the
# test suite. Extra arguments go to pytest. Layout is ruff's formatter's (checked, not applied).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check src tests bench scripts
.venv/bin/ruff format --check --quiet src tests bench scripts
.venv/bin/mypy --strict src scripts/shape.py
.venv/bin/python scripts/shape.py
.venv/bin/python -m pytest "$@"
