"""``tao submit``, ``tao worker`` and ``tao runs wait``: runs on a queue of workers (issue 28).

    tao submit "summarise the logs" -m openai:gpt-4o-mini -t files --project .   # prints the id
    tao worker --concurrency 4            # on each machine; SIGTERM/Ctrl-C: stops cleanly
    tao runs wait 0193ab                  # until it ends or pauses; exits with its status's code

With ``TAO_DATABASE_URL`` (PostgreSQL) every machine shares the queue and the run log.
Needs ``pip install 'tao[workers]'``.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from types import FrameType
from typing import Any

import click

from tao.cli.ending import EXIT, RunCommand, not_started
from tao.cli.settings import config_values, split_options
from tao.cli.terminal import echo, echo_json
from tao.cli.usage import cli_error
from tao.errors import ConfigError, TaoError
from tao.state.config import RunConfig
from tao.state.result import Status
from tao.state.setting import unrecorded
from tao.store.factory import open_store

#: ``tao run`` options that need this process (a person, a connection, no log): a submitted
#: run is run by a worker elsewhere, later.
_HERE_ONLY = {
    "human_tools": "--human-tools",
    "mcp_commands": "--mcp",
    "mcp_urls": "--mcp-url",
    "no_log": "--no-log",
    "parent": "--continue",
}
#: Statuses a waited-for run may still leave by itself (a worker takes it up again).
_UNDER_WAY = (Status.QUEUED, Status.RUNNING, Status.INTERRUPTED)


def _submit(task: str, queue: str | None, wait: bool, **options: Any) -> None:
    """Put TASK on a queue of workers (`tao worker`); prints its run id (status queued).

    \b
    tao submit "What is 17 * 23 + 4?" -m local -t calc
    tao submit "clean the build folder" -t files,write --project . --wait
    """
    from tao.workers.queue import submit_run

    as_json = bool(options["as_json"])
    given = [flag for key, flag in _HERE_ONLY.items() if options.get(key)]
    try:
        if given:
            raise ConfigError(f"{', '.join(given)} cannot go with tao submit: a worker runs it")
        config = RunConfig(**config_values(split_options(options, "run")[0]))  # type: ignore[arg-type]
        with open_store() as store:
            run_id = submit_run(store, task, config.model or "", config, queue)
    except (TaoError, click.ClickException) as error:
        not_started(error, as_json)
    if wait:
        _wait(run_id, as_json, timeout=None)
    if as_json:
        echo_json(json.dumps({"run_id": run_id, "status": str(Status.QUEUED)}))
    else:
        echo(run_id)


def submit_command(run_params: list[click.Parameter]) -> click.Command:
    """``tao submit``: ``tao run``'s options (``run_params``, which :mod:`tao.cli.main`
    passes in, so this module sits beside ``tao run`` rather than above it) less those the
    run log does not record, since a worker runs the task later."""
    return RunCommand(
        "submit",
        callback=_submit,
        params=[
            *(p for p in run_params if p.name not in unrecorded(RunConfig)),
            click.Option(["--queue"], metavar="NAME", help="The queue (default: tao)."),
            click.Option(["--wait"], is_flag=True, help="Wait until it ends or pauses."),
        ],
        help=_submit.__doc__,
        short_help="Put a task on a queue of workers; prints its run id.",
    )


@click.command("worker")
@click.option("-c", "--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--queue", default="tao", show_default=True, help="The queue to take runs from.")
def worker(concurrency: int, queue: str) -> None:
    """Run queued runs, CONCURRENCY at a time, until SIGTERM or Ctrl-C.

    Told to stop, it takes no new run, interrupts the runs it holds (recorded, resumable)
    and hands them back to the queue; another worker continues them at once.
    """
    try:
        from tao.workers.worker import Worker

        serving = Worker(queue=queue, concurrency=concurrency)
    except TaoError as error:
        raise cli_error(error) from None

    def stop(signum: int, frame: FrameType | None) -> None:
        serving.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def ready() -> None:
        echo(f"worker {serving.id}: taking runs from queue {queue!r}, {concurrency} at a time")

    serving.serve(ready=ready)
    echo(f"worker {serving.id}: stopped", err=True)


@click.command("wait")
@click.argument("run_id")
@click.option("--timeout", type=click.FloatRange(min=0), help="Give up after SECONDS (exit 1).")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary as JSON.")
def wait_command(run_id: str, timeout: float | None, as_json: bool) -> None:
    """Wait until a run ends or pauses for approval; exit with its status's code."""
    _wait(run_id, as_json, timeout)


def _wait(run_id: str, as_json: bool, timeout: float | None) -> None:
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        with open_store() as store:
            while True:
                summary = store.get_summary(run_id)
                if summary.status not in _UNDER_WAY:
                    break
                queued = summary.config is not None and summary.config.queue is not None
                if summary.status is Status.INTERRUPTED and not queued:
                    break  # nobody takes it up by itself: `tao resume`
                if deadline is not None and time.monotonic() >= deadline:
                    echo(f"run {summary.run_id} is still {summary.status}", err=True)
                    sys.exit(1)
                time.sleep(0.2)
    except TaoError as error:
        raise cli_error(error) from None
    if as_json:
        echo_json(json.dumps(summary.to_json(), ensure_ascii=False))
    else:
        echo(
            f"{summary.run_id} {summary.status}" + (f": {summary.answer}" if summary.answer else "")
        )
    sys.exit(EXIT.get(summary.status, 1))
