"""How a worker judges another worker dead (issue 28, SPEC R5): by tao's lease, so a lost
machine is noticed even though its process cannot be asked."""

from __future__ import annotations

import time
from types import SimpleNamespace

from tao.state.config import RunConfig
from tao.state.result import RunResult, Status
from tao.store.factory import open_store
from tao.store.lease import Terms
from tao.store.sql import HOST
from tao.workers.worker import Worker


def test_another_hosts_worker_is_dead_once_its_run_lease_ran_out_and_its_flow_stood_R5() -> None:
    """R5: a workflow of another host's worker is left alone while the run's lease is live
    (renewed by that worker), and handed back once the lease ran out and the workflow has
    not moved for a lease's time; a same-host worker whose pid is gone is dead at once."""
    store = open_store()
    result = RunResult(run_id="r1", task="t", model="m", started_at=time.time())
    result.status = Status.QUEUED
    store.queue_run(result, RunConfig(queue="tao"))
    worker = Worker(store=store)
    now_ms = time.time() * 1000
    elsewhere = SimpleNamespace(
        executor_id="far-away-host:4242:abcd", workflow_id="r1", updated_at=now_ms - 120_000
    )
    store.take_lease("r1", Terms("far-away-host:4242:abcd", 60.0))
    assert not worker._gone(elsewhere)  # its lease is live: it is alive
    store.take_lease("r1", Terms("far-away-host:4242:abcd", -1.0))  # ran out a second ago
    assert worker._gone(elsewhere)
    moving = SimpleNamespace(**{**vars(elsewhere), "updated_at": now_ms})
    assert not worker._gone(moving)  # just dequeued: its lease is not taken yet
    gone_here = SimpleNamespace(**{**vars(moving), "executor_id": f"{HOST}:999999999:ab"})
    assert worker._gone(gone_here)  # this host, no such pid: dead at once
