"""run_tests: test_*.py only, a real pytest child, timeout, allow-list env, tail (SPEC S2, L6)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tao.errors import ToolError
from tao.sandbox import Sandbox
from tao.tools.base import cut
from tao.tools.tests import test_tools

PASSING = "def test_ok():\n    assert 1 + 1 == 2\n"
FAILING = "def test_bad():\n    assert 1 + 1 == 3, 'arithmetic is broken'\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_pass.py").write_text(PASSING)
    (root / "tests" / "test_fail.py").write_text(FAILING)
    (root / "helper.py").write_text("X = 1\n")
    (tmp_path / "test_outside.py").write_text(PASSING)
    return root


def test_run_tests_passing_file_reports_exit_code_0_S2(project: Path) -> None:
    (run_tests,) = test_tools(project)
    output = run_tests.invoke({"path": "tests/test_pass.py"})
    assert "1 passed" in output
    assert output.endswith(
        "[run_tests: pytest tests/test_pass.py exited with code 0: all tests passed]"
    )
    assert not (project / ".pytest_cache").exists()  # read-only: no cache written


def test_run_tests_failing_file_shows_the_failure_and_code_1_S2(project: Path) -> None:
    (run_tests,) = test_tools(project)
    output = run_tests.invoke({"path": "tests/test_fail.py"})
    assert "arithmetic is broken" in output
    assert "1 failed" in output
    assert output.endswith("exited with code 1: some tests failed]")


def test_run_tests_keeps_the_tail_with_the_summary_L6(project: Path) -> None:
    noisy = "def test_noisy():\n    print('x' * 9000)\n    assert False, 'the real reason'\n"
    (project / "tests" / "test_noisy.py").write_text(noisy)
    (run_tests,) = test_tools(project)
    assert (run_tests.max_chars, run_tests.keep) == (2_000, "tail")
    output = run_tests.invoke({"path": "tests/test_noisy.py"})
    assert len(output) > 9_000
    shown = cut(output, run_tests.max_chars, run_tests.keep)
    assert shown.startswith("[output cut: showing the last 2,000 of")
    assert "exited with code 1" in shown and "1 failed" in shown


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("helper.py", "not a test file"),
        ("tests", "not a test file"),
        ("tests/test_missing.py", "does not exist"),
        ("../test_outside.py", "outside the project"),
        ("/tmp/test_x.py", "absolute path"),
        ("tests/test_pass.py\x00", "NUL byte"),
    ],
)
def test_run_tests_only_accepts_test_files_inside_the_project_S1_S2(
    project: Path, path: str, message: str
) -> None:
    (run_tests,) = test_tools(project)
    with pytest.raises(ToolError, match=message):
        run_tests.invoke({"path": path})


def test_run_tests_refuses_symlink_to_a_test_file_outside_S1(project: Path) -> None:
    (project / "tests" / "test_link.py").symlink_to(project.parent / "test_outside.py")
    (run_tests,) = test_tools(project)
    with pytest.raises(ToolError, match="outside the project"):
        run_tests.invoke({"path": "tests/test_link.py"})


def _running_with(token: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def test_run_tests_kills_the_process_group_on_timeout_S2_S10(project: Path) -> None:
    """The grandchild pytest starts dies with it: its pid lives in the sandbox's own PID
    namespace, so the host is searched for its command line instead."""
    token = f"tao-grandchild-{time.monotonic_ns()}"
    started = project / "started"
    sleeper = (
        "import subprocess, sys, time\n"
        "def test_sleep():\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {token!r}])\n"
        f"    open({str(started)!r}, 'w').write('yes')\n"
        "    time.sleep(60)\n"
    )
    (project / "tests" / "test_sleep.py").write_text(sleeper)
    if os.geteuid() == 0:  # the child is uid 65534: a writable folder must let it write
        project.chmod(0o777)
    (run_tests,) = test_tools(project, timeout_s=3, sandbox=Sandbox(writable=(project,)))
    begun = time.monotonic()
    output = run_tests.invoke({"path": "tests/test_sleep.py"})
    assert time.monotonic() - begun < 15
    assert output.endswith(
        "[run_tests: pytest tests/test_sleep.py was killed after the 3 s timeout]"
    )
    assert started.read_text() == "yes"  # the grandchild was started
    deadline = time.monotonic() + 5
    while _running_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_with(token) == []


def test_run_tests_gives_the_child_an_allow_list_environment_S2_S10(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abcdef")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("MY_DB_PASSWORD", "hunter2")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:hunter2@db/app")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    dump = (
        "import os\n"
        "def test_env():\n"
        "    print('KEYS:' + ','.join(sorted(os.environ)))\n"
        "    print('VALUES:' + '|'.join(os.environ.values()))\n"
        "    assert False  # a failure makes pytest show the captured output\n"
    )
    (project / "tests" / "test_env.py").write_text(dump)
    (run_tests,) = test_tools(project)
    output = run_tests.invoke({"path": "tests/test_env.py"})
    (keys_line,) = [line for line in output.splitlines() if line.startswith("KEYS:")]
    keys = keys_line.removeprefix("KEYS:").split(",")
    assert "PATH" in keys
    assert "PLAIN_SETTING" not in keys  # an allow-list: an ordinary name is not passed either
    (passing,) = test_tools(project, sandbox=Sandbox(pass_env=("PLAIN_SETTING",)))
    assert "PLAIN_SETTING" in passing.invoke({"path": "tests/test_env.py"})
    for name in ["OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_DB_PASSWORD"]:
        assert name not in keys
    assert "DATABASE_URL" not in keys
    for value in ["sk-test-should-not-leak", "ghp_abcdef", "aws-secret", "hunter2"]:
        assert value not in output
