"""Approval of side effects that survives restarts (SPEC S3, M3; issue 5).

Pausing, approving, denying and resuming happen in separate real processes,
as they would for a person who answers hours later.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao import Agent, Status, TaoError, tool
from tao.approval.policy import Policy, PolicyError, Rule
from tao.state.config import call_digest
from tao.tools.registry import resolve_tools

Replay = Callable[[list[str]], Path]

deleted: list[str] = []


@tool(effects="deletes")
def delete_log(path: str) -> str:
    """Delete a log file."""
    deleted.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    deleted.clear()


SCRIPT = ["Thought: clean up.\nAction: delete_log[old.log]", "Action: finish[cleaned]"]


def test_without_a_person_the_run_pauses_and_resumes_on_approval_S3(replay: Replay) -> None:
    agent = Agent(f"replay:{replay(SCRIPT)}", [delete_log], record=False, policy=Policy())
    paused = agent.run("clean up")
    assert paused.status is Status.AWAITING_APPROVAL
    assert deleted == []
    assert paused.pending is not None
    assert [p.to_json() for p in paused.pending] == [
        {
            "id": paused.pending[0].id,
            "digest": call_digest("delete_log", {"path": "old.log"}),
            "step": 1,
            "position": 0,
            "tool": "delete_log",
            "arguments": {"path": "old.log"},
            "effects": ["deletes"],
            "preview": None,
            "interrupted": False,
            "thought": "clean up.",  # why the model wants it, read before deciding
        }
    ]
    done = agent.resume(paused, approve=True)
    assert (done.status, done.answer) == (Status.FINISHED, "cleaned")
    assert deleted == ["old.log"]
    assert [s.observation for s in done.steps] == ["deleted old.log", None]
    assert done.steps[0].thought == "clean up."


def test_a_denied_call_becomes_an_observation_and_the_model_goes_on_S3(replay: Replay) -> None:
    agent = Agent(f"replay:{replay(SCRIPT)}", [delete_log], record=False, policy=Policy())
    done = agent.resume(agent.run("clean up"), approve="those logs are evidence")
    assert deleted == []
    assert done.steps[0].observation == (
        "Error: a person denied delete_log (deletes): those logs are evidence. It was not run."
    )
    assert done.status is Status.FINISHED


def test_an_interactive_approver_decides_on_the_exact_call(replay: Replay) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def approve(t: Any, arguments: dict[str, Any]) -> bool:
        seen.append((t.name, arguments))
        return True

    result = Agent(
        f"replay:{replay(SCRIPT)}", [delete_log], approve=approve, record=False, policy=Policy()
    ).run("clean up")
    assert seen == [("delete_log", {"path": "old.log"})]
    assert deleted == ["old.log"] and result.status is Status.FINISHED


def test_a_policy_rule_pre_approves_matching_calls_only_S3(replay: Replay) -> None:
    policy = Policy((Rule("delete_log", {"path": "*.log"}),))
    ok = Agent(f"replay:{replay(SCRIPT)}", [delete_log], record=False, policy=policy).run("x")
    assert ok.status is Status.FINISHED and deleted == ["old.log"]
    other = replay(["Action: delete_log[notes.txt]", "Action: finish[x]"])
    paused = Agent(f"replay:{other}", [delete_log], record=False, policy=policy).run("x")
    assert paused.status is Status.AWAITING_APPROVAL and deleted == ["old.log"]


def test_policy_files_are_read_strictly(tmp_path: Path) -> None:
    good = tmp_path / "policy.toml"
    good.write_text('[[allow]]\ntool = "write_file"\npath = "out/**"\n')
    policy = Policy.load(good)
    (write_file,) = [
        t for t in resolve_tools(["write"], project=tmp_path) if t.name == "write_file"
    ]
    assert policy.allows(write_file, {"path": "out/a/b.txt", "content": "x"})
    assert not policy.allows(write_file, {"path": "src/a.py", "content": "x"})
    bad = tmp_path / "bad.toml"
    bad.write_text('[[allow]]\npath = "out/**"\n')
    with pytest.raises(PolicyError, match="rule 1 needs tool"):
        Policy.load(bad)
    with pytest.raises(PolicyError, match="not found"):
        Policy.load(tmp_path / "missing.toml")


def test_a_finished_run_cannot_be_resumed(replay: Replay) -> None:
    agent = Agent(f"replay:{replay(['Action: finish[x]'])}", record=False)
    with pytest.raises(TaoError, match="cannot be resumed"):
        agent.resume(agent.run("x"), approve=True)


# -- across processes, through the CLI ---------------------------------------------------------


def _run_paused(tao_cli: Any, replay: Replay, project: Path, content: str = "hello\n") -> str:
    script = replay(
        [
            f'Thought: write it.\nAction: write_file(path="notes.txt", content={content!r})',
            "Thought: done.\nAction: finish[written]",
        ]
    )
    out = tao_cli(
        "run",
        "write notes",
        "--model",
        f"replay:{script}",
        "--tools",
        "write",
        "--project",
        str(project),
        "--no-input",
        "--json",
    )
    assert out.returncode == 4, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "awaiting_approval"
    assert not (project / "notes.txt").exists()
    return str(data["run_id"])


def test_pause_approve_resume_in_separate_processes_S3_M3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    run_id = _run_paused(tao_cli, replay, project)
    shown = json.loads(tao_cli("runs", "show", run_id, "--json").stdout)
    assert shown["status"] == "awaiting_approval"
    assert "+hello" in shown["pending"][0]["preview"]  # the person sees the diff
    approved = tao_cli("runs", "approve", run_id[:12])
    assert approved.returncode == 0, approved.stderr
    assert "write_file(path='notes.txt'" in approved.stdout
    resumed = tao_cli("resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    assert (data["status"], data["answer"]) == ("finished", "written")
    assert (project / "notes.txt").read_text() == "hello\n"
    assert [s["observation"] for s in data["steps"]] == ["created notes.txt (6 characters)", None]
    again = tao_cli("resume", run_id, "--json")
    assert again.returncode == 1 and "cannot be resumed" in again.stderr


def test_deny_with_a_reason_through_the_cli_S3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    run_id = _run_paused(tao_cli, replay, project)
    assert tao_cli("runs", "deny", run_id, "--reason", "not today").returncode == 0
    data = json.loads(tao_cli("resume", run_id, "--json").stdout)
    assert data["steps"][0]["observation"] == (
        "Error: a person denied write_file (writes): not today. It was not run."
    )
    assert not (project / "notes.txt").exists()
    assert data["status"] == "finished"


def test_approving_a_run_that_does_not_wait_is_a_clear_error(tao_cli: Any, replay: Replay) -> None:
    out = tao_cli("run", "x", "--model", f"replay:{replay(['Action: finish[x]'])}", "--json")
    run_id = json.loads(out.stdout)["run_id"]
    refused = tao_cli("runs", "approve", run_id)
    assert refused.returncode == 1
    assert "is not waiting for approval (status: finished)" in refused.stderr
    assert "Traceback" not in refused.stderr


KILLABLE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tao import Agent, tool

    log = Path(sys.argv[2])

    @tool(effects="sends")
    def send_invoice(customer: str) -> str:
        \"\"\"Send an invoice.\"\"\"
        with log.open("a") as handle:
            handle.write(customer + "\\n")
        if len(log.read_text().splitlines()) == 1:
            time.sleep(60)  # the first time, the process is killed here
        return "sent to " + customer

    agent = Agent("replay:" + sys.argv[1], [send_invoice], approve=lambda t, a: True)
    if len(sys.argv) > 3:
        result = agent.resume(sys.argv[3])
    else:
        result = agent.run("invoice ACME")
    print(result.run_id, result.status, result.answer)
    print([s.observation for s in result.steps])
    """
)


