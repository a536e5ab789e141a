"""The project is writable for run_tests only where the person's policy allows writes
(SPEC S3, S10; issue 26 item 1). Real policy files, a real agent, real bubblewrap."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tao import Agent
from tao.approval.policy import Policy, Rule
from tao.sandbox.command import SANDBOX_UID
from tao.sandbox.writable import writable_folders

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

WRITER = """\
import pathlib

def test_write():
    for target in ("out/report.txt", "src/x.py", "out-2/x.txt"):
        try:
            pathlib.Path(target).write_text("written")
            print("WROTE", target)
        except OSError as error:
            print("REFUSED", target, type(error).__name__)
    assert False, "show"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for name in ("out", "out-2", "src", "tests", "out/deep"):
        (root / name).mkdir(parents=True)
    if os.geteuid() == 0:  # tao's child runs as uid 65534: out/ must be writable for it
        (root / "out").chmod(0o777)  # documented in docs/security.md, never done by tao
    return root


def _policy(tmp_path: Path, text: str) -> Policy:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return Policy.load(path)


def test_only_whole_folder_write_rules_open_folders_inside_the_project_S3_S10(
    project: Path, tmp_path: Path
) -> None:
    (project / "link-out").symlink_to(tmp_path)  # a folder outside, through a symlink
    (project / "link-in").symlink_to(project / "src")  # the policy never covered src/ by it
    rules = [
        Rule("write_file", {"path": "out/**"}),
        Rule("write_file", {"path": "out/deep/**"}),  # inside out/: adds nothing
        Rule("write_file", {"path": "src/*.py"}),  # files, not a folder
        Rule("write_file", {"path": "**/*.md"}),
        Rule("write_file", {"path": "../**"}),
        Rule("write_file", {"path": "/etc/**"}),
        Rule("write_file", {"path": "link-out/**"}),
        Rule("write_file", {"path": "link-in/**"}),
        Rule("write_file", {"path": "missing/**"}),
        Rule("write_file", {"path": "tests/**", "content": "x*"}),  # constrained content
        Rule("read_file"),
        Rule("delete_file", {"path": "src/**"}),
    ]
    assert writable_folders(Policy(tuple(rules)), project) == (project.resolve() / "out",)
    assert writable_folders(Policy((Rule("write_file"),)), project) == (project.resolve(),)
    assert writable_folders(Policy(), project) == ()


@needs_bwrap
def test_with_a_policy_allowing_out_a_test_writes_out_but_not_src_S3_S10(
    project: Path, tmp_path: Path, replay: Callable[[list[str]], Path]
) -> None:
    (project / "tests" / "test_write.py").write_text(WRITER)
    policy = _policy(tmp_path, '[[allow]]\ntool = "write_file"\npath = "out/**"\n')
    script = replay(["Action: run_tests[tests/test_write.py]", "Action: finish[done]"])

    def yes(tool: object, arguments: object) -> bool:  # the approval gate asks: a person's yes
        return True

    agent = Agent(f"replay:{script}", ["tests"], project=str(project), policy=policy, approve=yes)
    result = agent.run("run the tests")
    observation = result.steps[0].observation
    assert "WROTE out/report.txt" in observation, observation
    assert "REFUSED src/x.py" in observation and "REFUSED out-2/x.txt" in observation
    assert (project / "out" / "report.txt").read_text() == "written"
    assert not (project / "src" / "x.py").exists() and not (project / "out-2" / "x.txt").exists()
    # without the rule, nothing is writable
    plain = Agent(f"replay:{script}", ["tests"], project=str(project), policy=Policy(), approve=yes)
    (project / "out" / "report.txt").unlink()
    observation = plain.run("run the tests").steps[0].observation
    assert "REFUSED out/report.txt" in observation and not (project / "out" / "report.txt").exists()


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid is dropped only when tao is root")
def test_under_root_the_child_is_uid_65534_and_a_closed_project_says_so_S10(
    project: Path, tmp_path: Path
) -> None:
    """Root's permissions never apply inside; a project uid 65534 cannot read runs as root
    with a note in the observation, never silently."""
    from tao.tools.tests import test_tools

    probe = "import os\ndef test_uid():\n    print('UID', os.getuid())\n    assert False\n"
    (project / "tests" / "test_uid.py").write_text(probe)
    (run_tests,) = test_tools(project)
    output = run_tests.invoke({"path": "tests/test_uid.py"})
    assert f"UID {SANDBOX_UID}" in output and "run_tests: note:" not in output
    project.chmod(0o700)
    output = run_tests.invoke({"path": "tests/test_uid.py"})
    assert "UID 0" in output
    assert "is not readable by uid 65534" in output and "process limit does not apply" in output
