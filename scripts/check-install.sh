#!/usr/bin/env bash
# `pip install tao` is light (issue 15): build the wheel, check that its core dependencies
# are exactly the intended ones, install it with only those into a fresh virtual
# environment, run an agent there, and check that an optional part left out says which
# extra brings it. Needs pip's index (the network or a warm cache), so CI runs it apart
# from pytest (tests/test_install.py checks the same without the network).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" -m pip wheel --quiet --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/tao-*.whl)

core=$("$python" - "$wheel" <<'EOF'
import re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    lines = wheel.read(name).decode().splitlines()
deps = [l.split(":", 1)[1].strip() for l in lines if l.startswith("Requires-Dist:")]
print(" ".join(sorted(re.split(r"[=<>!~ \[]", d)[0].lower() for d in deps if "extra ==" not in d)))
EOF
)
expected="click detect-secrets docstring-parser genai-prices httpx2 jsonschema openai platformdirs pydantic rich starlette uvicorn"
if [[ "$core" != "$expected" ]]; then
    echo "check-install: the wheel's core dependencies are: $core" >&2
    echo "check-install: intended:                         $expected" >&2
    exit 1
fi

"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$wheel"
export TAO_HOME="$work/home"
cd "$work"
echo '["Action: calculator[17 * 23 + 4]", "Action: finish[395]"]' > replies.json
"$work/venv/bin/tao" run "What is 17 * 23 + 4?" --model replay:replies.json --tools calc --json \
    | grep -q '"answer": "395"'
"$work/venv/bin/python" - <<'EOF'
from tao import Agent, RunConfig, tool

@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

agent = Agent("replay:replies.json", [add, "calc"], config=RunConfig(max_steps=3), record=False)
assert agent.run("17 * 23 + 4?").answer == "395"
EOF
echo '{"title": "Ada", "text": "Ada wrote programs."}' > wiki.jsonl
if out=$("$work/venv/bin/tao" run x --model replay:replies.json --tools wiki --corpus wiki.jsonl 2>&1); then
    echo "check-install: the wiki tools ran without their extra" >&2
    exit 1
fi
grep -q "pip install 'tao\[wiki\]'" <<<"$out" || { echo "check-install: $out" >&2; exit 1; }
size=$(du -sm "$work/venv" | cut -f1)
echo "check-install: ok (core install: $size MB)"
