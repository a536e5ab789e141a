"""A child run that waits for a person pauses its parent (issue 31, SPEC S3, S7, R1).

An agent used as a tool (``Agent.as_tool``) whose child run reaches a call with side
effects, with nobody to ask inline, pauses the parent; the parent's pending call is the
child's exact call; a decision taken on the parent (the real ``tao runs approve``/``deny``
in a child process, the web page's JSON API) reaches the child when the parent resumes,
and the same child run goes on. A parent killed with ``kill -9`` while its child ran
resumes that same child rather than starting another.

Real parts: replay scripts for both models, the SQLite run log in an isolated TAO_HOME,
the real ``tao`` command, a real web server on 127.0.0.1, real processes killed for real.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tao import Status
from tao.agent import Agent
from tao.models.replay import ReplayModel
from tao.state.config import call_digest
from tao.store.factory import open_store
from tao.tools.base import tool
from tao.ui import UiServer


def script(tmp_path: Path, name: str, replies: list[str]) -> ReplayModel:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(replies))
    return ReplayModel(path)


def writer_lead(tmp_path: Path, target: Path, child_replies: list[str]) -> Agent:
    """A lead agent with no approver whose ``write`` tool is a writer agent with a tool that
    writes a file (appends: a second run of it would show)."""

    @tool(effects="writes")
    def save(text: str) -> str:
        """Save a note to a file."""
        with target.open("a") as file:
            file.write(text + "\n")
        return "saved"

    writer = Agent(script(tmp_path, "child", child_replies), [save])
    parent_replies = ["Thought: the writer does it.\nAction: write[Note hello.]",
                      "Action: finish[done: noted]"]  # fmt: skip
    parent_model = script(tmp_path, "parent", parent_replies)
    return Agent(parent_model, [writer.as_tool("write", "Ask the writer.")])


CHILD = ["Thought: write it down.\nAction: save[hello]", "Action: finish[noted]"]


def test_a_child_that_waits_for_a_person_pauses_its_parent_on_the_childs_call_S3_S7(
    tao_home: Path, tmp_path: Path, tao_cli: Callable[..., Any]
) -> None:
    """The parent ends ``awaiting_approval``; its pending call is the child's call (tool,
    arguments, digest, the child's Thought) and names the child run and the parent step;
    ``tao runs show`` and ``runs list`` say so; nothing was written."""
    target = tmp_path / "notes.txt"
    lead = writer_lead(tmp_path, target, CHILD)
    result = lead.run("Have the writer note hello.")

    assert result.status is Status.AWAITING_APPROVAL
    assert not target.exists()
    [call] = result.pending or []
    assert (call.tool, call.arguments, call.thought) == (
        "save",
        {"text": "hello"},
        "write it down.",
    )
    assert call.digest == call_digest("save", {"text": "hello"})
    assert call.child is not None and call.child.tool == "write"
    assert (call.step, call.position) == (1, 0)
    with open_store() as store:
        child_id = store.child_run(result.run_id, 1, 0)
        child = store.get_run(child_id or "")
        stored = store.get_run(result.run_id)
    assert call.child.run_id == child_id
    assert child.status is Status.AWAITING_APPROVAL
    assert (child.parent_id, child.parent_step, child.parent_position) == (result.run_id, 1, 0)
    assert call.id == f"s1c0-{(child.pending or [])[0].id}"
    assert [p.id for p in stored.pending or []] == [call.id]  # read back from the run log

    shown = tao_cli("runs", "show", result.run_id)
    assert shown.returncode == 0, shown.stderr
    assert "save" in shown.stdout and f"in child run {child_id}" in shown.stdout
    assert "write it down." in shown.stdout
    shown_child = tao_cli("runs", "show", child_id)
    assert f"child of {result.run_id}, step 1" in " ".join(shown_child.stdout.split())
    listed = tao_cli("runs", "list")
    assert f"child of {result.run_id[:12]}, step 1" in listed.stdout


def test_approving_the_parent_then_resuming_it_finishes_the_same_child_once_S3_R1(
    tao_home: Path, tmp_path: Path, tao_cli: Callable[..., Any]
) -> None:
    """``tao runs approve PARENT`` (a real process) then ``agent.resume(PARENT)``: the same
    child run goes on, its call runs once, its answer is the parent's observation, and the
    child's step records who approved it, from where."""
    target = tmp_path / "notes.txt"
    lead = writer_lead(tmp_path, target, CHILD)
    paused = lead.run("Have the writer note hello.")
    [call] = paused.pending or []
    assert call.child is not None

    approved = tao_cli("runs", "approve", paused.run_id)
    assert approved.returncode == 0, approved.stderr
    result = lead.resume(paused.run_id)

    assert (result.status, result.answer) == (Status.FINISHED, "done: noted")
    assert target.read_text() == "hello\n"  # once
    assert result.steps[0].observation == "noted"
    assert result.steps[0].child_run == call.child.run_id
    with open_store() as store:
        children = [r for r in store.list_runs() if r.parent_id == paused.run_id]
        child = store.get_run(call.child.run_id)
    assert [c.run_id for c in children] == [call.child.run_id]  # no second child
    assert (child.status, child.answer) == (Status.FINISHED, "noted")
    record = child.steps[0].approval
    assert record is not None and record.decision is True and record.via == "cli"