def test_sigkill_during_a_side_effect_puts_it_to_a_person_never_runs_it_twice_S3_R1(
    replay: Replay, tmp_path: Path, tao_home: Path, tao_cli: Any
) -> None:
    """R1: killed while the invoice was being sent, the run does not send it again on resume,
    even with an approver that says yes to everything: it waits for a person, who is told the
    invoice may have gone out; denied, the model hears the same."""
    script = replay(["Action: send_invoice[ACME]", "Action: finish[invoiced]"])
    program, log = tmp_path / "agent.py", tmp_path / "sent.log"
    program.write_text(KILLABLE)
    env = {**os.environ, "TAO_HOME": str(tao_home)}
    child = subprocess.Popen(
        [sys.executable, str(program), str(script), str(log)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    listing = subprocess.run(
        [sys.executable, "-m", "tao", "runs", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    (run,) = json.loads(listing.stdout)
    assert run["status"] == "interrupted"

    def resume() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(program), str(script), str(log), run["run_id"]]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    paused = resume()  # the approver says yes to everything: it is not asked
    assert paused.returncode == 0, paused.stderr
    assert "awaiting_approval" in paused.stdout
    assert log.read_text() == "ACME\n"  # sent once, not twice
    shown = tao_cli("runs", "show", run["run_id"], "--json").json()
    (call,) = shown["pending"]
    assert (call["tool"], call["arguments"], call["interrupted"]) == (
        "send_invoice",
        {"customer": "ACME"},
        True,
    )
    told = tao_cli("runs", "show", run["run_id"]).stdout
    assert "was running when the process stopped; it may have taken effect" in told
    assert tao_cli("runs", "deny", run["run_id"], "--reason", "it went out").returncode == 0
    resumed = resume()
    assert resumed.returncode == 0, resumed.stderr
    assert "finished invoiced" in resumed.stdout
    assert log.read_text() == "ACME\n"
    assert (
        "send_invoice was running when the run stopped, and it may have taken effect; a person "
        "chose not to run it again: it went out. Check before retrying."
    ) in resumed.stdout


# -- a run log written by tao 0.1 resumes (issue 11) --------------------------------------------

OLD_LOG = Path(__file__).parent / "store" / "data" / "main-0.1.db"
OLD_WRITE = [
    'Thought: write it.\nAction: write_file(path="notes.txt", content="hello\\n")',
    "Thought: done.\nAction: finish[written]",
]


def test_a_run_paused_by_tao_0_1_resumes_and_runs_its_stored_call(
    tmp_path: Path, tao_home: Path, tao_cli: Any
) -> None:
    """The old checkpoint (decision keyed by position) resumes through `tao resume`."""
    import shutil
    import sqlite3

    tao_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OLD_LOG, tao_home / "tao.db")
    conn = sqlite3.connect(tao_home / "tao.db")
    (run_id, config) = conn.execute(
        "SELECT id, config FROM runs WHERE task = 'write approved notes'"
    ).fetchone()
    conn.close()
    project = Path(json.loads(config)["project"])  # a temp folder of the old run, long gone
    project.mkdir(parents=True)
    try:
        (tmp_path / "replies-3.json").write_text(json.dumps(OLD_WRITE))
        listed = tao_cli("runs", "list", "--json", cwd=tmp_path)
        assert run_id in listed.stdout
        resumed = tao_cli("resume", run_id, "--json", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        data = json.loads(resumed.stdout)
        assert (data["status"], data["answer"]) == ("finished", "written")
        assert (project / "notes.txt").read_text() == "hello\n"
    finally:
        shutil.rmtree(project.parent, ignore_errors=True)
