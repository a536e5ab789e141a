"""Independent tests (the childpause helper's, written before main's implementation):
a child run (``Agent.as_tool``) that pauses for approval with nobody to ask inline
pauses its parent; the decision taken on the parent reaches exactly the child's call, and
resuming the parent resumes that child (issue 31; SPEC S3, S7, R1).

Real parts: replay scripts for both models, the SQLite run log in an isolated TAO_HOME, a
tool with a side effect on a real file, and the real ``tao`` command for the CLI's view and
its approval. Each "later" step builds its agents anew, as another process would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tao import Status
from tao.agent import Agent
from tao.models.replay import ReplayModel
from tao.state.config import call_digest
from tao.store.factory import open_store
from tao.tools.base import Tool, tool

CHILD = ["Thought: write it down.\nAction: save[hello]", "Action: finish[noted]"]
PARENT = ["Action: write[Note hello.]", "Action: finish[done: noted]"]


def script(tmp_path: Path, name: str, replies: list[str]) -> ReplayModel:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(replies))
    return ReplayModel(path)


def saver(target: Path) -> Tool:
    @tool(effects="writes")
    def save(text: str) -> str:
        """Save a note to a file."""
        with target.open("a") as file:
            file.write(text + "\n")
        return "saved"

    return save


def lead(
    tmp_path: Path, target: Path, child: list[str] = CHILD, parent: list[str] = PARENT
) -> Agent:
    """The parent agent and its writer child, made fresh (a new process would make them so);
    neither has an approver: nobody can be asked inline."""
    writer = Agent(script(tmp_path, "child", child), [saver(target)])
    return Agent(script(tmp_path, "parent", parent), [writer.as_tool("write", "Ask the writer.")])


def test_a_paused_child_pauses_the_parent_on_the_childs_call(
    tao_home: Path, tmp_path: Path
) -> None:
    """Issue 31 item 1 (SPEC S3): the parent ends awaiting_approval, and its pending call is
    the child's: its tool and arguments, bound to that call's digest (S7), naming the child
    run and the parent's calling step; nothing ran."""
    target = tmp_path / "notes.txt"
    paused = lead(tmp_path, target).run("Have the writer note hello.")

    assert paused.status is Status.AWAITING_APPROVAL
    (call,) = paused.pending or ()
    assert (call.tool, call.arguments) == ("save", {"text": "hello"})
    assert call.digest == call_digest("save", {"text": "hello"})
    assert (call.step, call.position) == (1, 0)  # the parent's step that called the child
    assert call.child is not None
    assert not target.exists()
    with open_store() as store:
        child = store.get_run(call.child.run_id)
        stored = store.get_run(paused.run_id)
        checkpoint = store.load_state(paused.run_id)
    assert (child.status, child.parent_id) == (Status.AWAITING_APPROVAL, paused.run_id)
    assert [p.id for p in child.pending or ()] == [call.child.call]
    assert stored.status is Status.AWAITING_APPROVAL
    assert checkpoint is not None and [p.child.run_id for p in checkpoint.pending if p.child] == [
        child.run_id
    ]


def test_approving_the_parent_runs_the_childs_call_once_and_the_parent_finishes(
    tao_home: Path, tmp_path: Path
) -> None:
    """Issue 31 item 2 (SPEC S3, R1): yes on the parent, then resuming it (agents made
    anew) resumes the same child run, which runs its call once and finishes; its answer is
    the parent's observation and its tokens count in the parent's usage."""
    target = tmp_path / "notes.txt"
    paused = lead(tmp_path, target).run("Have the writer note hello.")
    child = (paused.pending or ())[0].child
    child_id = child.run_id if child else None

    result = lead(tmp_path, target).resume(paused.run_id, approve=True)

    assert (result.status, result.answer) == (Status.FINISHED, "done: noted")
    assert target.read_text() == "hello\n"  # once
    assert result.steps[0].observation == "noted"
    assert result.steps[0].child_run == child_id  # the same child, not a new one
    with open_store() as store:
        child = store.get_run(child_id or "")
        runs = store.list_runs()
    assert (child.status, child.answer, child.parent_id) == (
        Status.FINISHED,
        "noted",
        result.run_id,
    )
    assert child.steps[0].observation == "saved"
    assert len(runs) == 2  # the parent and its one child
    assert result.usage.input_tokens >= child.usage.input_tokens > 0


def test_a_denial_on_the_parent_reaches_the_childs_model(tao_home: Path, tmp_path: Path) -> None:
    """Issue 31 item 2 (SPEC S3): no on the parent is the child's refusal, read by the
    child's model; the file is untouched and the parent finishes, not in error."""
    target = tmp_path / "notes.txt"
    child = ["Thought: write it down.\nAction: save[hello]", "Action: finish[refused]"]
    parent = ["Action: write[Note hello.]", "Action: finish[writer refused]"]
    paused = lead(tmp_path, target, child, parent).run("Have the writer note hello.")

    result = lead(tmp_path, target, child, parent).resume(paused.run_id, approve="not today")

    assert (result.status, result.answer) == (Status.FINISHED, "writer refused")
    assert not target.exists()
    assert result.steps[0].observation == "refused"
    with open_store() as store:
        child_run = store.get_run(result.steps[0].child_run or "")
    assert "not today" in (child_run.steps[0].observation or "")


