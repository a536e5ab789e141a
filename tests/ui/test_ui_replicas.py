"""`tao ui` as several replicas over one PostgreSQL run log (issue 28, item 6; SPEC S3, R5).

The page keeps no run state of its own: what a run waits on, the decisions and the lease
live in the run log. So two replicas, real `tao ui` processes, show the same runs; a decision
made on one is seen by the other, the resume runs wherever it was asked for, and two people
approving the same call on two replicas at once run it once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.ui.conftest import Response, Ui

from tao.state.result import Status
from tao.store.factory import open_store


@pytest.fixture
def replicas(
    pg_database: str, tao_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[Ui]]:
    """Two `tao ui` processes on free ports, both over the same PostgreSQL database."""
    monkeypatch.setenv("TAO_DATABASE_URL", pg_database)
    env = {**os.environ, "TAO_HOME": str(tao_home)}
    procs: list[subprocess.Popen[str]] = []
    pages: list[Ui] = []
    try:
        for _ in range(2):
            proc = subprocess.Popen(
                [sys.executable, "-m", "tao", "ui", "--port", "0"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            procs.append(proc)
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
            port = int(url.rstrip("/").rsplit(":", 1)[1])
            pages.append(Ui(SimpleNamespace(url=url, port=port)))  # type: ignore[arg-type]
        yield pages
    finally:
        for proc in procs:  # our own children
            proc.terminate()
        for proc in procs:
            proc.communicate(timeout=60)


def _status(run_id: str) -> Status:
    with open_store() as store:
        return store.get_summary(run_id).status


def _until_ended(run_id: str, timeout: float = 90.0) -> Status:
    deadline = time.monotonic() + timeout
    while (status := _status(run_id)) in (Status.AWAITING_APPROVAL, Status.RUNNING):
        assert time.monotonic() < deadline, f"run {run_id} still {status}"
        time.sleep(0.2)
    return status


def test_a_run_paused_under_one_replica_is_approved_on_the_other_S3(
    replicas: list[Ui], paused_run: Callable[..., Any]
) -> None:
    """Both replicas list the paused run; approving on B resumes it; A then shows it finished
    and refuses a second decision (409), as one server would."""
    first, second = replicas
    run_id, project = paused_run()
    for page in replicas:
        assert f'class="approval" data-run="{run_id}"' in page.request("/").body
    stale = first.form(run_id)
    assert second.decide(run_id).status == 303
    assert _until_ended(run_id) is Status.FINISHED
    assert not (project / "old.log").exists()
    page = first.request(f"/runs/{run_id}").body
    assert "finished" in page and "done with old.log" in page
    again = first.request(f"/runs/{run_id}/approve", method="POST", data=stale)
    assert again.status == 409, again.body


def test_the_same_call_approved_on_two_replicas_at_once_runs_once_S3_R5(
    replicas: list[Ui], paused_run: Callable[..., Any]
) -> None:
    """Two people press Approve at the same moment on two replicas: the run log's lease lets
    one resume act; the call runs once, and the run ends with its two steps."""
    run_id, project = paused_run()
    forms = [page.form(run_id) for page in replicas]
    replies: list[Response] = []
    start = threading.Barrier(2)

    def press(page: Ui, fields: list[tuple[str, str]]) -> None:
        start.wait()
        replies.append(page.request(f"/runs/{run_id}/approve", method="POST", data=fields))

    threads = [
        threading.Thread(target=press, args=(page, form))
        for page, form in zip(replicas, forms, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(r.status for r in replies)[0] == 303, [(r.status, r.body) for r in replies]
    assert all(r.status in (303, 409) for r in replies), [(r.status, r.body) for r in replies]
    assert _until_ended(run_id) is Status.FINISHED
    with open_store() as store:
        result = store.get_run(run_id)
    assert [step.tool for step in result.steps] == ["delete_file", "finish"]
    assert "Error" not in (result.steps[0].observation or "")  # deleted once, not twice
    assert not (project / "old.log").exists()
