"""An agent as another agent's tool (issue 31): each call a child run, nested in the parent.

Real parts: replay scripts for both models, the SQLite run log in an isolated TAO_HOME,
the real ``tao runs show`` in a child process, and a real blocking tool for cancel.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tao import Status
from tao.agent import Agent
from tao.models.replay import ReplayModel
from tao.run.act import Person
from tao.state.config import PendingCall, RunConfig
from tao.store.factory import open_store
from tao.tools.base import Tool, tool
from tao.ui import UiServer


def script(tmp_path: Path, name: str, replies: list[str]) -> ReplayModel:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(replies))
    return ReplayModel(path)


def test_agent_as_tool_end_to_end(
    tao_home: Path, tmp_path: Path, tao_cli: Callable[..., Any]
) -> None:
    """Done-when of issue 31: the child's answer is the parent's observation, the child run
    is in the log under its parent, the parent's step and `tao runs show` name it, and the
    child's tokens count in the parent's usage (and only once)."""
    child_model = script(tmp_path, "child", ["Thought: I know it.\nAction: calculator[6*7]",
                                             "Action: finish[42]"])  # fmt: skip
    researcher = Agent(child_model, ["calc"])
    parent_model = script(tmp_path, "parent", ["Action: research[What is 6 times 7?]",
                                               "Action: finish[The answer is 42]"])  # fmt: skip
    lead = Agent(parent_model, [researcher.as_tool("research", "Ask the research agent.")])
    result = lead.run("Find 6*7 through your researcher.")

    assert (result.status, result.answer) == (Status.FINISHED, "The answer is 42")
    call = result.steps[0]
    assert (call.tool, call.observation) == ("research", "42")
    assert call.child_run is not None
    with open_store() as store:
        child = store.get_run(call.child_run)
        stored_parent = store.get_run(result.run_id)
    assert (child.status, child.answer, child.task) == (Status.FINISHED, "42", "What is 6 times 7?")
    assert child.parent_id == result.run_id
    assert stored_parent.steps[0].child_run == child.run_id
    own_in = sum(s.input_tokens for s in result.steps)
    own_out = sum(s.output_tokens for s in result.steps)
    assert child.usage.input_tokens > 0
    assert result.usage.input_tokens == own_in + child.usage.input_tokens
    assert result.usage.output_tokens == own_out + child.usage.output_tokens
    assert result.usage.model_calls == 2  # the parent's budget counts its own replies
    assert stored_parent.usage == result.usage
    shown = tao_cli("runs", "show", result.run_id)
    assert shown.returncode == 0 and child.run_id in shown.stdout
    with open_store() as store:  # the web page links the parent's step to the child run
        server = UiServer(store, 0).start()
        try:
            url = f"{server.url.rstrip('/')}/runs/{result.run_id}"
            with urllib.request.urlopen(url, timeout=10) as page:
                html = page.read().decode()
        finally:
            server.stop()
    assert f'href="/runs/{child.run_id}"' in html


def test_the_child_gets_at_most_the_parents_remaining_budget(
    tao_home: Path, tmp_path: Path
) -> None:
    """A child whose own settings allow more stops within what its parent has left."""
    child_model = script(tmp_path, "child", ["Action: calculator[1+1]"] * 5)
    helper = Agent(child_model, ["calc"], max_tokens=1_000_000, max_steps=8)
    parent_model = script(
        tmp_path, "parent", ["Action: helper[add forever]", "Action: finish[gave up]"]
    )
    lead = Agent(parent_model, [helper.as_tool("helper", "A helper.")], max_tokens=400)
    result = lead.run("Use the helper.")
    call = result.steps[0]
    assert call.child_run is not None
    with open_store() as store:
        child = store.get_run(call.child_run)
    assert child.config is not None and child.config.max_tokens <= 400
    assert child.status is Status.MAX_STEPS
    assert call.observation is not None and "ended without an answer" in call.observation
    assert result.usage.input_tokens >= child.usage.input_tokens  # counted even so


def test_cancelling_the_parent_stops_the_child(tao_home: Path, tmp_path: Path) -> None:
    """cancel() reaches the child run in the middle of its tool call: both end cancelled."""
    started, release = threading.Event(), threading.Event()

    def wait_here(seconds: int) -> str:
        """Wait.

        Args:
            seconds: how long
        """
        started.set()
        release.wait(30)
        return "done"

    child_model = script(tmp_path, "child", ["Action: wait_here[20]", "Action: finish[x]"])
    slow = Agent(child_model, [wait_here])
    parent_model = script(tmp_path, "parent", ["Action: slow[wait]", "Action: finish[x]"])
    lead = Agent(parent_model, [slow.as_tool("slow", "A slow agent.")])
    handle = lead.start("Use the slow agent.")
    assert started.wait(30)
    handle.cancel()
    result = handle.result(timeout=30)
    release.set()
    assert result.status is Status.CANCELLED
    with open_store() as store:
        deadline = time.monotonic() + 10
        children = [r for r in store.list_runs() if r.parent_id == result.run_id]
        while not children and time.monotonic() < deadline:
            time.sleep(0.1)
            children = [r for r in store.list_runs() if r.parent_id == result.run_id]
    assert [c.status for c in children] == [Status.CANCELLED]


def test_as_tool_config_replaces_the_childs_settings(tao_home: Path, tmp_path: Path) -> None:
    child_model = script(tmp_path, "child", ["Action: calculator[1+1]"] * 5)
    helper = Agent(child_model, ["calc"])
    tool = helper.as_tool("helper", "A helper.", config=RunConfig(model=None, max_steps=2))
    parent_model = script(tmp_path, "parent", ["Action: helper[go]", "Action: finish[ok]"])
    result = Agent(parent_model, [tool]).run("Use the helper.")
    with open_store() as store:
        child = store.get_run(result.steps[0].child_run or "")
    assert child.usage.model_calls == 2 and child.status is Status.MAX_STEPS


def test_the_parents_person_decides_the_childs_call_inline(tao_home: Path, tmp_path: Path) -> None:
    """Issue 31, item 2 (SPEC S3, S7): a child with no approver of its own asks the parent
    run's person, shown the child's call with the child's Thought; yes runs it once, the
    child finishes, its answer is the parent's observation, and neither run pauses."""
    target = tmp_path / "notes.txt"

    @tool(effects="writes")
    def save(text: str) -> str:
        """Save a note to a file."""
        with target.open("a") as file:
            file.write(text + "\n")
        return "saved"

    shown: list[tuple[str, object, str | None]] = []

    def ask(used: Tool, arguments: object, call: PendingCall) -> bool:
        shown.append((used.name, arguments, call.thought))
        return True

    child_model = script(tmp_path, "child", ["Thought: write it down.\nAction: save[hello]",
                                             "Action: finish[noted]"])  # fmt: skip
    writer = Agent(child_model, [save])
    parent_model = script(tmp_path, "parent", ["Action: write[Note hello.]",
                                               "Action: finish[done: noted]"])  # fmt: skip
    lead = Agent(parent_model, [writer.as_tool("write", "Ask the writer.")], approve=Person(ask))
    result = lead.run("Have the writer note hello.")

    assert (result.status, result.answer) == (Status.FINISHED, "done: noted")
    assert shown == [("save", {"text": "hello"}, "write it down.")]
    assert target.read_text() == "hello\n"  # once
    assert result.steps[0].observation == "noted"
    with open_store() as store:
        child = store.get_run(result.steps[0].child_run or "")
    assert (child.status, child.parent_id) == (Status.FINISHED, result.run_id)


