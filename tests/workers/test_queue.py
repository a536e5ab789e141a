"""Runs on a queue of workers over the real PostgreSQL run log (issue 28, SPEC R1, R5, S3).

Worker processes are tests/workers/app.py: a user's own process with its own Python tools
(a side effect that runs a child and writes a ledger line, a read-only peek) and a scripted
model with 200 ms a call. The ledger is the ground truth for "no side effect runs twice".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.workers.app import agent
from tests.workers.conftest import Queue, stop

from tao.state.result import Status

ENDED = (Status.FINISHED, Status.AWAITING_APPROVAL)


def submit(count: int, prefix: str = "k") -> list[str]:
    submitter = agent()
    return [submitter.submit(f"job {prefix}{n}") for n in range(count)]


def test_twenty_runs_two_workers_one_killed_with_children_every_run_ends_R1_R5(
    queue: Queue,
) -> None:
    """R1/R5, issue 28's done-when: 20 runs, two workers; one is killed (-9, with its
    children) midway. Every run ends finished, or awaiting_approval on the very call whose
    outcome is unknown; none is stuck; no side effect ran twice; the live worker then
    exits cleanly on SIGTERM."""
    doomed, survivor = queue.worker(4), queue.worker(4)
    run_ids = submit(20)
    deadline = time.monotonic() + 30
    while len(queue.effects()) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    with queue.store() as store:  # the runs the doomed worker holds as it dies
        held = [r for r in run_ids if (store.get_summary(r).holder or "").count(f":{doomed.pid}:")]
    os.killpg(doomed.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    doomed.wait(10)
    assert held, "the killed worker held no run: the test killed nothing midway"

    final = queue.wait_for(run_ids, lambda s: s in ENDED, timeout=60)
    assert time.monotonic() - killed_at < 60
    assert all(status in ENDED for status in final.values()), final
    effects = queue.effects()
    assert max(effects.values()) == 1, effects  # no side effect twice
    with queue.store() as store:
        for run_id, status in final.items():
            key = store.get_summary(run_id).task.split()[1]
            if status is Status.FINISHED:
                assert store.get_summary(run_id).answer == f"done {key}"
                assert effects[key] == 1
                continue
            (pending,) = store.get_run(run_id).pending or []
            assert (pending.tool, pending.interrupted) == ("record", True)  # cut short
            assert run_id in held
    assert stop(survivor) == 0


def test_sigterm_interrupts_held_runs_and_hands_them_to_another_worker_R2_R5(
    queue: Queue,
) -> None:
    """R2/R5: told to stop while it holds runs (in a model call), a worker exits 0 at once;
    the runs are recorded interrupted, their leases free, and another worker finishes them,
    each side effect once."""
    first = queue.worker(2, APP_LATENCY_S="1.5")
    run_ids = submit(2)
    queue.wait_for(run_ids, lambda s: s is Status.RUNNING, timeout=20)
    started = time.monotonic()
    assert stop(first) == 0
    assert time.monotonic() - started < 10
    with queue.store() as store:
        for run_id in run_ids:
            summary = store.get_summary(run_id)
            assert (summary.status, summary.holder) == (Status.INTERRUPTED, None)
    second = queue.worker(2)
    final = queue.wait_for(run_ids, lambda s: s is Status.FINISHED, timeout=30)
    assert set(final.values()) == {Status.FINISHED}
    assert queue.effects() == {"k0": 1, "k1": 1}
    assert {pid for pids in queue.pids().values() for pid in pids} == {second.pid}
    assert stop(second) == 0


def test_an_approval_resumes_the_run_on_whichever_worker_is_free_S3(queue: Queue) -> None:
    """S3, issue 28: a run paused on one worker and approved from another process (the CLI)
    goes back to the queue; the first worker is busy, so the free one runs the call."""
    busy = queue.worker(1, APP_APPROVE="0", APP_SLOW_S="60")
    (paused,) = submit(1, "p")
    assert queue.wait_for([paused], lambda s: s in ENDED, 30)[paused] is Status.AWAITING_APPROVAL
    (slow,) = submit(1, "slow")  # keeps the first worker busy for a minute
    queue.wait_for([slow], lambda s: s is Status.RUNNING, 20)
    free = queue.worker(1)
    approved = subprocess.run(
        [sys.executable, "-m", "tao", "runs", "approve", paused],
        env=queue.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert approved.returncode == 0, approved.stderr
    assert queue.wait_for([paused], lambda s: s in ENDED, 30)[paused] is Status.FINISHED
    assert queue.pids()["p0"] == [free.pid]
    assert stop(free) == 0 and stop(busy) == 0


def test_a_run_a_worker_holds_refuses_two_tao_resume_at_once_R5(queue: Queue) -> None:
    """R5: while a worker holds a run, two `tao resume` of it at once both exit 2 naming
    the holder, change nothing, and the run still ends once, its side effect once."""
    worker = queue.worker(1)
    (run_id,) = submit(1, "slow")
    queue.wait_for([run_id], lambda s: s is Status.RUNNING, 20)
    resumes = [
        subprocess.Popen(
            [sys.executable, "-m", "tao", "resume", run_id, "--no-input"],
            env=queue.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for resume in resumes:
        out, err = resume.communicate(timeout=60)
        assert resume.returncode == 2, out + err
        assert "being run by another process" in err and f"pid {worker.pid}" in err
    assert queue.wait_for([run_id], lambda s: s in ENDED, 30)[run_id] is Status.FINISHED
    assert queue.effects() == {"slow0": 1}
    assert stop(worker) == 0


def test_a_second_delivery_of_an_ended_run_answers_its_status_and_runs_nothing_R1(
    queue: Queue,
) -> None:
    """R1: the workflow records no DBOS step, so a workflow delivered again for a run that
    already ended (DBOS's recovery of a worker that died after the run ended but before its
    workflow did; a duplicate enqueue) runs the run's body again: tao's log must answer it.
    The run stays finished with its answer, its workflow ends with that status, no side
    effect runs a second time, and DBOS holds no step rows for either workflow."""
    import psycopg

    from tao.workers.queue import client, enqueue

    worker = queue.worker(2)
    (run_id,) = submit(1, "dup")
    assert queue.wait_for([run_id], lambda s: s is Status.FINISHED, 30)[run_id] is Status.FINISHED
    again = enqueue(run_id, None, again=True)  # the same run, on the queue once more
    assert client().retrieve_workflow(again).get_result() == str(Status.FINISHED)
    assert queue.effects() == {"dup0": 1}
    with queue.store() as store:
        assert store.get_summary(run_id).answer == "done dup0"
    with psycopg.connect(queue.env["TAO_DATABASE_URL"]) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM dbos.operation_outputs WHERE workflow_uuid = ANY(%s)",
            ([run_id, again],),
        ).fetchone()
    assert rows == (0,)
    assert stop(worker) == 0