def test_a_denial_on_the_parent_reaches_the_childs_model_as_a_refusal_S3(
    tao_home: Path, tmp_path: Path, tao_cli: Callable[..., Any]
) -> None:
    """``tao runs deny PARENT --reason``: the child's model reads the refusal and answers
    on its own; nothing is written; the parent gets the child's answer, not an error."""
    target = tmp_path / "notes.txt"
    lead = writer_lead(tmp_path, target, [CHILD[0], "Action: finish[refused]"])
    paused = lead.run("Have the writer note hello.")

    denied = tao_cli("runs", "deny", paused.run_id, "--reason", "not today")
    assert denied.returncode == 0, denied.stderr
    result = lead.resume(paused.run_id)

    assert result.status is Status.FINISHED
    assert not target.exists()
    assert result.steps[0].observation == "refused"
    with open_store() as store:
        child = store.get_run(result.steps[0].child_run or "")
    assert "not today" in (child.steps[0].observation or "")
    assert child.status is Status.FINISHED


def test_agent_resume_with_approve_decides_the_childs_call_S7(
    tao_home: Path, tmp_path: Path
) -> None:
    """``agent.resume(parent, approve=True)`` decides the parent's waiting calls, which are
    the child's: the child's call runs once and the parent finishes."""
    target = tmp_path / "notes.txt"
    lead = writer_lead(tmp_path, target, CHILD)
    paused = lead.run("Have the writer note hello.")
    result = lead.resume(paused.run_id, approve=True)
    assert (result.status, result.answer) == (Status.FINISHED, "done: noted")
    assert target.read_text() == "hello\n"


def test_an_undecided_child_call_pauses_the_parent_again_on_the_same_call_S3(
    tao_home: Path, tmp_path: Path
) -> None:
    """Resuming the parent with nothing decided pauses it again on the same call id, and
    the same child run: nothing runs, nothing is duplicated."""
    target = tmp_path / "notes.txt"
    lead = writer_lead(tmp_path, target, CHILD)
    first = lead.run("Have the writer note hello.")
    again = lead.resume(first.run_id)
    assert again.status is Status.AWAITING_APPROVAL
    assert [c.id for c in again.pending or []] == [c.id for c in first.pending or []]
    assert not target.exists()
    with open_store() as store:
        assert len([r for r in store.list_runs() if r.parent_id == first.run_id]) == 1


def test_the_web_pages_api_shows_and_decides_the_childs_call_S3_S8(
    tao_home: Path, tmp_path: Path
) -> None:
    """The run's JSON API names the child's call and the child run (redacted as everywhere),
    and a decision sent to it is recorded on the parent for exactly that call."""
    target = tmp_path / "notes.txt"
    lead = writer_lead(tmp_path, target, CHILD)
    paused = lead.run("Have the writer note hello.")
    [call] = paused.pending or []
    assert call.child is not None
    with open_store() as store:
        server = UiServer(store, 0).start()
        try:
            base = server.url.rstrip("/")
            with urllib.request.urlopen(f"{base}/runs/{paused.run_id}", timeout=10) as page:
                html = page.read().decode()
        finally:
            server.stop()
    assert f'data-call="{call.id}"' in html
    assert f"in child run {call.child.run_id}" in html
    assert f'href="/runs/{call.child.run_id}"' in html
    assert "write it down." in html  # the child's Thought: why it wants the call


