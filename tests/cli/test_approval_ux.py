"""What a person sees around an approval (SPEC S3, M3; issue 30): the Thought before the
question, a footer that counts what happened, and the task when a run is resumed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.terminal import Terminal, terminal_env

Replay = Callable[[list[str]], Path]
THOUGHT = "I keep the notes in a file of their own."
WRITE = f'Thought: {THOUGHT}\nAction: write_file[path="notes.txt", content="hello\\n"]'


def _env(tao_home: Path) -> dict[str, str]:
    return terminal_env({**os.environ, "TAO_HOME": str(tao_home)})


def test_the_prompt_shows_thought_call_and_diff_before_asking_S3(
    tmp_path: Path, tao_home: Path, replay: Replay
) -> None:
    script = replay([WRITE, "Action: finish[done]"])
    args = [sys.executable, "-m", "tao", "run", "keep notes", "--model", f"replay:{script}"]
    args += ["--tools", "write", "--project", str(tmp_path)]
    with Terminal(args, env=_env(tao_home)) as term:
        screen = term.wait_for(lambda s: "Allow it?" in s)
        asked_at = screen.index("Allow it?")
        # what the person reads, all on screen above the question while it waits
        for shown in (f"Thought: {THOUGHT}", "write_file(path='notes.txt'", "+hello"):
            assert shown in screen[:asked_at], screen
        os.write(term.master, b"y\n")
        assert term.finish() == 0
    assert (tmp_path / "notes.txt").read_text() == "hello\n"


def test_a_paused_run_footer_counts_its_model_call_and_the_waiting_call_S3(
    tmp_path: Path, replay: Replay, tao_cli: Any
) -> None:
    script = replay([WRITE, "Action: finish[done]"])
    options = ["--tools", "write", "--project", str(tmp_path), "--no-input"]
    paused = tao_cli("run", "keep notes", "--model", f"replay:{script}", *options)
    assert paused.returncode == 4, paused.stderr
    assert "0 model calls" not in paused.stdout
    assert "0 steps · 1 model call · 1 call awaiting approval · " in paused.stdout
    assert f"Thought: {THOUGHT}" in paused.stdout  # the footer's waiting call says why too


def test_resume_shows_the_task_not_the_run_id_M3(
    tmp_path: Path, tao_home: Path, replay: Replay, tao_cli: Any
) -> None:
    script = replay([WRITE, "Action: finish[done]"])
    options = ["--tools", "write", "--project", str(tmp_path), "--no-input", "--json"]
    paused = tao_cli("run", "keep notes", "--model", f"replay:{script}", *options)
    run_id = paused.json()["run_id"]
    shown = tao_cli("runs", "show", run_id)
    assert f"Thought: {THOUGHT}" in shown.stdout, shown.stdout
    approved = tao_cli("runs", "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    resumed = tao_cli("resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    header = resumed.stdout.splitlines()[0]
    assert header.endswith("  keep notes") and run_id not in header, header
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
