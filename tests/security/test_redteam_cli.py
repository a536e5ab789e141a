"""The command line under attack: escape sequences, hostile replay files, stale approvals
(SPEC S7, S9; issue 12, classes "terminal", "tracebacks", "approvals")."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Replay = Callable[[list[str]], Path]

ESCAPES = {
    "title": "\x1b]0;pwned\x07",
    "clear": "\x1b[2J\x1b[H",
    "csi8bit": "\x9b31m",
    "bidi": "\u202eevil\u202c",
    "backspace": "ok\x08\x08\x08",
}


@pytest.mark.parametrize("kind", sorted(ESCAPES))
def test_control_characters_from_the_model_never_reach_the_terminal_S9(
    kind: str, tao_cli: Any, replay: Replay
) -> None:
    evil = ESCAPES[kind]
    script = replay([f"Thought: {evil}\nAction: calculator[1+1]", f"Action: finish[{evil}]"])
    live = tao_cli("run", f"task {evil}", "--model", f"replay:{script}")
    assert live.returncode == 0, live.stderr
    run_id = tao_cli("runs", "list", "--json").stdout
    shown = tao_cli("runs", "show", json.loads(run_id)[0]["run_id"]).stdout
    for text in (live.stdout, live.stderr, shown):
        for char in evil:
            if char.isprintable() and char not in "\u202e\u202c":
                continue
            assert char not in text, f"{char!r} reached the terminal"


@pytest.mark.parametrize(
    "content",
    ["[" * 100_000 + "]" * 100_000, "[" + "9" * 5000 + "]", "{not json", "[1, 2", '"x"'],
    ids=["deep", "huge-int", "broken", "truncated", "not-a-list"],
)
def test_a_hostile_replay_file_is_one_clear_error_and_exit_2(
    content: str, tao_cli: Any, tmp_path: Path
) -> None:
    path = tmp_path / "replay.json"
    path.write_text(content)
    out = tao_cli("run", "x", "--model", f"replay:{path}")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("Error: replay file")


def test_a_decision_for_a_call_that_is_not_pending_is_refused_S7(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    script = replay(['Action: write_file(path="a.txt", content="x")', "Action: finish[ok]"])
    out = tao_cli("run", "w", "--model", f"replay:{script}", "--tools", "write",
                  "--project", str(project), "--no-input", "--json")  # fmt: skip
    data = json.loads(out.stdout)
    (pending,) = data["pending"]
    stale = tao_cli("runs", "approve", data["run_id"], "--call", "s1c0-000000000000")
    assert stale.returncode == 1 and "is not pending" in stale.stderr
    assert not (project / "a.txt").exists()
    right = tao_cli("runs", "approve", data["run_id"], "--call", pending["id"])
    assert right.returncode == 0, right.stderr
    assert pending["id"] in right.stdout
    assert json.loads(tao_cli("resume", data["run_id"], "--json").stdout)["status"] == "finished"
    assert (project / "a.txt").read_text() == "x"
    again = tao_cli("runs", "approve", data["run_id"], "--call", pending["id"])
    assert again.returncode == 1 and "not waiting for approval" in again.stderr


# -- one escaping function for every surface (issue 26 item 6) ----------------------------

HOSTILE = {
    "clear": "\x1b[2J\x1b[H",
    "osc52-clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "osc8-link": "\x1b]8;;http://127.0.0.1/x\x1b\\click\x1b]8;;\x1b\\",
    "c1-csi": "\u009b2J",
    "c1-osc": "\u009d0;title\u009c",
    "bidi-override": "\u202etxt.exe\u202c",
    "bidi-isolate": "\u2066evil\u2069",
    "bell-del": "\x07\x7f",
}


def _inert(data: bytes, where: str) -> None:
    """Nothing a terminal acts on: no ESC or BEL byte, no C1 or bidi control character
    (0x9b as a byte may be part of another UTF-8 character, so C1 is checked decoded)."""
    for byte in (0x1B, 0x07):
        assert bytes([byte]) not in data, f"{where}: byte {byte:#x}"
    text = data.decode("utf-8", errors="replace")
    for char in "\u202e\u202c\u2066\u2069\u009b\u009c\u009d\x7f":
        assert char not in text, f"{where}: {char!r} reached the terminal"


def _tao(tao_home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TAO_HOME": str(tao_home), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tao", *args], capture_output=True, env=env, timeout=120
    )


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_every_cli_surface_shows_hostile_text_inert_S9(
    kind: str, tao_home: Path, tmp_path: Path
) -> None:
    """Task, model name (a replay file's name), tool name, error, answer: every command."""
    evil = HOSTILE[kind]
    script = tmp_path / f"replies{evil.replace('/', '_')}.json"
    script.write_text(
        json.dumps(
            [
                f"Thought: {evil}\nAction: no_such_tool{evil}[1]",
                f"Thought: ok\nAction: calculator[1+{evil}]",
                f"Action: finish[{evil}]",
            ]
        )
    )
    run = _tao(tao_home, "run", f"task {evil}", "--model", f"replay:{script}", "-t", "calc")
    assert run.returncode in (0, 3), run.stderr
    listed = _tao(tao_home, "runs", "list")
    run_id = json.loads(_tao(tao_home, "runs", "list", "--json").stdout)[0]["run_id"]
    outputs = {
        "run": run,
        "runs list": listed,
        "runs list --json": _tao(tao_home, "runs", "list", "--json"),
        "runs show": _tao(tao_home, "runs", "show", run_id),
        "runs show --json": _tao(tao_home, "runs", "show", run_id, "--json"),
        "runs export": _tao(tao_home, "runs", "export", run_id),
        "run --json": _tao(tao_home, "run", f"t{evil}", "-m", f"replay:{script}", "--json"),
        "unknown run id": _tao(tao_home, "runs", "show", f"ab{evil}"),
        "bad model spec": _tao(tao_home, "run", "x", "--model", f"nope{evil}:x"),
        "unknown option": _tao(tao_home, "runs", "list", f"--x{evil}"),
        "resume unknown": _tao(tao_home, "resume", f"{evil}"),
    }
    assert "task" in listed.stdout.decode(), listed.stderr
    assert "Traceback" not in b"".join(o.stderr for o in outputs.values()).decode(errors="replace")
    for name, out in outputs.items():
        _inert(out.stdout, f"{name} stdout")
        _inert(out.stderr, f"{name} stderr")
    exported = [json.loads(line) for line in outputs["runs export"].stdout.splitlines()]
    assert exported[0]["task"] == f"task {evil}"  # escaped bytes, the same JSON value


def test_no_cli_module_prints_except_through_the_terminal_module_S9() -> None:
    """One path to the terminal: only tao.cli.terminal builds consoles and echoes."""
    import tao.cli

    banned = {"Console", "echo", "secho", "print", "write", "prompt"}
    allowed = {("console", "print"), ("click", "prompt")}  # a SafeConsole; prompt text is tao's
    for module in Path(tao.cli.__file__).parent.glob("*.py"):
        if module.name == "terminal.py":
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in {"Console", "print"}:
                raise AssertionError(f"{module.name}:{node.lineno}: {func.id}(...)")
            if isinstance(func, ast.Attribute) and func.attr in banned:
                owner = func.value.id if isinstance(func.value, ast.Name) else "?"
                if owner in {"click", "sys", "Console"} and (owner, func.attr) not in allowed:
                    raise AssertionError(f"{module.name}:{node.lineno}: {owner}.{func.attr}")