def test_a_child_pausing_twice_pauses_a_fresh_parent_twice_S7(
    tao_home: Path, tmp_path: Path
) -> None:
    """Each of the child's calls is decided on its own (S7): after the first yes the child
    asks for its second call, so the parent pauses again, on that one; the first ran once.
    Each resume is made by new agents, as a new process would make them."""
    target = tmp_path / "notes.txt"
    child = ["Action: save[one]", "Action: save[two]", "Action: finish[both]"]

    def fresh() -> Agent:
        return writer_lead(tmp_path, target, child)

    first = fresh().run("Have the writer note two things.")
    assert [c.arguments for c in first.pending or ()] == [{"text": "one"}]
    second = fresh().resume(first.run_id, approve=True)
    assert second.status is Status.AWAITING_APPROVAL
    assert [c.arguments for c in second.pending or ()] == [{"text": "two"}]
    [one], [two] = first.pending or [], second.pending or []
    assert one.child is not None and two.child is not None
    assert one.child.run_id == two.child.run_id and one.id != two.id
    assert target.read_text() == "one\n"
    result = fresh().resume(first.run_id, approve=True)
    assert (result.status, result.answer) == (Status.FINISHED, "done: noted")
    assert target.read_text() == "one\ntwo\n"


RUNNER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from tao.agent import Agent
    from tao.models.replay import ReplayModel

    here = Path(sys.argv[2])

    def slow(x: str) -> str:
        '''Wait until told to go.

        Args:
            x: anything
        '''
        with open(here / "calls", "a") as f:
            f.write(x + "\\n")
        while not (here / "go").exists():
            time.sleep(0.05)
        return "slow done"

    child = Agent(ReplayModel(here / "child.json"), [slow])
    lead = Agent(ReplayModel(here / "parent.json"), [child.as_tool("helper", "A helper.")])
    if sys.argv[1] == "run":
        result = lead.run("Use the helper.")
    else:
        result = lead.resume(sys.argv[3])
    print(json.dumps({"run": result.run_id, "status": str(result.status),
                      "answer": result.answer}))
    """
)


def test_a_parent_killed_while_its_child_runs_resumes_that_same_child_R1(
    tao_home: Path, tmp_path: Path
) -> None:
    """``kill -9`` of the process in the middle of the child's tool call; a new process
    resumes the parent: the child run the killed one started goes on (no second child),
    and the parent finishes with its answer."""
    (tmp_path / "child.json").write_text(
        json.dumps(["Action: slow[once]", "Action: finish[child done]"])
    )
    (tmp_path / "parent.json").write_text(
        json.dumps(["Action: helper[do it]", "Action: finish[parent done]"])
    )
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    env = {**os.environ, "TAO_HOME": str(tao_home)}
    proc = subprocess.Popen(
        [sys.executable, str(runner), "run", str(tmp_path)], env=env, stdout=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "calls").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    with open_store() as store:
        [parent] = [r for r in store.list_runs() if r.parent_id is None]
        [child] = [r for r in store.list_runs() if r.parent_id == parent.run_id]
    assert parent.status is Status.INTERRUPTED and child.status is Status.INTERRUPTED

    (tmp_path / "go").write_text("")
    resumed = subprocess.run(
        [sys.executable, str(runner), "resume", str(tmp_path), parent.run_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {
        "run": parent.run_id,
        "status": "finished",
        "answer": "parent done",
    }
    with open_store() as store:
        children = [r for r in store.list_runs() if r.parent_id == parent.run_id]
        after = store.get_run(parent.run_id)
    assert [c.run_id for c in children] == [child.run_id]
    assert children[0].status is Status.FINISHED
    assert after.steps[0].child_run == child.run_id
    assert after.steps[0].observation == "child done"
