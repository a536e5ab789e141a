"""The DBOS internals the worker relies on, pinned (issue 28, item 3 of the remaining work).

The worker uses two DBOS 3.4.0 internals that have no public equivalent (docs/architecture.md,
"DBOS internals"): the instance's background-thread stop events and the executor-conditional
recovery. A DBOS upgrade that renames or reshapes either must fail here, by name, rather than
as a hung SIGTERM or a run executed twice in the recovery tests. The third internal the worker
once used (the client's ``run_migrations``) is gone: ``DBOS.migrate`` is public.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version

import pytest

dbos = pytest.importorskip("dbos")


def test_dbos_is_the_version_whose_internals_were_read() -> None:
    """An upgrade is a deliberate act: re-read the two internals below, then move this pin."""
    assert version("dbos") == "3.4.0", (
        "dbos changed version: re-check DBOS._recover_pending_workflows and "
        "background_thread_stop_events (src/tao/workers/worker.py), then update this pin"
    )


def test_recovery_reenqueues_only_while_the_executor_is_the_dead_one() -> None:
    """The sweep's safety (no workflow put back while a live worker runs it) rests on
    recovery matching the executor id; a public resume does not."""
    from dbos._dbos import DBOS
    from dbos._sys_db import SystemDatabase

    params = inspect.signature(DBOS._recover_pending_workflows).parameters
    assert list(params) == ["executor_ids"], "DBOS._recover_pending_workflows changed shape"
    source = inspect.getsource(SystemDatabase.reenqueue_for_recovery)
    assert "executor_id.in_(executor_ids)" in source, "recovery no longer checks the executor"
    assert "PENDING" in source, "recovery no longer limits itself to PENDING workflows"


def test_stop_events_are_what_destroy_sets_to_stop_the_queue_thread() -> None:
    """The worker stops dequeuing by setting the events DBOS.destroy sets, without
    closing the system database it still needs to hand its runs back."""
    from dbos._dbos import DBOS

    assert "background_thread_stop_events" in inspect.getsource(DBOS.__init__)
    destroy = inspect.getsource(DBOS._destroy)
    assert "for event in self.background_thread_stop_events" in destroy
    assert "event.set()" in destroy
    launch = inspect.getsource(DBOS._launch)
    assert "background_thread_stop_events.append" in launch, "the queue thread's event moved"


def test_the_public_calls_the_worker_uses_exist() -> None:
    """The public API the worker and the client use instead of internals."""
    from dbos import DBOS, WorkflowStatus

    assert callable(DBOS.migrate) and callable(DBOS.resume_workflows)
    assert "executor_id" in WorkflowStatus.__annotations__  # the sweep reads it
