"""The journal of side effects (SPEC R1, S3; issue 14 item 1).

A call with side effects is journaled before it runs and right after. These tests kill a
real process at the two points that matter, with SIGKILL (nothing gets to clean up):

- after the effect, once its completion is journaled but before its step is stored:
  resume takes the journaled outcome, and neither runs the call again nor asks again;
- at other writes (at the one transaction that stores a turn's steps with the checkpoint
  ending it, at the last one, which stores the answer with the run's end): nothing is
  lost or counted twice; before the first (the run's row with its first checkpoint),
  nothing was recorded and nothing ran;
- during the effect: resume puts the call to a person, marked as possibly done; neither
  a policy rule nor an automatic approver may say yes to it, a person (``Person``) may.
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

import pytest

from tao.store.factory import open_store

Replay = Callable[[list[str]], Path]

PROGRAM = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from pathlib import Path
    from tao import Agent, tool
    from tao.run.act import Person
    from tao.approval.policy import Policy, Rule
    from tao.store import Store, open_store

    script, folder = sys.argv[1], Path(sys.argv[2])
    sent, asked = folder / "sent.log", folder / "asked.log"
    crash, approver = os.environ.get("CRASH"), os.environ.get("APPROVER", "auto")

    @tool(effects="sends")
    def send_invoice(customer: str) -> str:
        \"\"\"Send an invoice.\"\"\"
        with sent.open("a") as handle:
            handle.write(customer + "\\n")
        if crash == "effect":
            time.sleep(60)  # killed here, the effect done and not yet recorded
        return "sent to " + customer

    def dies_before(name, when):  # SIGKILL at an exact point of the run log's writes
        real = getattr(Store, name)

        def write(self, *args, **options):
            if when(*args, **options):
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, *args, **options)

        setattr(Store, name, write)

    def invoice(steps):
        return any(s.tool == "send_invoice" for s in steps or ())

    if crash == "record":  # the effect's completion journaled, its step not yet stored
        dies_before("save_progress", lambda result, steps, cp, **o: invoice(steps))
        dies_before("finish_run", lambda result, config, **o: invoice(o.get("steps")))
    elif crash == "start":  # the run's first write: its row with its first checkpoint
        dies_before("save_progress", lambda result, steps, cp, **o: True)
    elif crash == "turn":  # the write of the invoice's step with the checkpoint ending its turn
        dies_before("save_progress", lambda result, steps, cp, **o: cp is not None
            and cp.step is None and len(cp.messages) > 2)
    elif crash == "end":  # the last write: the answer, with the run marked finished
        dies_before("finish_run", lambda result, config, **o: True)

    def automatic(tool, arguments):
        with asked.open("a") as handle:
            handle.write("auto\\n")
        return True

    def person(tool, arguments, call):
        with asked.open("a") as handle:
            handle.write(json.dumps({"id": call.id, "interrupted": call.interrupted}) + "\\n")
        return True

    rules = Policy((Rule("send_invoice"),)) if os.environ.get("POLICY") else Policy()
    approve = Person(person) if approver == "person" else automatic
    agent = Agent("replay:" + script, [send_invoice], approve=approve, policy=rules)
    if crash == "turn":  # a model slower than the group commit: the turn is written alone
        complete = agent.model.complete

        def slowly(request, on_text=None):
            time.sleep(0.3)
            return complete(request, on_text)

        agent.model.complete = slowly
    result = agent.resume(sys.argv[3]) if len(sys.argv) > 3 else agent.run("invoice ACME")
    print(json.dumps(result.to_json()))
    """
)

SCRIPT = ["Thought: bill them.\nAction: send_invoice[ACME]", "Action: finish[invoiced]"]


