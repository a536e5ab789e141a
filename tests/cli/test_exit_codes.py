"""Every exit code the README documents, from the real ``tao`` in a child process (SPEC M1).

README ("Runs, traces, and exit codes"): 0 finished, 1 error, 2 every usage error in every
command, 3 max_steps, 4 awaiting_approval, 130 interrupted. A script relies on them, so
each one is walked through here the way a user meets it, and ``--json`` always says the
same status as the code. (Issue 30 found ``--model local:/nope.gguf`` exiting 1.)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Replay = Callable[[list[str]], Path]
README = Path(__file__).resolve().parents[2] / "README.md"

#: The table as the README states it; the first test holds the README to it.
DOCUMENTED = {0: "finished", 1: "error", 3: "max_steps", 4: "awaiting_approval"}


def test_the_readme_documents_these_codes() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert (
        "0 finished, 5 finished with a forced answer, 1 error, 3 max_steps, "
        "4 awaiting_approval, 130 interrupted" in text
    )  # exit 5 is walked in tests/cli/test_run.py (a replayed run whose answer is forced)
    assert "2 for every usage error in every command" in text


def test_0_finished(tao_cli: Any, replay: Replay) -> None:
    out = tao_cli("run", "2+2?", "-m", f"replay:{replay(['Action: finish[4]'])}", "--json")
    assert (out.returncode, out.json()["status"]) == (0, DOCUMENTED[0]), out.stderr


def test_1_error_the_backend_failed_during_the_run(tao_cli: Any, replay: Replay) -> None:
    """The replay script runs out of replies mid-run: the backend failed, status error."""
    script = replay(["Action: calculator[1+1]"])
    out = tao_cli("run", "x", "-m", f"replay:{script}", "-t", "calc", "--json")
    assert (out.returncode, out.json()["status"]) == (1, DOCUMENTED[1]), out.stderr
    assert "Traceback" not in out.stderr


def test_1_error_a_missing_key_is_a_failure_not_a_usage_error(tao_cli: Any) -> None:
    """The command is right; the environment lacks the key (README: exit 1)."""
    env = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    out = tao_cli("run", "x", "-m", "openai:gpt-4o-mini", "--json", env=env)
    assert out.returncode == 1, out.stderr
    assert out.json() == {"run_id": None, "status": "error", "error": out.json()["error"]}
    assert "OPENAI_API_KEY" in out.stderr


@pytest.mark.parametrize(
    ("case", "spec"),
    [
        ("a GGUF path that does not exist", "local:{tmp}/nope.gguf"),
        ("a file that is not GGUF", "local:{tmp}/weights.gguf"),
        ("a folder instead of a file", "local:{tmp}"),
        ("an unknown backend", "llama:{tmp}/nope.gguf"),
    ],
)
def test_2_a_model_spec_or_path_that_names_nothing_usable(
    case: str, spec: str, tao_cli: Any, tmp_path: Path
) -> None:
    """README: "a model spec ... that names nothing usable" is a usage error, exit 2."""
    (tmp_path / "weights.gguf").write_bytes(b"\x80\x04\x95 a pickle, not a gguf")
    model = spec.replace("{tmp}", str(tmp_path))
    out = tao_cli("run", "x", "--model", model, "--json")
    assert out.returncode == 2, (case, out.returncode, out.stderr)
    assert out.json()["status"] == "error"
    assert re.search(r"^Error: .+", out.stderr, re.MULTILINE), out.stderr
    assert "Traceback" not in out.stderr


def test_3_max_steps(tao_cli: Any, replay: Replay) -> None:
    script = replay(["Action: calculator[1+1]", "Action: finish[2]"])
    out = tao_cli("run", "x", "-m", f"replay:{script}", "-t", "calc", "--max-steps", "1", "--json")
    assert (out.returncode, out.json()["status"]) == (3, DOCUMENTED[3]), out.stderr


def test_4_awaiting_approval(tao_cli: Any, replay: Replay, tmp_path: Path) -> None:
    script = replay(['Action: write_file(path="out.txt", content="hi")', "Action: finish[ok]"])
    out = tao_cli(
        "run", "write it", "-m", f"replay:{script}", "-t", "write", "--project", str(tmp_path),
        "--no-input", "--json",
    )  # fmt: skip
    assert (out.returncode, out.json()["status"]) == (4, DOCUMENTED[4]), out.stderr
    assert not (tmp_path / "out.txt").exists()


def test_130_interrupted_by_ctrl_c(replay: Replay, tao_home: Path, tmp_path: Path) -> None:
    """SIGINT (what Ctrl-C sends) while the run waits on a person: exit 130, the resume hint."""
    script = replay(["Action: calculator[1 + 1]", "Action: finish[2]"])
    env = {**os.environ, "TAO_HOME": str(tao_home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tao", "run", "x", "-m", f"replay:{script}", "-t", "calc",
         "--human-tools", "--json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.stderr is not None
    seen = ""
    while "type the Observation" not in seen:  # mid-run: the person is being asked
        line = proc.stderr.readline()
        assert line, seen
        seen += line
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    result = json.loads(out)
    assert result["status"] == "interrupted"
    assert f"tao resume {result['run_id']}" in err
