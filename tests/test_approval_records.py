"""Every decision on a call is recorded: who, when, from where, and why (SPEC S3, M3; issue 30).

The record is on the step that ran (or refused) the call, so ``tao runs show``, ``tao runs
export``, ``--json`` and the web page show it for good; while a run waits, it sits in the
checkpoint. Who is the OS user (``LOGNAME``/``USER``, as :func:`getpass.getuser` reads
them), so each test names a person no machine is logged in as.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.terminal import Terminal, terminal_env

from tao import Agent, Status, tool
from tao.approval.decide import approve_run, pending_calls
from tao.approval.policy import Policy, Rule
from tao.run.act import Person
from tao.state.config import Approval, Checkpoint, PendingCall
from tao.state.result import Step, StepKind
from tao.store.factory import open_store
from tao.store.schema import SCHEMA_VERSION

Replay = Callable[[list[str]], Path]
WRITE = 'Thought: keep it.\nAction: write_file(path="notes.txt", content="hello\\n")'
DONE = "Thought: done.\nAction: finish[written]"


def _as(person: str) -> dict[str, str]:
    """The environment of a shell where ``person`` is logged in."""
    return {"LOGNAME": person, "USER": person, "LNAME": person, "USERNAME": person}


def _paused(tao_cli: Any, replay: Replay, project: Path) -> str:
    script = replay([WRITE, DONE])
    out = tao_cli("run", "write notes", "--model", f"replay:{script}", "--tools", "write",
                  "--project", str(project), "--no-input", "--json")  # fmt: skip
    assert out.returncode == 4, out.stderr
    return str(out.json()["run_id"])


def test_cli_approval_is_recorded_and_shown_by_runs_show_and_export_S3_M3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    """approve by one person, resume by another: the approver is who the log names."""
    before = time.time()
    run_id = _paused(tao_cli, replay, tmp_path)
    assert tao_cli("runs", "approve", run_id, env=_as("ada-approver")).returncode == 0
    waiting = tao_cli("runs", "show", run_id, env=_as("someone-else"))
    assert "approved by ada-approver via cli at " in waiting.stdout  # before the resume
    resumed = tao_cli("resume", run_id, "--json", env=_as("bob-resumer"))
    assert resumed.returncode == 0, resumed.stderr
    record = resumed.json()["steps"][0]["approval"]
    assert record["approved"] is True and record["reason"] is None
    assert (record["by"], record["via"]) == ("ada-approver", "cli")
    assert before <= record["at"] <= time.time()

    shown = tao_cli("runs", "show", run_id).stdout
    assert "approved by ada-approver via cli at " in shown
    assert "bob-resumer" not in shown
    lines = [json.loads(line) for line in tao_cli("runs", "export", run_id).stdout.splitlines()]
    steps = [line for line in lines if line["type"] == "step"]
    assert steps[0]["approval"] == record
    assert steps[1]["approval"] is None  # the answer needed nobody's yes
    assert (
        json.loads(tao_cli("runs", "show", run_id, "--json").stdout)["steps"][0]["approval"]
        == record
    )


def test_a_denial_records_its_reason_and_the_person_S3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    run_id = _paused(tao_cli, replay, tmp_path)
    denied = tao_cli("runs", "deny", run_id, "--reason", "not on a Friday", env=_as("cy-denier"))
    assert denied.returncode == 0, denied.stderr
    exported = tao_cli("runs", "export", run_id).stdout.splitlines()
    (record,) = json.loads(exported[0])["decisions"].values()  # waiting: on the run line
    assert (record["approved"], record["by"], record["via"], record["reason"]) == (
        False, "cy-denier", "cli", "not on a Friday",
    )  # fmt: skip
    tao_cli("resume", run_id, "--json")
    shown = tao_cli("runs", "show", run_id).stdout
    assert "denied by cy-denier via cli at " in shown and ": not on a Friday" in shown
    assert not (tmp_path / "notes.txt").exists()


def test_an_approval_records_its_reason_too_S3_M3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    """``tao runs approve --reason``: why a call was allowed is part of the record (issue 30:
    who, when, from where, and the reason), in runs show, export and --json alike."""
    run_id = _paused(tao_cli, replay, tmp_path)
    why = "the weekly report needs it"
    approved = tao_cli("runs", "approve", run_id, "--reason", f"  {why} ", env=_as("di-approver"))
    assert approved.returncode == 0, approved.stderr
    resumed = tao_cli("resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    record = resumed.json()["steps"][0]["approval"]
    assert (record["approved"], record["by"], record["via"], record["reason"]) == (
        True, "di-approver", "cli", why,
    )  # fmt: skip
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "hello\n"  # it still ran
    shown = tao_cli("runs", "show", run_id).stdout
    assert "approved by di-approver via cli at " in shown and f": {why}" in shown
    exported = [json.loads(line) for line in tao_cli("runs", "export", run_id).stdout.splitlines()]
    assert exported[1]["approval"] == record


def test_the_terminal_prompt_records_who_answered_it_S3(
    tmp_path: Path, tao_home: Path, replay: Replay, tao_cli: Any
) -> None:
    script = replay([WRITE, DONE])
    args = [sys.executable, "-m", "tao", "run", "keep notes", "--model", f"replay:{script}",
            "--tools", "write", "--project", str(tmp_path)]  # fmt: skip
    env = terminal_env({**os.environ, "TAO_HOME": str(tao_home), **_as("dee-at-the-prompt")})
    with Terminal(args, env=env) as term:
        term.wait_for(lambda s: "Allow it?" in s)
        os.write(term.master, b"y\n")
        assert term.finish() == 0
    listed = json.loads(tao_cli("runs", "list", "--json").stdout)
    run = json.loads(tao_cli("runs", "show", listed[0]["run_id"], "--json").stdout)
    record = run["steps"][0]["approval"]
    assert (record["approved"], record["by"], record["via"]) == (True, "dee-at-the-prompt", "cli")


written: list[str] = []


@tool(effects="writes")
def save(name: str) -> str:
    """Save a note."""
    written.append(name)
    return f"saved {name}"


def test_a_policy_rule_python_approver_and_resume_each_say_so(replay: Replay) -> None:
    """The rule that allowed a call is named; code that approved says it was code."""
    script = ["Action: save[a.txt]", "Action: finish[ok]"]
    policy = Policy((Rule("save", {"name": "*.txt"}),))
    ruled = Agent(f"replay:{replay(script)}", [save], record=False, policy=policy).run("x")
    record = ruled.steps[0].approval
    assert record is not None and (record.approved, record.via) == (True, "policy")
    assert record.reason == "rule: save name=*.txt"

    coded = Agent(f"replay:{replay(script)}", [save], record=False, policy=Policy(),
                  approve=lambda t, a: "no saving today").run("x")  # fmt: skip
    record = coded.steps[0].approval
    assert record is not None and (record.approved, record.via) == (False, "python")
    assert record.reason == "no saving today"

    person = Person(lambda t, a, call: True, via="web", by="eve-in-a-form")
    asked = Agent(f"replay:{replay(script)}", [save], record=False, policy=Policy(),
                  approve=person).run("x")  # fmt: skip
    assert asked.steps[0].approval is not None
    assert (asked.steps[0].approval.by, asked.steps[0].approval.via) == ("eve-in-a-form", "web")

    agent = Agent(f"replay:{replay(script)}", [save], record=False, policy=Policy())
    done = agent.resume(agent.run("x"), approve=True)
    record = done.steps[0].approval
    assert record is not None and (record.approved, record.via) == (True, "python")


def test_approve_run_names_the_person_and_place_it_is_given(replay: Replay) -> None:
    script = ["Action: save[b.txt]", "Action: finish[ok]"]
    with open_store() as store:
        agent = Agent(f"replay:{replay(script)}", [save], record=store, policy=Policy())
        paused = agent.run("x")
        approve_run(paused.run_id, store=store, via="api", by="ci-token")
        (waiting,) = pending_calls(paused.run_id, store=store)
        assert waiting.decision is True
        assert waiting.approval is not None
        assert (waiting.approval.by, waiting.approval.via) == ("ci-token", "api")
        done = agent.resume(paused.run_id)
        assert done.status is Status.FINISHED
        stored = store.get_run(paused.run_id).steps[0].approval
    assert stored is not None and (stored.by, stored.via, stored.approved) == (
        "ci-token", "api", True,
    )  # fmt: skip


def test_records_read_back_from_json_and_old_checkpoints_have_none() -> None:
    record = Approval(approved=False, by="fay", via="web", at=1_700_000_000.0, reason="no")
    assert Approval.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert record.decision == "no"
    assert record.describe() == "denied by fay via web at 2023-11-14 22:13:20 UTC: no"
    call = PendingCall(step=1, position=0, tool="save", arguments={"name": "a"})
    checkpoint = Checkpoint(step=1, pending=(call,), decisions={call.id: "no"},
                            approvals={call.id: record})  # fmt: skip
    assert Checkpoint.from_json(json.loads(json.dumps(checkpoint.to_json()))) == checkpoint
    old = checkpoint.to_json()
    del old["approvals"]
    # written before records existed (the key is simply absent): the decision still stands
    loaded = Checkpoint.from_json(old)
    assert loaded.decisions == {call.id: "no"} and loaded.approvals == {}
    step = Step(index=1, kind=StepKind.ACTION, tool="save", approval=record)
    assert Step.from_json(json.loads(json.dumps(step.to_json()))) == step
    legacy = step.to_json()
    del legacy["approval"]
    assert Step.from_json(legacy).approval is None


def test_a_v9_run_log_gains_the_column_and_its_paused_run_resumes(
    tao_cli: Any, replay: Replay, tmp_path: Path, tao_home: Path
) -> None:
    """A log written before v10 (no ``steps.approval``) migrates, and its run resumes."""
    run_id = _paused(tao_cli, replay, tmp_path)
    db = sqlite3.connect(tao_home / "tao.db")
    db.execute("ALTER TABLE steps DROP COLUMN approval")
    later = ("model", "model_failures", "child_run", "child_input_tokens",
             "child_output_tokens", "child_cost_usd")  # v11's (issue 31)  # fmt: skip
    for column in later:
        db.execute(f"ALTER TABLE steps DROP COLUMN {column}")
    db.execute("ALTER TABLE steps RENAME COLUMN unparsed TO argument")  # v12's (issue 30)
    db.execute("DROP INDEX runs_parent")  # v13's (issue 31), on the columns below
    for column in ("parent_step", "parent_position"):  # v13's (issue 31)
        db.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    db.execute("PRAGMA user_version = 9")
    db.commit()
    db.close()
    assert tao_cli("runs", "approve", run_id, env=_as("gil")).returncode == 0
    resumed = tao_cli("resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.json()["steps"][0]["approval"]["by"] == "gil"
    version = sqlite3.connect(tao_home / "tao.db").execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION
