"""Deciding on paused runs, from any process: the CLI, the web page, a script (SPEC S3, M3).

A run that needs a person and has none (no terminal, ``--no-input``) stops with
status ``awaiting_approval``, its checkpoint in the run log. Whoever may decide
records a decision here, for the exact calls it names (:class:`~tao.state.config.PendingCall`
ids); :func:`resume_run` then rebuilds the agent from the run's recorded
:class:`~tao.state.config.RunConfig` and continues from exactly that step.

    approve_run("0193ab")                      # tao runs approve 0193ab
    deny_run("0193ab", "not on a Friday")      # tao runs deny 0193ab --reason ...
    result = resume_run("0193ab")              # tao resume 0193ab
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Unpack

from tao.errors import ConfigError, ResumeError, TaoError
from tao.state.config import Approval, Decision, PendingCall, RunConfig, Settings, Via
from tao.state.result import Status
from tao.state.setting import unrecorded

if TYPE_CHECKING:
    from tao.agent import Agent
    from tao.run.act import Approver, Executor, Person
    from tao.state.result import RunObserver, RunResult
    from tao.store import Store


@dataclass(frozen=True, slots=True)
class Waiting:
    """A call a paused run waits on, and the decision recorded for it so far."""

    call: PendingCall
    decision: Decision | None
    approval: Approval | None = None
    """Who took ``decision``, when and from where (a log written before issue 30: none)."""


def _open(store: Store | None) -> Store:
    from tao.store.factory import open_store

    return store if store is not None else open_store()


def pending_calls(run_id: str, *, store: Store | None = None) -> list[Waiting]:
    """The calls a paused run waits on, with the decisions taken so far."""
    log = _open(store)
    checkpoint = log.load_state(log.resolve(run_id))
    if checkpoint is None:
        return []
    return [
        Waiting(p, checkpoint.decisions.get(p.id), checkpoint.approvals.get(p.id))
        for p in checkpoint.pending
    ]


def _decide(run_id: str, record: Approval, store: Store | None, calls: Sequence[str] | None) -> str:
    from tao.store.heartbeat import RunLease

    log = _open(store)
    run_id = log.resolve(run_id)
    with RunLease(log, run_id).holding():  # not while a process acts for it (SPEC R5)
        _record_decision(log, run_id, record, calls)
    _back_to_queue(log, run_id)
    return run_id


def _back_to_queue(log: Store, run_id: str) -> None:
    """A submitted run (``tao submit``) goes back to its queue once decided, where any free
    worker continues it (issue 28); a run started in a process waits for ``tao resume``."""
    config = log.get_summary(run_id).config
    if config is None or config.queue is None:
        return
    from tao.workers.queue import enqueue

    try:
        enqueue(run_id, config.queue, again=True)
    except TaoError as error:
        raise ResumeError(
            f"the decision on run {run_id} is recorded, but it could not go back to its "
            f"queue ({error}); continue it with `tao resume {run_id}`"
        ) from None


def _record_decision(log: Store, run_id: str, record: Approval, calls: Sequence[str] | None) -> str:
    status = log.get_summary(run_id).status
    checkpoint = log.load_state(run_id)
    if status != Status.AWAITING_APPROVAL or checkpoint is None or not checkpoint.pending:
        raise ResumeError(f"run {run_id} is not waiting for approval (status: {status})")
    waiting = {p.id for p in checkpoint.pending}
    chosen = list(calls) if calls is not None else sorted(waiting)
    stale = [call for call in chosen if call not in waiting]
    if stale:
        raise ResumeError(
            f"call {', '.join(stale)} is not pending in run {run_id}; "
            f"it waits on: {', '.join(sorted(waiting))}"
        )
    decisions = {**checkpoint.decisions, **{call: record.decision for call in chosen}}
    approvals = {**checkpoint.approvals, **{call: record for call in chosen}}
    log.save_state(
        run_id, dataclasses.replace(checkpoint, decisions=decisions, approvals=approvals)
    )
    return run_id


def approve_run(
    run_id: str,
    *,
    calls: Sequence[str] | None = None,
    store: Store | None = None,
    via: Via = "python",
    by: str | None = None,
    reason: str | None = None,
) -> str:
    """Approve the waiting calls (all, or those ``calls`` names); returns the full run id.

    The run log records who (``by``, default: this OS user), when, from where (``via``) and,
    when given, why (``reason``: an approval is accountable too, not only a denial)."""
    record = Approval.taken(True, via, by)
    if reason and reason.strip():
        record = dataclasses.replace(record, reason=reason.strip())
    return _decide(run_id, record, store, calls)


def deny_run(
    run_id: str,
    reason: str | None = None,
    *,
    calls: Sequence[str] | None = None,
    store: Store | None = None,
    via: Via = "python",
    by: str | None = None,
) -> str:
    """Deny the waiting calls; the model is told, with ``reason``, and goes on."""
    decision: Decision = reason.strip() if reason and reason.strip() else False
    return _decide(run_id, Approval.taken(decision, via, by), store, calls)


def agent_for_run(
    run_id: str,
    *,
    store: Store | None = None,
    approve: Approver | Person | None = None,
    executor: Executor | None = None,
    **given: Unpack[Settings],
) -> Agent:
    """Rebuild the agent a run was started with, from its recorded :class:`RunConfig`.

    ``approve`` and ``executor`` are what a config cannot hold: live callables; ``given``
    are the settings the run log does not record, given again by a person
    (``trust_project_policy=True``: ``tao resume --trust-project-policy``). A recorded
    setting is the run's and cannot be changed here.
    """
    from tao.agent import Agent

    recorded = sorted(set(given) - unrecorded(RunConfig))
    if recorded:
        raise ConfigError(f"a resumed run keeps its recorded settings: {', '.join(recorded)}")

    log = _open(store)
    summary = log.get_summary(log.resolve(run_id))
    log.check_free(summary.run_id)  # a run live elsewhere: say so, whatever its tools
    config = rebuildable(summary.run_id, summary.config)
    return Agent(
        config=config,
        record=log,
        approve=approve,
        executor=executor,
        **given,
    )


def rebuildable(run_id: str, config: RunConfig | None) -> RunConfig:
    """``config``, if an agent can be rebuilt from it outside the Python that ran the run
    (by ``tao resume`` or ``tao run --continue``); else why not, and what to do instead."""
    if config is None:
        raise ResumeError(f"run {run_id} has no recorded settings; continue it from Python")
    if not config.model:
        raise ResumeError(
            f"run {run_id} used a model object, not a spec; continue it from Python "
            "with the same Agent: agent.resume(run_id) or agent.run(task, history=run_id)"
        )
    if any(t is None for t in config.tools):
        raise ResumeError(
            f"run {run_id} used Python tools that cannot be rebuilt here; continue it from "
            "Python with the same Agent: agent.resume(run_id) or agent.run(task, history=run_id)"
        )
    return config


def resume_run(
    run_id: str,
    *,
    store: Store | None = None,
    observers: Sequence[RunObserver] = (),
    approve: Approver | Person | None = None,
) -> RunResult:
    """Continue a paused or interrupted run in this process, with its recorded decisions."""
    log = _open(store)
    agent = agent_for_run(run_id, store=log, approve=approve)
    return agent.resume(log.resolve(run_id), observers=observers)
