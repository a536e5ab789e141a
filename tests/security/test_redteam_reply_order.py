"""Red team: the calls of one reply race the code a test run executes (issue 26, SPEC S11).

A reply's calls run together. A call that executes project code (``run_tests``) used to
start beside the reply's writes, so code written while pytest started ran under a call
judged on the project as it was before, and two test runs of one reply could import what
the other wrote into a writable folder. Now such a call waits for every other call of the
reply, runs alone, and is judged again once they have landed. Real pytest, real bwrap,
real files; the writers are slow on purpose, so the old order lets the tests start first.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: What planted code says when it runs.
RAN = "planted code ran"


def _planted(marker: Path) -> str:
    """Code that shows it ran: a marker file where it may write, and a line in the output."""
    return (
        f"import pathlib\ntry:\n    pathlib.Path({str(marker)!r}).write_text('ran')\n"
        f"except OSError:\n    pass\nraise RuntimeError({RAN!r})\n"
    )


def _project(root: Path) -> Path:
    """One passing test that imports ``tests/helper.py``."""
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_ok.py").write_text(
        "import helper\n\ndef test_ok():\n    assert helper.VALUE == 1\n", encoding="utf-8"
    )
    (root / "tests" / "helper.py").write_text("VALUE = 1\n", encoding="utf-8")
    return root


def _reply(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    made = [{"name": name, "arguments": arguments} for name, arguments in calls]
    return {"content": "all at once", "tool_calls": made}


FINISH = {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "ok"}}]}


def _mutations(root: Path, marker: Path) -> dict[str, Callable[[], object]]:
    """Ways a call with side effects puts code under the test run."""
    code = _planted(marker)

    def conftest() -> None:
        (root / "conftest.py").write_text(code, encoding="utf-8")

    def helper_edit() -> None:
        (root / "tests" / "helper.py").write_text(code + "VALUE = 1\n", encoding="utf-8")

    def pyproject_addopts() -> None:
        (root / "plug.py").write_text(code, encoding="utf-8")
        (root / "pyproject.toml").write_text(
            '[tool.pytest.ini_options]\naddopts = "-p plug"\npythonpath = ["."]\n',
            encoding="utf-8",
        )

    def shadow_module() -> None:  # a module named like one pytest imports
        (root / "tests" / "pluggy.py").write_text(code, encoding="utf-8")

    return {f.__name__: f for f in (conftest, helper_edit, pyproject_addopts, shadow_module)}


@pytest.mark.parametrize("order", ["write-first", "tests-first"])
@pytest.mark.parametrize(
    "variant", ["conftest", "helper_edit", "pyproject_addopts", "shadow_module"]
)
def test_an_approved_test_run_waits_for_the_writes_of_its_reply_S11(
    tmp_path: Path, replay: Callable[[list[Any]], Path], order: str, variant: str
) -> None:
    """S11/S7: a person approves a reply's slow write and its ``run_tests`` together, having
    seen the code as it was. The test run now starts only once the write has landed, and is
    judged again then: the code changed since the approval, so it is refused and the planted
    code never runs, whichever order the reply lists them in."""
    from tao import Agent, tool
    from tao.approval.policy import Policy, Rule
    from tao.tools.registry import resolve_tools

    root, marker = _project(tmp_path / "p"), tmp_path / "marker"
    mutations = _mutations(root, marker)

    @tool(effects="writes")
    def mutate(name: str) -> str:
        """Change the project, slowly."""
        time.sleep(1.5)
        mutations[name]()
        return "changed"

    tests = ("run_tests", {"path": "tests/test_ok.py"})
    write = ("mutate", {"name": variant})
    calls = [write, tests] if order == "write-first" else [tests, write]
    script = replay([_reply(calls), FINISH])
    tools = [*resolve_tools(["tests"], project=root), mutate]
    agent = Agent(f"replay:{script}", tools, policy=Policy((Rule("mutate"),)), record=False)
    paused = agent.run("fix the tests")
    assert paused.status.value == "awaiting_approval", paused.steps
    done = agent.resume(paused, approve=True)
    assert done.status.value == "finished", done.error
    observations = [step.observation or "" for step in done.steps]
    assert not marker.exists()
    assert all(RAN not in text for text in observations), observations
    ran_tests = next(s.observation or "" for s in done.steps if s.tool == "run_tests")
    assert "changed since it was approved" in ran_tests, ran_tests


def test_two_test_runs_of_one_reply_never_run_what_the_other_wrote_S11(
    tmp_path: Path, replay: Callable[[list[Any]], Path]
) -> None:
    """S11: two ``run_tests`` in one reply, the project's ``gen`` folder writable in the
    sandbox. The first writes a module there; the second imports it a moment later. They
    used to run side by side, so the second executed code nobody saw. Now they run one
    after the other and the second, judged again, is refused: the code changed."""
    from tao import Agent
    from tao.sandbox.settings import Sandbox
    from tao.tools.tests import test_tools

    root, marker = _project(tmp_path / "p"), tmp_path / "marker"
    gen = root / "gen"
    gen.mkdir()
    os.chmod(gen, 0o777)  # under root the sandboxed child runs as uid 65534
    (root / "tests" / "test_writer.py").write_text(
        "import pathlib\n\ndef test_write():\n"
        f"    pathlib.Path({str(gen / 'planted.py')!r}).write_text({_planted(marker)!r})\n",
        encoding="utf-8",
    )
    (root / "tests" / "test_reader.py").write_text(
        f"import sys, time\n\ndef test_read():\n    time.sleep(3)\n"
        f"    sys.path.insert(0, {str(gen)!r})\n    import planted\n",
        encoding="utf-8",
    )
    calls = [
        ("run_tests", {"path": "tests/test_writer.py"}),
        ("run_tests", {"path": "tests/test_reader.py"}),
    ]
    tools = test_tools(root, sandbox=Sandbox(writable=(gen,)))
    agent = Agent(f"replay:{replay([_reply(calls), FINISH])}", tools, record=False)
    done = agent.run("run the tests")
    assert done.status.value == "finished", (done.pending, done.error)
    first, second = (s.observation or "" for s in done.steps[:2])
    assert (gen / "planted.py").exists(), first  # the writer ran, in the writable folder
    assert RAN not in second and not marker.exists(), second
    assert "was not run" in second and "Call it again" in second, second


def test_test_runs_of_one_reply_with_nothing_changed_all_run_S11(
    tmp_path: Path, replay: Callable[[list[Any]], Path]
) -> None:
    """No friction: two test runs that change nothing both run, unasked, in order."""
    from tao import Agent
    from tao.tools.tests import test_tools

    root = _project(tmp_path / "p")
    calls = [("run_tests", {"path": "tests/test_ok.py"})] * 2
    agent = Agent(f"replay:{json_script(replay, calls)}", test_tools(root), record=False)
    done = agent.run("run the tests")
    assert done.status.value == "finished", done.pending
    assert [("exited with code 0" in (s.observation or "")) for s in done.steps[:2]] == [True] * 2


def json_script(
    replay: Callable[[list[Any]], Path], calls: list[tuple[str, dict[str, Any]]]
) -> Path:
    """A replay script: the reply holding ``calls``, then finish."""
    path = replay([_reply(calls), FINISH])
    json.loads(path.read_text(encoding="utf-8"))  # a valid script
    return path
