"""How a command that drives a run ends: one exit code, one JSON object, a way back (SPEC R2).

Every path out of ``tao run`` and ``tao resume`` goes through here, so the exit code
always follows the status, ``--json`` always prints exactly one JSON object (also when
the run log fails, the run is interrupted, or it never starts because the command line
is wrong), and an interrupted run always says how to resume it. SIGTERM takes the same
path as Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any, NoReturn

import click

from tao.cli.terminal import echo, echo_json
from tao.cli.usage import cli_error
from tao.errors import FatalError, TaoError
from tao.state.jsontypes import JSONObject
from tao.state.result import RunResult, Status, Step

#: Exit codes, so scripts can tell an answer from a spent budget from a failure; 130 is the
#: shell's code for a run stopped by Ctrl-C. A finished run whose answer was forced exits
#: :data:`FORCED_EXIT` instead of 0.
EXIT = {
    Status.FINISHED: 0,
    Status.ERROR: 1,
    Status.RUNNING: 1,
    Status.MAX_STEPS: 3,
    Status.AWAITING_APPROVAL: 4,
    Status.INTERRUPTED: 130,
    Status.CANCELLED: 130,
    Status.QUEUED: 0,
}
#: A ``finished`` run whose answer was forced (:attr:`RunResult.forced`): the step budget or
#: the repeats ran out and the last step could only answer, so the answer is no plain success.
FORCED_EXIT = 5


def exit_code(result: RunResult) -> int:
    """The exit code of a run that ended: its status's, or 5 for a forced answer."""
    return FORCED_EXIT if result.forced else EXIT[result.status]


class RunCommand(click.Command):
    """A command that drives a run: its ``--json`` promises one JSON object on stdout, also
    when click rejects the command line itself (``--max-steps 0``, a missing folder)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        as_json = "--json" in args
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            if as_json:
                _error_object(None, error.format_message())
            raise


def not_started(error: TaoError | click.ClickException, as_json: bool) -> NoReturn:
    """The run never started (a wrong model spec, an unknown run id, a damaged run log):
    the usual one-line error and exit code (2 for what was typed wrong, else 1), and with
    ``--json`` still one object, ``{"run_id": null, "status": "error", "error": …}``."""
    problem = cli_error(error) if isinstance(error, TaoError) else error
    if as_json:
        _error_object(None, problem.format_message())
    raise problem


def _error_object(run: RunResult | None, message: str) -> None:
    data: JSONObject = run.to_json() if run is not None else {"run_id": None}
    data.update(status="error", error=message)
    echo_json(json.dumps(data, ensure_ascii=False))


class Latest:
    """Remembers the run being driven, so an interrupted command can still report it."""

    def __init__(self) -> None:
        self.result: RunResult | None = None

    def on_start(self, result: RunResult) -> None:
        self.result = result

    def on_step(self, result: RunResult, step: Step) -> None:
        pass

    def on_finish(self, result: RunResult) -> None:
        pass


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While the run goes, SIGTERM stops it as Ctrl-C does: recorded, children ended."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def conclude(result: RunResult, as_json: bool, *, recorded: bool = True) -> NoReturn:
    """Print the result (one JSON object with ``--json``) and exit with its status's code.

    ``recorded=False`` (``--no-log``): the run is nowhere to resume from, so no command
    that could not work is suggested.
    """
    if as_json:
        echo_json(json.dumps(result.to_json(), ensure_ascii=False))
    if result.status in (Status.INTERRUPTED, Status.CANCELLED):
        how = (
            f"continue it with: tao resume {result.run_id}"
            if recorded
            else "it was not recorded (--no-log), so it cannot be resumed"
        )
        echo(f"{result.status}: {how}", err=True)
    sys.exit(exit_code(result))


def interrupted(latest: Latest, as_json: bool, *, recorded: bool = True) -> NoReturn:
    """Ctrl-C or SIGTERM: the driver has recorded the run as interrupted; say so, exit 130."""
    result = latest.result
    if result is None:
        echo("interrupted before the run started", err=True)
        if as_json:
            echo_json(json.dumps({"run_id": None, "status": "interrupted"}))
        sys.exit(130)
    result.status = Status.INTERRUPTED if result.status is Status.RUNNING else result.status
    conclude(result, as_json, recorded=recorded)


def failed(error: TaoError, latest: Latest, as_json: bool) -> NoReturn:
    """A fatal error (the run log is gone, the backend refused): one line, or one object."""
    partial = getattr(error, "partial", None) if isinstance(error, FatalError) else None
    if not isinstance(partial, RunResult):  # the run so far, when the error carries one
        partial = None
    if as_json:
        _error_object(partial or latest.result, str(error))
    echo(f"Error: {error}", err=True)
    sys.exit(1)
