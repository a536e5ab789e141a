"""Red team, child processes, time limits and tool names (SPEC S2; issue 12 items 4, 5, 9).

Real subprocesses: pytest children that print their environment, folders named
like pytest options, sleeping tools; each case failed on the tree before.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path

import pytest

from tao.errors import ToolDefinitionError, ToolError
from tao.run.act import execute, find_tool, prepare
from tao.state.calls import Call, Ready
from tao.tools.base import Tool, make_tool
from tao.tools.calc import calculate
from tao.tools.limits import TimedOut, run_with_limit
from tao.tools.registry import resolve_tools
from tao.tools.tests import test_tools

PRINT_ENV = (
    "import os\n"
    "def test_env():\n"
    "    for name, value in sorted(os.environ.items()):\n"
    "        print(f'ENV {name}={value}')\n"
    "    assert False, 'show output'\n"
)
LEAKY = {
    "DB_PASS": "hunter2-pass",
    "APP_JWT": "hunter2-jwt",
    "MY_WEBHOOK_URL": "hunter2-webhook",
    "SENTRY_DSN": "hunter2-dsn",
    "LEGACY_PWD_VALUE": "hunter2-pwd",
    "X_SESSION": "hunter2-session",
    "DEPLOY_CREDENTIALS": "hunter2-cred",
    "innocent_name": "postgres://u:hunter2-url@db/app",
    "ALSO_INNOCENT": "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8",
}


def test_a_real_pytest_child_sees_none_of_them_S2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in LEAKY.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "test_env.py").write_text(PRINT_ENV)
    (run_tests,) = test_tools(tmp_path)
    output = run_tests.invoke({"path": "test_env.py"})
    assert "ENV PATH=" in output
    assert "hunter2" not in output and "ghp_" not in output


@pytest.mark.parametrize("folder", ["--junitxml=x", "--co", "-p", "-x", "--rootdir=.."])
def test_a_folder_named_like_an_option_is_refused_S2(tmp_path: Path, folder: str) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "test_a.py").write_text("def test_a():\n    assert True\n")
    (run_tests,) = test_tools(tmp_path)
    with pytest.raises(ToolError, match="starts with '-'"):
        run_tests.invoke({"path": f"{folder}/test_a.py"})
    assert not (tmp_path / "x").exists()


def test_pytest_gets_the_path_after_double_dash_S2(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "def pytest_configure(config):\n    print('ARGS', list(config.invocation_params.args))\n"
    )
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert False\n")
    (run_tests,) = test_tools(tmp_path)
    output = run_tests.invoke({"path": "test_a.py"})
    assert "'--', 'test_a.py'" in output


BOMBS = [
    "round(1, -10**8)", "round(1.5, 10**9)", "round(2, 1e300)", "2**-10**9", "2.0**10**6",
    "round(10**900, -(10**6))", "factorial(10**6)", "(10**999)**(10**6)", "round(7, -5000)",
]  # fmt: skip


def test_the_calculator_bounds_every_operation_L5() -> None:
    """Each bomb is refused at once with a clear error (the old tree hung on round)."""
    answered: dict[str, object] = {}
    for expression in BOMBS:
        outcome = run_with_limit(partial(calculate, expression), 2.0)
        answered[expression] = "hung" if isinstance(outcome, TimedOut) else type(outcome.error)
    assert answered == dict.fromkeys(BOMBS, ToolError)


def sleepy(seconds: float) -> str:
    """Sleep, as a hung tool would.

    Args:
        seconds: How long.
    """
    time.sleep(seconds)
    return "woke"


def test_a_hung_tool_is_abandoned_and_the_run_goes_on_L5() -> None:
    tool = make_tool(sleepy, timeout_s=0.3)
    call = prepare(Call("sleepy", "30", "bracket"), {"sleepy": tool})
    assert isinstance(call, Ready)
    started = time.perf_counter()
    outcome = execute(call)
    assert time.perf_counter() - started < 5
    assert outcome.observation.startswith("Error: sleepy did not finish within 0.3 s")


def test_the_run_limit_is_tighter_than_the_tool_limit_L5() -> None:
    tool = make_tool(sleepy)
    call = prepare(Call("sleepy", "30", "bracket"), {"sleepy": tool})
    assert isinstance(call, Ready)
    outcome = execute(call, timeout_s=0.2)
    assert "did not finish within 0.2 s" in outcome.observation


def test_run_tests_kills_its_children_at_the_call_deadline_L5(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    (tmp_path / "test_hang.py").write_text(
        "import subprocess, sys, time\n"
        "def test_hang():\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3); "
        f'open({str(marker)!r}, "w").close()\'])\n'
        "    time.sleep(60)\n"
    )
    (run_tests,) = test_tools(tmp_path, timeout_s=60)
    call = prepare(Call("run_tests", "test_hang.py", "bracket"), {"run_tests": run_tests})
    assert isinstance(call, Ready)
    started = time.perf_counter()
    outcome = execute(call, timeout_s=1.5)
    assert time.perf_counter() - started < 10
    assert "Error" in outcome.observation or "killed" in outcome.observation
    time.sleep(3)
    assert not marker.exists()  # the grandchild went with the group
    assert threading.active_count() < 50


def named(name: str) -> Tool:
    def fn(x: str) -> str:
        """Echo.

        Args:
            x: Text.
        """
        return x

    return make_tool(fn, name=name)


@pytest.mark.parametrize(
    ("first", "second"),
    [("read_file", "Read_File"), ("get_data", "GET_DATA"), ("fetch__url", "fetch_url"),
     ("list_files", "list_FILES")],
)  # fmt: skip
def test_names_that_collide_after_normalisation_are_refused_at_startup(
    tmp_path: Path, first: str, second: str
) -> None:
    with pytest.raises(ToolDefinitionError, match="cannot tell apart") as error:
        resolve_tools([named(first), named(second)], project=tmp_path)
    assert first in str(error.value) and second in str(error.value)


def test_an_mcp_style_read_file_cannot_shadow_the_builtin(tmp_path: Path) -> None:
    with pytest.raises(ToolDefinitionError, match="Read_File"):
        resolve_tools(["files", named("Read_File")], project=tmp_path)


def test_hyphenated_and_dashed_names_collide_too() -> None:
    tool = Tool("get-data", "d", named("x").fn, named("x").params, param_names=("x",))
    with pytest.raises(ToolDefinitionError):
        resolve_tools([tool, named("get_data")])


def test_lookup_is_exact_after_normalisation() -> None:
    tools = {"read_file": named("read_file")}
    for spelling in ("READ_FILE", "Read-File", "read file", " read_file "):
        assert find_tool(spelling, tools) is tools["read_file"], spelling
    for near in ("readfile", "read_files", "rea_file"):
        assert find_tool(near, tools) is None, near
