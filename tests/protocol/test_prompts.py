"""The system prompt of a run that reads and writes files carries a worked file task
(issue 30, SPEC L8), in the run's language, whose calls are calls tao itself reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao.protocol.labels import LABELS
from tao.protocol.prompts import system_prompt
from tao.protocol.text import Action, parse_reply
from tao.tools.calc import calculator_tool
from tao.tools.files import file_tools
from tao.tools.write import write_tools


@pytest.mark.parametrize("lang", sorted(LABELS))
def test_the_worked_file_task_is_shown_in_the_runs_language_L8(tmp_path: Path, lang: str) -> None:
    labels = LABELS[lang]
    tools = [*file_tools(tmp_path), *write_tools(tmp_path)]
    prompt = system_prompt(labels, tools)
    example = prompt[prompt.index(f"{labels.task}: ") :]
    assert f"{labels.action}: read_file[a.txt]" in example
    assert f'{labels.action}: write_file[path="b.txt", content="9\\n5\\n4"]' in example
    # Every line of it is in the run's language: its labels, and its words where not English.
    if lang != "en":
        assert "largest first" not in example and "Thought:" not in example


def test_the_examples_write_binds_as_tao_reads_it(tmp_path: Path) -> None:
    """A model copies the example's shape: that shape must bind to the file and the
    three lines it shows, or the example would teach a call that fails."""
    labels = LABELS["en"]
    write_file = write_tools(tmp_path)[0]
    prompt = system_prompt(labels, [*file_tools(tmp_path), write_file])
    lines = prompt.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Action: write_file[path="))
    parsed = parse_reply(f"{lines[at - 1]}\n{lines[at]}", labels)
    assert isinstance(parsed, Action), parsed
    arguments = parsed.arguments or write_file.bind(parsed.argument)
    assert arguments == {"path": "b.txt", "content": "9\n5\n4"}


def test_no_worked_file_task_without_the_file_tools(tmp_path: Path) -> None:
    """The example costs tokens on every request: only runs that can read and write files
    get it."""
    labels = LABELS["en"]
    assert "read_file[a.txt]" not in system_prompt(labels, [calculator_tool()])
    assert "read_file[a.txt]" not in system_prompt(labels, file_tools(tmp_path))