def test_a_child_pausing_twice_pauses_the_parent_twice(tao_home: Path, tmp_path: Path) -> None:
    """Each of the child's calls is decided on its own (S7): after the first yes the child
    asks for its second call, so the parent pauses again on that one; the first ran once."""
    target = tmp_path / "notes.txt"
    child = ["Action: save[one]", "Action: save[two]", "Action: finish[both]"]
    parent = ["Action: write[Note two things.]", "Action: finish[done: both]"]
    first = lead(tmp_path, target, child, parent).run("Have the writer note two things.")
    assert [c.arguments for c in first.pending or ()] == [{"text": "one"}]

    second = lead(tmp_path, target, child, parent).resume(first.run_id, approve=True)
    assert second.status is Status.AWAITING_APPROVAL
    assert [c.arguments for c in second.pending or ()] == [{"text": "two"}]
    second_child, first_child = (second.pending or ())[0].child, (first.pending or ())[0].child
    assert second_child is not None and first_child is not None
    assert second_child.run_id == first_child.run_id
    assert target.read_text() == "one\n"

    result = lead(tmp_path, target, child, parent).resume(first.run_id, approve=True)
    assert (result.status, result.answer) == (Status.FINISHED, "done: both")
    assert target.read_text() == "one\ntwo\n"


def test_tao_runs_show_and_approve_name_the_childs_call(
    tao_home: Path, tmp_path: Path, tao_cli: Callable[..., Any]
) -> None:
    """Issue 31 items 1-2 through the real CLI: `tao runs show PARENT` names the child's
    call and run; `tao runs approve PARENT` approves exactly it, and the parent resumed
    from Python finishes with the call run once."""
    target = tmp_path / "notes.txt"
    paused = lead(tmp_path, target).run("Have the writer note hello.")
    child = (paused.pending or ())[0].child
    child_id = child.run_id if child else ""

    shown = tao_cli("runs", "show", paused.run_id)
    assert shown.returncode == 0, shown.stderr
    flat = " ".join(shown.stdout.split())  # rich wraps long lines
    assert "save(text='hello')" in flat
    assert f"child run {child_id}" in flat and "step 1" in flat

    approved = tao_cli("runs", "approve", paused.run_id)
    assert approved.returncode == 0, approved.stderr
    assert f"child run {child_id}" in " ".join(approved.stdout.split())
    assert not target.exists()

    result = lead(tmp_path, target).resume(paused.run_id)
    assert (result.status, result.answer) == (Status.FINISHED, "done: noted")
    assert target.read_text() == "hello\n"


def test_a_parent_resumed_after_an_interrupt_resumes_the_same_child(
    tao_home: Path, tmp_path: Path
) -> None:
    """Issue 31 item 3 (SPEC R2, R3): the parent is interrupted while its child works; the
    child is interrupted with it, and resuming the parent (agents made anew) goes on with
    that child run, where it stopped, rather than starting another."""
    started, release = threading.Event(), threading.Event()

    def slow_tool() -> Tool:
        @tool
        def lookup(query: str) -> str:
            """Look a fact up."""
            started.set()
            release.wait(30)
            return "forty-two"

        return lookup

    child = ["Action: lookup[6*7]", "Action: finish[42]"]
    parent = ["Action: research[What is 6 times 7?]", "Action: finish[The answer is 42]"]

    def make() -> Agent:
        researcher = Agent(script(tmp_path, "child", child), [slow_tool()])
        tools = [researcher.as_tool("research", "Ask the researcher.")]
        return Agent(script(tmp_path, "parent", parent), tools)

    handle = make().start("Find 6*7 through your researcher.")
    assert started.wait(30)
    handle.interrupt()
    stopped = handle.result(timeout=30)
    assert stopped.status is Status.INTERRUPTED
    with open_store() as store:
        (first,) = [r for r in store.list_runs() if r.parent_id == stopped.run_id]
    assert first.status is Status.INTERRUPTED

    release.set()
    result = make().resume(stopped.run_id)

    assert (result.status, result.answer) == (Status.FINISHED, "The answer is 42")
    assert result.steps[0].child_run == first.run_id
    with open_store() as store:
        runs = store.list_runs()
        again = store.get_run(first.run_id)
    assert len(runs) == 2
    assert (again.status, again.answer) == (Status.FINISHED, "42")


def test_tao_runs_show_says_a_child_is_a_child_not_a_follow_up(
    tao_home: Path, tmp_path: Path, tao_cli: Callable[..., Any]
) -> None:
    """Issue 31 item 4: `tao runs show CHILD` says "child of PARENT, step N", paused or
    finished (a follow-up's "continues PARENT" is tested with `tao run --continue`)."""
    target = tmp_path / "notes.txt"
    paused = lead(tmp_path, target).run("Have the writer note hello.")
    child = (paused.pending or ())[0].child
    child_id = child.run_id if child else ""

    shown = " ".join(tao_cli("runs", "show", child_id).stdout.split())
    assert f"child of {paused.run_id}, step 1" in shown and "continues" not in shown

    lead(tmp_path, target).resume(paused.run_id, approve=True)
    shown = " ".join(tao_cli("runs", "show", child_id).stdout.split())
    assert f"child of {paused.run_id}, step 1" in shown