def test_a_denial_by_the_parents_person_reaches_the_childs_model(
    tao_home: Path, tmp_path: Path
) -> None:
    """Issue 31, item 2 (SPEC S3): the person says no to the child's call; the child's model
    reads the refusal (its next reply is its own), the file is untouched, and the parent
    gets the child's answer, not an error."""
    target = tmp_path / "notes.txt"

    @tool(effects="writes")
    def save(text: str) -> str:
        """Save a note to a file."""
        target.write_text(text)
        return "saved"

    def ask(used: Tool, arguments: object, call: PendingCall) -> str:
        return "not today"

    child_model = script(tmp_path, "child", ["Thought: write it down.\nAction: save[hello]",
                                             "Action: finish[refused]"])  # fmt: skip
    writer = Agent(child_model, [save])
    parent_model = script(tmp_path, "parent", ["Action: write[Note hello.]",
                                               "Action: finish[writer refused]"])  # fmt: skip
    lead = Agent(parent_model, [writer.as_tool("write", "Ask the writer.")], approve=Person(ask))
    result = lead.run("Have the writer note hello.")

    assert (result.status, result.answer) == (Status.FINISHED, "writer refused")
    assert not target.exists()
    assert result.steps[0].observation == "refused"
    with open_store() as store:
        child = store.get_run(result.steps[0].child_run or "")
    assert child.status is Status.FINISHED
    assert "not today" in (child.steps[0].observation or "")
