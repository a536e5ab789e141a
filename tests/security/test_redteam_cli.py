"""The command line under attack: escape sequences, hostile replay files, stale approvals
(SPEC S7, S9; issue 12, classes "terminal", "tracebacks", "approvals")."""

from __future__ import annotations

import json
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
