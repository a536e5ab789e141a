"""Red team: two processes acting for one run (SPEC R5, R1; issue 26).

Without a lease a second ``tao resume`` of a run still live elsewhere was accepted and a
step ran twice. Every test here uses real processes on a real run log (SQLite in
``$TAO_HOME``, and PostgreSQL through ``store_backend``), and a side effect that counts
itself: ``tests/fakes/lease_worker.py``'s ``slow_write`` appends ``PID start`` to a file.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao.state.result import Status
from tao.store.factory import open_store

REPO = Path(__file__).resolve().parents[2]
Replay = Callable[[list[str]], Path]
SCRIPT = ['Action: slow_write(text="one")', "Action: finish[done]"]


def _worker(mode: str, script: Path, marks: Path, *rest: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.lease_worker", mode, str(script), str(marks), *rest],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, dict[str, Any], str]:
    out, err = proc.communicate(timeout=timeout)
    lines = out.strip().splitlines()
    return proc.returncode, json.loads(lines[-1]) if lines else {}, err


def _starts(marks: Path) -> list[str]:
    if not marks.exists():
        return []
    return [line for line in marks.read_text().splitlines() if " start " in line]


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _paused_run(script: Path, marks: Path) -> str:
    code, out, err = _finish(_worker("run", script, marks))
    assert code == 0 and out["status"] == "awaiting_approval", err
    return str(out["run_id"])


def _live_run_id() -> str:
    with open_store() as store:
        runs = store.list_runs(limit=1)
    return runs[0].run_id


@pytest.mark.usefixtures("store_backend")
def test_two_resumes_at_once_of_a_paused_run_one_acts_the_other_is_refused_R5(
    replay: Replay, tmp_path: Path
) -> None:
    """R5: two processes resume the same approved run at the same instant; exactly one
    runs the approved call, the other is refused naming the one that acts (its pid)."""
    script, marks = replay(SCRIPT), tmp_path / "marks.txt"
    run_id = _paused_run(script, marks)
    procs = [_worker("resume", script, marks, run_id, SLOW_S="2") for _ in range(2)]
    outcomes = [_finish(proc) for proc in procs]
    acted = [o for o in outcomes if o[0] == 0]
    refused = [o for o in outcomes if o[0] == 3]
    assert len(acted) == 1 and len(refused) == 1, outcomes
    assert acted[0][1] == {"run_id": run_id, "status": "finished"}
    starts = _starts(marks)
    assert len(starts) == 1, starts  # the step ran once
    winner = next(p.pid for p, o in zip(procs, outcomes, strict=True) if o[0] == 0)
    assert starts[0].startswith(f"{winner} start")
    message = refused[0][1]["busy"]
    assert f"run {run_id} is being run by another process" in message
    assert f"host {socket.gethostname()}, pid {winner}, since " in message
    assert "nothing was changed" in message
    with open_store() as store:
        stored = store.get_run(run_id)
        lease = store.get_lease(run_id)
    assert stored.status is Status.FINISHED
    assert [s.tool for s in stored.steps] == ["slow_write", "finish"]
    assert lease is None  # released with the run's end


@pytest.mark.usefixtures("store_backend")
def test_tao_resume_of_a_run_busy_in_a_tool_is_refused_and_changes_nothing_R5(
    replay: Replay, tmp_path: Path, tao_cli: Any
) -> None:
    """R5: while a run is live (inside a slow tool call), ``tao resume``, ``tao runs approve``
    and the Python API's resume are refused with the holder named, exit 2, and the run
    goes on untouched in its own process."""
    script, marks = replay(SCRIPT), tmp_path / "marks.txt"
    live = _worker("run", script, marks, APPROVE="1", SLOW_S="120")
    try:
        _wait_for(lambda: len(_starts(marks)) == 1, "the live run's tool call")
        run_id = _live_run_id()
        with open_store() as store:
            before = (store.get_summary(run_id), store.load_state(run_id))
        out = tao_cli("resume", run_id, "--no-input")
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        assert f"pid {live.pid}, since " in out.stderr
        assert f"run {run_id} is being run by another process" in out.stderr
        approve = tao_cli("runs", "approve", run_id)
        assert approve.returncode == 2 and f"pid {live.pid}" in approve.stderr
        code, busy, err = _finish(_worker("resume", script, marks, run_id))
        assert code == 3 and f"pid {live.pid}" in busy["busy"], err
        with open_store() as store:
            assert (store.get_summary(run_id), store.load_state(run_id)) == before
    finally:
        Path(f"{marks}.go").touch()  # the live run's tool call may end now
        code, out_live, err = _finish(live)
    assert code == 0 and out_live["status"] == "finished", err
    assert len(_starts(marks)) == 1


def test_a_killed_holder_frees_the_run_at_once_on_its_own_host_R5_R1(
    replay: Replay, tmp_path: Path
) -> None:
    """R5, R1: ``kill -9`` of the process acting for a run leaves a lease nobody renews; on
    the same host its pid is gone, so a resume takes the run at once and finishes it (the
    interrupted side effect put to a person again, R1)."""
    script, marks = replay(SCRIPT), tmp_path / "marks.txt"
    live = _worker("run", script, marks, APPROVE="1", SLOW_S="60")
    _wait_for(lambda: len(_starts(marks)) == 1, "the live run's tool call")
    run_id = _live_run_id()
    with open_store() as store:
        held = store.get_lease(run_id)
    assert held is not None and held.pid == live.pid
    live.send_signal(signal.SIGKILL)
    live.wait(10)
    started = time.monotonic()
    code, out, err = _finish(_worker("resume", script, marks, run_id, SLOW_S="0"))
    assert time.monotonic() - started < 20  # not waiting for the 30 s lease to run out
    # taken: the call cut short by the kill is put to a person, never redone silently (R1)
    assert code == 0 and out["status"] == "awaiting_approval", err
    assert len(_starts(marks)) == 1
    code, out, err = _finish(_worker("resume", script, marks, run_id, SLOW_S="0"))
    assert code == 0 and out["status"] == "finished", err


def test_a_dead_worker_on_another_host_frees_the_run_when_its_lease_runs_out_R5(
    replay: Replay, tmp_path: Path, tao_cli: Any
) -> None:
    """R5: a lease held from another machine (a worker whose pid cannot be checked here) is
    respected until it runs out, then the run goes on here."""
    script, marks = replay(SCRIPT), tmp_path / "marks.txt"
    run_id = _paused_run(script, marks)
    from tao.store.lease import Terms

    with open_store() as store:
        store.take_lease(run_id, Terms("worker-7.example:4242:feedbeef", 8.0))
        held = store.get_lease(run_id)
    assert held is not None
    refused = tao_cli("resume", run_id, "--no-input")
    assert refused.returncode == 2
    assert "host worker-7.example, pid 4242, since" in refused.stderr
    assert time.time() < held.until, "the refusal came after the lease ran out: too slow"
    time.sleep(max(0.0, held.until - time.time()) + 0.2)
    code, out, err = _finish(_worker("resume", script, marks, run_id, SLOW_S="0"))
    assert code == 0 and out["status"] == "finished", err
    assert len(_starts(marks)) == 1


def test_a_long_tool_call_keeps_its_lease_past_the_lease_time_R5(
    replay: Replay, tmp_path: Path
) -> None:
    """R5: the holder renews its lease while blocked in a tool call three times longer than
    the lease, so a resume in the meantime is still refused."""
    script, marks = replay(SCRIPT), tmp_path / "marks.txt"
    live = _worker("run", script, marks, APPROVE="1", SLOW_S="120", TAO_LEASE_S="1")
    try:
        _wait_for(lambda: len(_starts(marks)) == 1, "the live run's tool call")
        run_id = _live_run_id()
        time.sleep(2.5)  # well past the lease time; renewed every 1/6 s meanwhile
        code, busy, err = _finish(
            _worker("resume", script, marks, run_id, SLOW_S="0", TAO_LEASE_S="1")
        )
        assert code == 3 and f"pid {live.pid}" in busy["busy"], err
    finally:
        Path(f"{marks}.go").touch()
        code, out, err = _finish(live)
    assert code == 0 and out["status"] == "finished", err
    assert len(_starts(marks)) == 1
