"""``tao runs list|show|export``: read the run log from the shell (SPEC M3).

    tao runs list --limit 5 --status finished
    tao runs show 0193f2a1c4      # any unique prefix of a run id
    tao runs export 0193f2a1c4 --format jsonl -o run.jsonl
    tao runs export 0193f2a1c4 --full   # each step with its whole model input

The log is ``$TAO_HOME/tao.db``. A run-log problem (corrupt file, newer
schema) is one line on stderr and exit code 1, never a traceback; an unknown or
ambiguous id is a usage error, exit code 2.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal, ParamSpec, TypeVar

import click
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from tao.cli.render import (
    holder_words,
    render_result_footer,
    render_run_header,
    render_step,
    status_text,
)
from tao.cli.terminal import console as safe_console
from tao.cli.terminal import echo, echo_json
from tao.cli.usage import UsageProblem, cli_error
from tao.errors import StoreError
from tao.format import format_cost, format_time, plural, terminal_safe
from tao.paths import private_open
from tao.redact import redact
from tao.state.result import Status
from tao.store.factory import open_store
from tao.store.query import STATUSES, RunSummary

P = ParamSpec("P")
R = TypeVar("R")

_MODEL_WIDTH = 24
#: Dropped in this order when the terminal is too narrow: Model, Cost, Tokens, Started, Steps.
_DROPPED_FIRST = (6, 5, 4, 1, 3)
_MIN_TASK_WIDTH = 24
_NUMBERS = ("Steps", "Tokens", "Cost")
#: Marks a follow-up's task in ``tao runs list`` (``tao runs show`` names the run it continues).
FOLLOW_UP = "↳ "


def _store_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Report a :class:`StoreError` as ``Error: …`` on stderr: exit code 2 for an unknown
    run id (a typo), 1 for a run log that cannot be read."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except StoreError as error:
            raise cli_error(error) from None

    return wrapper


def _console() -> Console:
    # highlight=False: numbers and paths in model text keep their plain colour.
    return safe_console()


def _one_line(text: str, width: int) -> str:
    """One row's cell: escaped first (SPEC S9), so the width counts what is shown."""
    flat = " ".join(terminal_safe(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.group()
def runs() -> None:
    """List, show and export recorded runs (the run log in $TAO_HOME/tao.db)."""


@runs.command("list")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--status", type=click.Choice(STATUSES), help="Only runs with this status.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
@_store_errors
def list_command(limit: int, status: str | None, as_json: bool) -> None:
    """The most recent runs, newest first."""
    with open_store() as store:
        summaries = store.list_runs(limit=limit, status=status)
        prefixes = store.unique_prefixes(s.run_id for s in summaries)
    if as_json:
        echo_json(json.dumps([s.to_json() for s in summaries], ensure_ascii=False, indent=2))
        return
    console = _console()
    if not summaries:
        which = f" with status {status}" if status else ""
        console.print(Text(f"No runs{which} in {store.where} yet."), style="dim")
        return
    rows = [
        [
            prefixes[summary.run_id],
            format_time(summary.started_at, seconds=False),
            terminal_safe(summary.status) + _held_by(summary.holder),
            str(summary.steps),
            f"{summary.tokens:,}",
            format_cost(summary.cost_usd),
            _one_line(summary.model, _MODEL_WIDTH),
        ]
        for summary in summaries
    ]
    headers = ["ID", "Started", "Status", "Steps", "Tokens", "Cost", "Model"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    # Ids, statuses and headers are never cut, and the task wraps in what is left: on a
    # narrow terminal the least needed columns go first (``tao runs show`` has them all).
    shown = list(range(len(headers)))
    for dropped in _DROPPED_FIRST:
        if console.width - sum(widths[i] + 2 for i in shown) >= _MIN_TASK_WIDTH:
            break
        shown.remove(dropped)
    task_width = max(console.width - sum(widths[i] + 2 for i in shown), _MIN_TASK_WIDTH // 2)
    table = Table(header_style="bold", box=None, pad_edge=False)
    for i in shown:
        justify: Literal["right", "left"] = "right" if headers[i] in _NUMBERS else "left"
        table.add_column(headers[i], no_wrap=True, justify=justify, width=widths[i])
    table.add_column("Task", overflow="fold", width=task_width)  # wrapped, never cut
    for row, summary in zip(rows, summaries, strict=True):
        state = status_text(terminal_safe(summary.status))
        state.append(row[2][len(state) :], style="dim")  # who holds it, if anyone
        every: list[RenderableType] = [Text(row[0], style="cyan"), row[1], state]
        every += [row[3], row[4], row[5], Text(row[6])]
        cells = [every[i] for i in shown]
        table.add_row(*cells, Text(_lineage(summary) + " ".join(summary.task.split())))
    console.print(table)


def _lineage(summary: RunSummary) -> str:
    """What starts a run's task in the list: a child run (``Agent.as_tool``) names its
    parent and step, a follow-up (``tao run --continue``) is marked."""
    if summary.parent_id is None:
        return ""
    if summary.parent_step is None:
        return FOLLOW_UP
    return f"{FOLLOW_UP}child of {summary.parent_id[:12]}, step {summary.parent_step}: "


def _held_by(holder: str | None) -> str:
    """`` @host:pid`` of the process or worker acting for a run now; empty when none."""
    if holder is None:
        return ""
    words = holder_words(holder)  # "host vm, pid 42", or a worker's own id
    return " @" + (words[5:].replace(", pid ", ":") if words.startswith("host ") else words)


@runs.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as one JSON object.")
@_store_errors
def show_command(run_id: str, as_json: bool) -> None:
    """Every step of one run: thought, action, observation, timings, tokens."""
    with open_store() as store:
        summary = store.get_summary(run_id)
        result = store.get_run(summary.run_id)
        interrupted = summary.status is Status.INTERRUPTED
        waiting = summary.status is Status.AWAITING_APPROVAL
        stopped = store.load_state(summary.run_id) if interrupted or waiting else None
    if as_json:
        echo_json(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
        return
    console = _console()
    console.print(render_run_header(result, status=summary.status, holder=summary.holder))
    for step in result.steps:
        console.print(render_step(step, lang=result.lang))
    console.print(render_result_footer(result, status=summary.status))
    for call_id, record in stopped.approvals.items() if waiting and stopped else ():
        line = f"call {call_id}: {record.describe()}; continue it with: tao resume {result.run_id}"
        console.print(terminal_safe(redact(line)), style="magenta", markup=False)
    for call in stopped.cut_short if stopped is not None else ():
        console.print(
            f"call {call} (side effects) was running when the process stopped; it may have "
            "taken effect. `tao resume` asks you whether to run it again.",
            style="bold red",
            markup=False,
        )


@runs.command("export")
@click.argument("run_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl"]),
    default="jsonl",
    show_default=True,
    help="jsonl: a run record, then one step record per line.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write to this file instead of standard output.",
)
@click.option(
    "--full",
    is_flag=True,
    help="Give each step its whole model input, not only the messages new since the step before.",
)
@_store_errors
def export_command(run_id: str, fmt: str, output: Path | None, full: bool) -> None:
    """One run as JSON lines: {"type": "run", ...} first, then {"type": "step", ...} per step.

    A step's model_input holds the messages new since the step before, from index
    model_input_from of its whole input; --full gives each step its whole input.
    """
    with open_store() as store:
        lines = list(store.export_jsonl(run_id, full=full))  # fail before touching the output
    if output is None:
        for line in lines:
            echo_json(line)
        return
    try:
        # owner-only, like the run log it comes from (tasks, answers, approvals)
        with open(output, "w", encoding="utf-8", opener=private_open) as handle:
            handle.write("".join(line + "\n" for line in lines))
    except OSError as error:
        raise UsageProblem(f"cannot write {output}: {error}") from None
    echo(f"Wrote {plural(len(lines), 'line')} ({fmt}) to {output}", err=True)
