"""Deciding on paused runs, from any process: the CLI, the web page, a script (SPEC S3, M3).

A run that needs a person and has none (no terminal, ``--no-input``) stops with
status ``awaiting_approval``, its checkpoint in the run log. Whoever may decide
records a decision here; :func:`resume_run` then rebuilds the agent from the
run's recorded configuration and continues from exactly that step.

    approve_run("0193ab")                      # tao runs approve 0193ab
    deny_run("0193ab", "not on a Friday")      # tao runs deny 0193ab --reason ...
    result = resume_run("0193ab")              # tao resume 0193ab
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tao.errors import TaoError

if TYPE_CHECKING:
    from tao.loop import Agent
    from tao.store import Store
    from tao.trace import RunObserver, RunResult


def _open(store: Store | None) -> Store:
    from tao.store import Store

    return store if store is not None else Store.open()


def pending_calls(run_id: str, *, store: Store | None = None) -> list[dict[str, Any]]:
    """The calls a paused run waits on: tool, arguments, effects, preview, decision so far."""
    log = _open(store)
    run_id = log.resolve(run_id)
    state = log.load_state(run_id) or {}
    decisions = state.get("decisions", {})
    return [
        {**call, "decision": decisions.get(str(call["position"]))}
        for call in state.get("pending") or []
    ]


def _decide(run_id: str, decision: bool | str, store: Store | None) -> str:
    log = _open(store)
    run_id = log.resolve(run_id)
    status = log.get_summary(run_id).status
    state = log.load_state(run_id)
    if status != "awaiting_approval" or not state or not state.get("pending"):
        raise TaoError(f"run {run_id} is not waiting for approval (status: {status})")
    decisions = state.setdefault("decisions", {})
    for call in state["pending"]:
        decisions[str(call["position"])] = decision
    log.save_state(run_id, state)
    return run_id


def approve_run(run_id: str, *, store: Store | None = None) -> str:
    """Approve every call the run waits on; returns the full run id. Resume to run them."""
    return _decide(run_id, True, store)


def deny_run(run_id: str, reason: str | None = None, *, store: Store | None = None) -> str:
    """Deny the waiting calls; the model is told, with ``reason``, and goes on."""
    return _decide(run_id, reason.strip() if reason and reason.strip() else False, store)


def agent_for_run(run_id: str, *, store: Store | None = None, **overrides: Any) -> Agent:
    """Rebuild the agent a run was started with, from its recorded configuration."""
    from tao.loop import Agent

    log = _open(store)
    summary = log.get_summary(log.resolve(run_id))
    config = dict(summary.config)
    if not config.get("model"):
        raise TaoError(
            f"run {summary.run_id} used a model object, not a spec; resume it from Python "
            "with the same Agent: agent.resume(run_id)"
        )
    if any(t is None for t in config.get("tools", [])):
        raise TaoError(
            f"run {summary.run_id} used Python tools that cannot be rebuilt here; resume it "
            "from Python with the same Agent: agent.resume(run_id)"
        )
    known = {
        "tools",
        "lang",
        "max_steps",
        "max_seconds",
        "max_tokens",
        "temperature",
        "max_reply_tokens",
        "protocol",
        "grammar",
        "project",
        "corpus",
        "base_url",
        "system_prompt",
        "numbered",
        "task_label",
        "fence_untrusted",
    }
    kwargs = {key: value for key, value in config.items() if key in known}
    kwargs.update(overrides)
    return Agent(config["model"], record=log, **kwargs)


def resume_run(
    run_id: str,
    *,
    store: Store | None = None,
    observers: Sequence[RunObserver] = (),
    **overrides: Any,
) -> RunResult:
    """Continue a paused or interrupted run in this process, with its recorded decisions."""
    log = _open(store)
    return agent_for_run(run_id, store=log, **overrides).resume(
        log.resolve(run_id), observers=observers
    )