class Program:
    """The agent above, started, killed and resumed as separate real processes."""

    def __init__(self, tmp_path: Path, tao_home: Path, replay: Replay) -> None:
        self.folder, self.script = tmp_path, replay(SCRIPT)
        self.path = tmp_path / "agent.py"
        self.path.write_text(PROGRAM)
        self.env = {**os.environ, "TAO_HOME": str(tao_home)}

    def start(self, **env: str) -> subprocess.Popen[str]:
        command = [sys.executable, str(self.path), str(self.script), str(self.folder)]
        return subprocess.Popen(command, env={**self.env, **env}, stdout=subprocess.PIPE, text=True)

    def resume(self, run_id: str, **env: str) -> dict[str, object]:
        command = [sys.executable, str(self.path), str(self.script), str(self.folder), run_id]
        done = subprocess.run(
            command, env={**self.env, **env}, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        data: dict[str, object] = json.loads(done.stdout)
        return data

    def lines(self, name: str) -> list[str]:
        path = self.folder / name
        return path.read_text().splitlines() if path.exists() else []


def _only_run() -> str:
    with open_store() as store:
        (summary,) = store.list_runs()
    return summary.run_id


def test_a_crash_after_the_effect_was_journaled_neither_reruns_nor_reasks_it_R1(
    tmp_path: Path, tao_home: Path, replay: Replay
) -> None:
    program = Program(tmp_path, tao_home, replay)
    killed = program.start(CRASH="record")
    assert killed.wait(timeout=60) == -signal.SIGKILL
    assert program.lines("sent.log") == ["ACME"] and program.lines("asked.log") == ["auto"]
    run_id = _only_run()
    with open_store() as store:
        assert store.get_run(run_id).steps == []  # the step itself was never stored
    done = program.resume(run_id)
    assert (done["status"], done["answer"]) == ("finished", "invoiced")
    assert program.lines("sent.log") == ["ACME"]  # not run again
    assert program.lines("asked.log") == ["auto"]  # not asked again
    steps = done["steps"]
    assert isinstance(steps, list)
    assert [(s["index"], s["observation"]) for s in steps] == [(1, "sent to ACME"), (2, None)]
    with open_store() as store:
        assert [s.index for s in store.get_run(run_id).steps] == [1, 2]


def test_a_crash_before_the_first_write_leaves_nothing_to_resume_and_nothing_done_R1(
    tmp_path: Path, tao_home: Path, replay: Replay
) -> None:
    """The run's row is written with its first checkpoint, before the model is asked: a
    run killed before that never asked, never ran a tool, and is not in the log."""
    program = Program(tmp_path, tao_home, replay)
    assert program.start(CRASH="start").wait(timeout=60) == -signal.SIGKILL
    with open_store() as store:
        assert store.list_runs() == []
    assert program.lines("sent.log") == [] and program.lines("asked.log") == []


@pytest.mark.parametrize("crash", ["turn", "end"])
def test_a_crash_between_two_writes_of_the_run_log_loses_and_repeats_nothing_R1(
    crash: str, tmp_path: Path, tao_home: Path, replay: Replay
) -> None:
    """Killed at the write of a turn's steps with the checkpoint ending it, or at the last
    write (the answer with the run's end): resume finishes the run, the invoice sent and
    approved once, each step stored once."""
    program = Program(tmp_path, tao_home, replay)
    assert program.start(CRASH=crash).wait(timeout=60) == -signal.SIGKILL
    done = program.resume(_only_run())
    assert (done["status"], done["answer"]) == ("finished", "invoiced")
    assert program.lines("sent.log") == ["ACME"] and program.lines("asked.log") == ["auto"]
    steps = done["steps"]
    assert isinstance(steps, list)
    assert [(s["index"], s["observation"]) for s in steps] == [(1, "sent to ACME"), (2, None)]
    with open_store() as store:
        assert [s.index for s in store.get_run(_only_run()).steps] == [1, 2]


def test_an_interrupted_side_effect_waits_for_a_person_never_a_policy_or_an_auto_yes_R1(
    tmp_path: Path, tao_home: Path, replay: Replay
) -> None:
    program = Program(tmp_path, tao_home, replay)
    killed = program.start(CRASH="effect", POLICY="1")  # the policy pre-approves send_invoice
    deadline = time.monotonic() + 60
    while not program.lines("sent.log") and time.monotonic() < deadline:
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=10)
    run_id = _only_run()
    shown = subprocess.run([sys.executable, "-m", "tao", "runs", "show", run_id],
                           env={**program.env, "COLUMNS": "200"}, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert "was running when the process stopped; it may have taken effect" in shown.stdout

    paused = program.resume(run_id, POLICY="1")  # policy and auto approver: neither may say yes
    assert paused["status"] == "awaiting_approval"
    (call,) = paused["pending"]  # type: ignore[misc]
    assert call["interrupted"] is True and call["arguments"] == {"customer": "ACME"}
    assert program.lines("sent.log") == ["ACME"] and program.lines("asked.log") == []

    done = program.resume(run_id, POLICY="1", APPROVER="person")  # a person says run it again
    assert (done["status"], done["answer"]) == ("finished", "invoiced")
    assert [json.loads(line) for line in program.lines("asked.log")] == [
        {"id": call["id"], "interrupted": True}
    ]
    assert program.lines("sent.log") == ["ACME", "ACME"]  # the person's decision, once
    steps = done["steps"]
    assert isinstance(steps, list)
    assert [(s["index"], s["observation"]) for s in steps] == [(1, "sent to ACME"), (2, None)]
