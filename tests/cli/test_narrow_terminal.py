"""``tao runs list`` at an 80-column terminal (issue 30): ids, statuses and headers whole,
the task wrapped, never cut; a shown id is a prefix ``tao runs show`` resolves (SPEC M3)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.terminal import Terminal, terminal_env

Replay = Callable[[list[str]], Path]
LONG_TASK = "Summarise the three longest files of the project and say which one changed last"
WRITE = 'Action: write_file[path="notes.txt", content="hello\\n"]'


@pytest.mark.parametrize("columns", [80, 60])
def test_runs_list_at_a_narrow_terminal_keeps_ids_statuses_and_headers_whole_M3(
    columns: int, tmp_path: Path, tao_home: Path, replay: Replay, tao_cli: Any
) -> None:
    options = ["--tools", "write", "--project", str(tmp_path), "--no-input", "--json"]
    paused = tao_cli("run", "keep notes", "--model", f"replay:{replay([WRITE])}", *options)
    finish = replay(["Action: finish[ok]"])
    done = tao_cli("run", LONG_TASK, "--model", f"replay:{finish}", "--json")
    ids = {paused.json()["run_id"]: "awaiting_approval", done.json()["run_id"]: "finished"}
    env = terminal_env({**os.environ, "TAO_HOME": str(tao_home)}, columns=columns)
    with Terminal([sys.executable, "-m", "tao", "runs", "list"], env=env, columns=columns) as t:
        assert t.finish() == 0
        screen = t.screen_text()
    assert "…" not in screen, screen
    header = screen.splitlines()[0].split()
    assert header[0] == "ID" and "Status" in header and header[-1] == "Task", screen
    # the task wrapped over lines, every word of it there
    assert all(word in screen.split() for word in LONG_TASK.split()), screen
    for full, status in ids.items():
        row = next(line for line in screen.splitlines() if re.search(rf"\b{status}\b", line))
        prefix = row.split()[0]
        assert full.startswith(prefix) and len(prefix) >= 4, row
        shown = tao_cli("runs", "show", prefix)  # copyable: the prefix resolves to that run
        assert shown.returncode == 0 and status in shown.stdout, shown.stderr


HOTPOTQA_HEADERS = ["strategy", "EM%", "95% CI", "F1%", "paper", "ans", "w/o", "parse",
                    "fallb", "steps", "tok/q", "s/q", "cost"]  # fmt: skip


@pytest.mark.parametrize("columns", [80, 60])
def test_eval_tables_at_a_narrow_terminal_wrap_and_never_cut_M3(
    columns: int, tao_home: Path, replay: Replay
) -> None:
    """``tao eval`` and ``tao eval report``: every header, strategy and number whole (issue 30:
    it printed "strat… E… 95% …"); the table splits (or stacks) where it would not fit."""
    script = replay(["Thought: easy.\nAction: finish[yes]"] * 3)
    env = terminal_env({**os.environ, "TAO_HOME": str(tao_home)}, columns=columns)
    commands = [
        ["eval", "hotpotqa", "--model", f"replay:{script}", "--limit", "1", "--strategy", "react"],
        ["eval", "report"],
    ]
    for command in commands:
        with Terminal([sys.executable, "-m", "tao", *command], env=env, columns=columns) as t:
            assert t.finish() == 0
            screen = t.screen_text()
        assert "…" not in screen, screen
        assert all(len(line) <= columns for line in screen.splitlines())
        table = screen[screen.index("fallbacks)") :]
        for header in HOTPOTQA_HEADERS:
            assert re.search(rf"(^|\s){re.escape(header)}(\s|$)", table, re.M), (header, screen)
        assert re.search(r"(^|\s)react(\s|$)", table, re.M) and "27.4" in table, screen
        assert "100.0" in table and "unknown" in table, screen


LONG_PATH = "docs/summaries/of/the/project/longest-files-summary-for-the-weekly-report.md"
LONG_WRITE = (
    "Thought: I will write the summary into a file deep in the docs folder, for the report.\n"
    f'Action: write_file(path="{LONG_PATH}", content="# Summary\\nThe three longest files '
    'are listed here, on a line that goes well past eighty columns of any terminal.\\n")'
)


@pytest.mark.parametrize("columns", [80])
def test_runs_show_and_approve_at_a_narrow_terminal_wrap_and_never_cut_S3_M3(
    columns: int, tmp_path: Path, tao_home: Path, replay: Replay, tao_cli: Any
) -> None:
    """What a person reads before and after deciding (``tao runs show`` of a paused run, its
    diff, ``tao runs approve``, the decision record) is whole at 80 columns: the full run id
    to copy, every word of the task, the path and the reason wrapped, never cut."""
    script = replay([LONG_WRITE, "Thought: done.\nAction: finish[written]"])
    options = ["--tools", "write", "--project", str(tmp_path), "--no-input", "--json"]
    run_id = tao_cli("run", LONG_TASK, "--model", f"replay:{script}", *options).json()["run_id"]
    env = terminal_env({**os.environ, "TAO_HOME": str(tao_home)}, columns=columns)
    reason = "the weekly report reads exactly this file and nothing else in the docs folder"

    def screen(*command: str) -> str:
        with Terminal([sys.executable, "-m", "tao", *command], env=env, columns=columns) as t:
            assert t.finish() == 0, t.plain()[-2000:]
            text = t.screen_text()
        assert "…" not in text.replace("'…'", ""), text  # the deny hint's placeholder only
        assert all(len(line) <= columns for line in text.splitlines())
        return text

    def joined(text: str) -> str:  # the screen as one string: a wrapped word reads whole
        return "".join(line.strip(" │") for line in text.splitlines())

    waiting = screen("runs", "show", run_id[:8])
    assert run_id in waiting and "awaiting_approval" in waiting, waiting
    assert all(word in waiting.split() for word in LONG_TASK.split()), waiting
    assert LONG_PATH in joined(waiting) and "+# Summary" in waiting, waiting
    approved = screen("runs", "approve", run_id, "--reason", reason)
    assert LONG_PATH in joined(approved), approved
    assert tao_cli("resume", run_id, "--no-input").returncode == 0
    done = screen("runs", "show", run_id)
    assert "status finished" in done and "approved by " in done, done
    assert reason.replace(" ", "") in joined(done).replace(" ", ""), done
