#!/usr/bin/env bash
# Set tao up on a fresh machine: a virtual environment in .venv, tao with its
# development tools, and the embedded model (llama.cpp runtime + verified GGUF).
# Idempotent: run it again and it only checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python="${PYTHON:-python3}"
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
echo "setup: tao and its development tools into .venv (about 2 min the first time)" >&2
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev,workers]'
echo "setup: the embedded model: llama.cpp runtime (about 5 min to compile the first time) and weights" >&2
bash scripts/install-local-model.sh .venv/bin/python
echo "tao is ready: .venv/bin/tao run \"What is 17 * 23 + 4?\" --model local --tools calc"
