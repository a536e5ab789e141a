"""``pip install tao`` is light (issue 15): the core needs only its core dependencies.

The network-free half of scripts/check-install.sh (which builds the wheel and installs
it into a fresh environment): the declared core dependencies are the intended ones, and
the real ``tao`` command, with every optional package made unimportable, still runs an
agent, while an optional part says which extra brings it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: What the core needs, and why: each is imported by a part every user has.
CORE = {
    "openai": "the openai: backend, for OpenAI and every compatible server",
    "httpx2": "the HTTP client under the SDKs: loopback connect timeouts",
    "rich": "the terminal display",
    "click": "the tao command",
    "pydantic": "tool argument schemas and typed answers",
    "platformdirs": "where the run log lives",
    "docstring-parser": "tool descriptions from docstrings",
    "jsonschema": "typed answers (--output-schema, output_type)",
    "starlette": "tao ui (approvals in a browser) and tao serve; pure Python",
    "uvicorn": "tao ui and tao serve; pure Python",
    "detect-secrets": "redaction of secrets in everything stored or shown (SPEC S8)",
    "genai-prices": "money cost of provider model calls (--max-cost); 173 KB, pure Python",
}

#: Top-level modules of the optional extras; none may be needed by the core.
OPTIONAL_MODULES = [
    "bm25s", "numpy", "rapidfuzz", "scipy", "llama_cpp", "anthropic", "google.genai", "mcp",
    "psycopg", "playwright", "ray", "matplotlib", "opentelemetry", "tiktoken",
]  # fmt: skip


def _name(requirement: str) -> str:
    return requirement.split("==")[0].split("[")[0].strip().lower()


def test_core_dependencies_are_the_intended_light_ones() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert {_name(r) for r in project["dependencies"]} == set(CORE)
    assert all("==" in r for r in project["dependencies"])  # pinned exactly
    extras = project["optional-dependencies"]
    assert {_name(r) for r in extras["wiki"]} == {"bm25s", "numpy", "rapidfuzz"}
    everything = {_name(r) for name, reqs in extras.items() if name != "dev" for r in reqs}
    assert everything - {"llama-cpp-python"} <= {_name(r) for r in extras["dev"]}  # CI has all


def _tao_without_extras(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real ``tao`` in a process where every optional package fails to import."""
    code = (
        "import sys\n"
        f"for name in {OPTIONAL_MODULES!r}:\n"
        "    sys.modules[name] = None  # import raises ImportError, find_spec says missing\n"
        f"sys.argv = ['tao', *{list(args)!r}]\n"
        "from tao.cli.main import main\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_the_core_runs_an_agent_and_names_the_extra_it_lacks(tmp_path: Path) -> None:
    (tmp_path / "replies.json").write_text(
        json.dumps(["Action: calculator[17 * 23 + 4]", "Action: finish[395]"])
    )
    ran = _tao_without_extras(
        "run", "17 * 23 + 4?", "-m", "replay:replies.json", "-t", "calc", "--json", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["answer"] == "395"
    (tmp_path / "wiki.jsonl").write_text('{"title": "Ada", "text": "Ada wrote programs."}\n')
    wiki = _tao_without_extras(
        "run", "x", "-m", "replay:replies.json", "-t", "wiki", "--corpus", "wiki.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    assert wiki.returncode == 1
    assert "pip install 'tao[wiki]'" in wiki.stderr and "Traceback" not in wiki.stderr


def test_license_is_an_spdx_string_with_its_file_so_setuptools_has_nothing_to_warn() -> None:
    """Issue 30: the table form ``license = { text = "MIT" }`` made setuptools print its
    deprecation banner three times during setup. PEP 639's string and ``license-files``
    need setuptools 77, so the build requirement says so."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert project["license"] == "MIT"
    assert all((REPO / name).is_file() for name in project["license-files"])
    assert "MIT License" in (REPO / "LICENSE").read_text()
    setuptools = [r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools == ["setuptools>=77"]
