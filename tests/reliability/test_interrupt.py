"""Nothing left running, nothing lost: Ctrl-C, SIGTERM, cancel() (SPEC R1, R2; issue 14)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao import Agent, Status, StoreError, tool
from tao.models.base import ModelReply, ModelRequest
from tao.store.factory import open_store

Replay = Callable[[list[str]], Path]

#: pytest runs it in the sandbox; it starts a grandchild, then both sleep. Their pids live
#: in the sandbox's own PID namespace and the project is read-only there, so the host finds
#: them by the token on their command lines (the file's name, the grandchild's argument).
SLOW_TEST = """\
import subprocess, sys, time

def test_slow():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", {token!r}])
    time.sleep(60)
"""


def _at_a_terminal() -> None:
    """SIGINT as a terminal's Ctrl-C finds it: a suite started in the background (``cmd &``
    without job control) ignores SIGINT, its children inherit that, and Python then
    installs no handler: tao would rightly keep ignoring it, as ``nohup`` users expect."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _running_with(token: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_run_ends_its_children_is_stored_interrupted_and_exits_130_R2(
    tmp_path: Path, tao_home: Path, replay: Replay, sent: signal.Signals
) -> None:
    """pytest and the grandchild it started, both inside the sandbox, are gone within a
    second of tao's exit."""
    project = tmp_path / "project"
    project.mkdir()
    token = f"tao_interrupt_{time.monotonic_ns()}"
    name = f"test_slow_{token}.py"
    (project / name).write_text(SLOW_TEST.format(token=f"{token}_grandchild"))
    script = replay([f"Action: run_tests[{name}]", "Action: finish[done]"])
    # faulthandler: should tao ever hang here, SIGABRT makes it print where (see below)
    env = {**os.environ, "TAO_HOME": str(tao_home), "PYTHONFAULTHANDLER": "1"}
    command = [sys.executable, "-m", "tao", "run", "x", "--model", f"replay:{script}",
               "--tools", "tests", "--project", str(project), "--json", "--no-input"]  # fmt: skip
    tao = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_at_a_terminal
    )
    grandchild = f"{token}_grandchild"
    deadline = time.monotonic() + 60
    while not _running_with(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_with(grandchild), "the grandchild never started"
    assert set(_running_with(token)) - set(_running_with(grandchild))  # pytest and bwrap
    tao.send_signal(sent)
    started = time.monotonic()
    try:
        out, err = tao.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # should it ever hang: where its threads were
        tao.send_signal(signal.SIGABRT)
        _, err = tao.communicate(timeout=30)
        pytest.fail(f"tao did not stop within 30 s; where it was:\n{err.decode()[-6000:]}")
    took = time.monotonic() - started
    assert tao.returncode == 130, err
    assert took < 5, f"stopping took {took:.1f} s"
    data = json.loads(out)  # exactly one JSON object
    assert data["status"] == "interrupted"
    assert f"tao resume {data['run_id']}" in err.decode()
    gone_by = time.monotonic() + 1.0
    while _running_with(token) and time.monotonic() < gone_by:
        time.sleep(0.02)
    assert _running_with(token) == [], "a sandboxed child outlived the run by over a second"
    with open_store() as store:
        assert store.get_summary(data["run_id"]).status is Status.INTERRUPTED


@tool
def nap(seconds: float) -> str:
    """Sleep a while."""
    time.sleep(seconds)
    return "rested"


def test_cancel_on_a_run_handle_ends_the_run_as_cancelled_with_its_trace_R2(
    replay: Replay, tao_home: Path
) -> None:
    script = replay(["Action: nap[0.01]", "Action: nap[5]", "Action: finish[x]"])
    agent = Agent(f"replay:{script}", [nap])
    handle = agent.start("rest")
    while True:  # until the first step is recorded and the long nap has begun
        with open_store() as store, contextlib.suppress(StoreError):  # not begun yet
            if store.get_summary(handle.run_id).steps >= 1:
                break
        time.sleep(0.02)
    time.sleep(0.2)
    started = time.monotonic()
    handle.cancel()
    result = handle.result(timeout=10)
    assert time.monotonic() - started < 1.0
    assert result.status is Status.CANCELLED
    assert [s.observation for s in result.steps] == ["rested"]
    with open_store() as store:
        assert store.get_summary(handle.run_id).status is Status.CANCELLED


def test_cancelling_the_asyncio_task_cancels_the_run_R2(replay: Replay, tao_home: Path) -> None:
    script = replay(["Action: nap[5]", "Action: finish[x]"])
    agent = Agent(f"replay:{script}", [nap])
    seen: list[Any] = []

    class Watch:
        def on_start(self, result: Any) -> None:
            seen.append(result)

        def on_step(self, result: Any, step: Any) -> None:
            pass

        def on_finish(self, result: Any) -> None:
            pass

    async def main() -> None:
        task = asyncio.create_task(agent.arun("rest", observers=[Watch()]))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    with open_store() as store:
        assert store.get_summary(seen[0].run_id).status is Status.CANCELLED


class Blocking:
    """A model whose first call waits until the test lets it go."""

    name, supports_stop, supports_grammar, supports_tools = "blocking", True, False, False

    def __init__(self) -> None:
        self.go = threading.Event()

    def complete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        self.go.wait(30)
        raise ConnectionError("the process was killed here")

    async def acomplete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        return self.complete(request, on_text)


def test_a_run_killed_before_its_first_step_can_be_resumed_R1(
    replay: Replay, tao_home: Path
) -> None:
    model = Blocking()
    ids: list[str] = []

    class Watch:
        def on_start(self, result: Any) -> None:
            ids.append(result.run_id)

        def on_step(self, result: Any, step: Any) -> None:
            pass

        def on_finish(self, result: Any) -> None:
            pass

    worker = threading.Thread(
        target=lambda: Agent(model, ["calc"]).run("2+2?", observers=[Watch()]), daemon=True
    )
    worker.start()
    time.sleep(0.5)
    with open_store() as store:  # the model has not answered: a checkpoint exists already
        checkpoint = store.load_state(ids[0])
    assert checkpoint is not None and checkpoint.step is None and checkpoint.messages
    script = replay(["Action: finish[4]"])
    with open_store() as store:  # as if the process had died: its run is picked up again
        lease = store.get_lease(ids[0])  # a dead holder's lease runs out (SPEC R5): let it go
        assert lease is not None
        store.release_lease(ids[0], lease.holder)
        result = Agent(f"replay:{script}", ["calc"], record=store).resume(ids[0])
    assert (result.status, result.answer) == (Status.FINISHED, "4")
    model.go.set()
