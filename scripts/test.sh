#!/usr/bin/env bash
# The project's checks: lint, strict types, then the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check src tests bench
.venv/bin/mypy --strict src
.venv/bin/python -m pytest "$@"
