"""``tao runs approve|deny RUN_ID`` and ``tao resume RUN_ID`` (SPEC S3, M3).

tao run "clean the build folder" -t files,write --no-input   # exits 4: awaiting_approval
tao runs show 0193ab                                        # what it wants to do
tao runs approve 0193ab          # or: tao runs deny 0193ab --reason "keep dist/"
tao resume 0193ab                # continues from exactly that step
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

import click

from tao.cli.ending import (
    Latest,
    RunCommand,
    conclude,
    failed,
    interrupted,
    not_started,
    sigterm_interrupts,
)
from tao.cli.settings import config_values, setting_options, split_options
from tao.cli.terminal import console, echo
from tao.cli.usage import cli_error
from tao.errors import ResumeError, TaoError
from tao.store.factory import open_store

if TYPE_CHECKING:
    from tao.state.config import Settings


def _show_pending(run_id: str) -> None:
    """The calls just decided, as ``tao run``'s prompt and ``tao runs show`` show them
    (Thought, call, effects, the child run that holds it, the diff), redacted (S8)."""
    from tao.approval.decide import pending_calls
    from tao.cli.render import render_pending_call

    out = console()
    for waiting in pending_calls(run_id):
        out.print(render_pending_call(waiting.call))


_CALL_OPTION = click.option(
    "--call",
    "calls",
    multiple=True,
    metavar="CALL_ID",
    help="Decide only this waiting call (as `tao runs show` lists it); repeatable.",
)


def _next_step(run_id: str) -> str:
    """A submitted run went back to its queue; any other waits for `tao resume`."""
    with open_store() as store:
        config = store.get_summary(run_id).config
    if config is not None and config.queue is not None:
        return f"it is back on queue {config.queue!r}: a free worker continues it"
    return f"continue it with: tao resume {run_id}"


@click.command("approve")
@click.argument("run_id")
@click.option("--reason", help="Why it may run; recorded with who approved it, when and where.")
@_CALL_OPTION
def approve_command(run_id: str, reason: str | None, calls: tuple[str, ...]) -> None:
    """Approve the calls a paused run waits on; then `tao resume RUN_ID` runs them."""
    _decide(run_id, reason, calls, approve=True)


@click.command("deny")
@click.argument("run_id")
@click.option("--reason", help="Told to the model, so it can take another way.")
@_CALL_OPTION
def deny_command(run_id: str, reason: str | None, calls: tuple[str, ...]) -> None:
    """Deny the calls a paused run waits on; the model is told and goes on after resume."""
    _decide(run_id, reason, calls, approve=False)


def _decide(run_id: str, reason: str | None, calls: tuple[str, ...], *, approve: bool) -> None:
    """Record the decision (who: this OS user, via: cli), then say what comes next; an
    approval repeats the calls it lets run, so the person sees what they said yes to."""
    from tao.approval.decide import approve_run, deny_run

    try:
        if approve:
            full = approve_run(run_id, calls=calls or None, via="cli", reason=reason)
            echo(f"approved the waiting call(s) of run {full}:")
            _show_pending(full)
            echo(_next_step(full))
        else:
            full = deny_run(run_id, reason, calls=calls or None, via="cli")
            echo(f"denied the waiting call(s) of run {full}; {_next_step(full)}")
    except TaoError as error:
        raise cli_error(error) from None


@click.command("resume", cls=RunCommand)
@click.argument("run_id")
@click.option("--no-input", is_flag=True, help="Never prompt; undecided calls pause again.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object at the end.")
@setting_options("resume")
def resume_command(run_id: str, no_input: bool, as_json: bool, **options: object) -> None:
    """Continue a paused or interrupted run from exactly where it stopped."""
    from tao.approval.decide import agent_for_run
    from tao.cli.live import RunStatus, loading
    from tao.cli.run import ask_approval, show_live

    interactive = sys.stdin.isatty() and not no_input
    latest, status = Latest(), RunStatus()
    try:
        with loading("", quiet=as_json):
            agent = agent_for_run(
                run_id,
                approve=ask_approval if interactive else None,
                **cast("Settings", config_values(split_options(options, "resume")[0])),
            )
            task = _task_of(run_id)
    except TaoError as error:  # nothing to resume: a plain one-line error
        not_started(error, as_json)
    try:
        with sigterm_interrupts():
            if as_json:
                result = agent.resume(run_id, observers=[latest])
            else:
                events = agent.stream_resume(run_id, observers=[latest, status])
                result = show_live(agent, task, events=events, status=status)
    except ResumeError as error:
        not_started(error, as_json)
    except TaoError as error:
        failed(error, latest, as_json)
    except KeyboardInterrupt:
        interrupted(latest, as_json)
    conclude(result, as_json)


def _task_of(run_id: str) -> str:
    """The task of the run resumed, for the live display's header (it showed the run id)."""

    with open_store() as store:
        return store.get_summary(run_id).task
