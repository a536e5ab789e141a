"""The embedded model finishes simple file tasks (issue 30, item 2), judged on disk.

``bench/file_tasks.py`` measures twelve such tasks; this keeps two of them honest in CI:
the issue's own example (it wrote nothing and gave a forced answer), and finding a file by
its extension (it listed ``.csv`` as a folder until ``list_files`` answered patterns).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tao import Agent, Status
from tao.models.install import model_is_installed, runtime_is_installed
from tao.tools.files import file_tools
from tao.tools.write import write_tools

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not (runtime_is_installed() and model_is_installed()),
        reason="the embedded model is not installed (python -m tao.models.install)",
    ),
]


def _run(project: Path, task: str) -> Status:
    from tao.models.local import LocalModel

    tools = [*file_tools(project), *write_tools(project)]
    agent = Agent(LocalModel(), tools, max_steps=6, approve=lambda *_: True, record=False)
    result = agent.run(task)
    assert not any(step.forced for step in result.steps), result.steps
    return result.status


@pytest.mark.parametrize(
    ("files", "task", "made", "wants"),
    [
        (
            {"notes.txt": "buy milk\ncall Ana\nfix the bike\n"},
            "Count the lines in notes.txt and write the count to count.txt.",
            "count.txt",
            {"3"},
        ),
        (
            {"notes.md": "# notes\n", "lib/tool.py": "x = 1\n", "data/a.csv": "a\n1\n"},
            "There is exactly one Python file in this project. Write its path to where.txt.",
            "where.txt",
            {"lib/tool.py", "tool.py"},
        ),
    ],
)
def test_the_embedded_model_does_a_simple_file_task(
    tmp_path: Path, files: dict[str, str], task: str, made: str, wants: set[str]
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _run(tmp_path, task) is Status.FINISHED
    assert (tmp_path / made).read_text().strip() in wants
