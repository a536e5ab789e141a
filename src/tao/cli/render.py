"""Rich renderables for a run's trace in the terminal: ``tao run`` (live) and ``tao runs show``.

Reading a trace should feel like reading the seeds: the Thought quiet, the
Action standing out, the Observation boxed as what the world answered, errors
red, and what each step cost in one subtle line.

Every piece of model or tool text goes through :class:`rich.text.Text`, never
into markup, so an observation containing ``[bold]`` or ``[/]`` prints as
written and cannot restyle (or break) the display. The words and numbers come from
:mod:`tao.format`, which the web page shares.

    console.print(render_step(step, lang=result.lang))
    console.print(render_result_footer(result))
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from tao.format import (
    ERROR_KINDS,
    KIND_NOTES,
    STATUS_STYLES,
    format_action,
    format_time,
    labels_for,
    run_costs,
    step_costs,
)
from tao.trace import RunResult, Status, Step, StepKind

__all__ = ["render_result_footer", "render_run_header", "render_step", "status_text"]


def status_text(status: str) -> Text:
    """A status word in its colour, e.g. green ``finished``."""
    return Text(str(status), style=STATUS_STYLES.get(status, "bold"))


def render_step(step: Step, *, lang: str = "en") -> RenderableType:
    """One Thought → Action → Observation round, labelled in the run's language."""
    labels = labels_for(lang)
    failed = step.kind in ERROR_KINDS
    title = Text(f"#{step.index}", style="bold red" if failed else "bold")
    note = KIND_NOTES.get(step.kind)
    if note:
        title.append(f" {note}", style="red")
    parts: list[RenderableType] = [Rule(title, align="left", style="red" if failed else "dim")]

    if step.thought:
        parts.append(Text.assemble((f"{labels.thought}: ", "bold dim"), (step.thought, "italic")))

    if step.kind is StepKind.FINAL:
        parts.append(
            Text.assemble((f"{labels.answer}: ", "bold green"), (step.argument or "", "green"))
        )
    elif step.tool is not None:
        parts.append(
            Text.assemble(
                (f"{labels.action}: ", "bold cyan"),
                (step.tool, "bold cyan"),
                (format_action(step)[len(step.tool) :], "cyan"),
            )
        )
    elif step.kind is StepKind.PARSE_ERROR:
        parts.append(Text(f"{labels.action}: –", style="bold red"))

    if step.observation is not None and step.kind is not StepKind.FINAL:
        is_error = failed or step.observation.startswith("Error")
        parts.append(
            Panel(
                Text(step.observation),
                title=Text(labels.observation, style="bold red" if is_error else "bold"),
                title_align="left",
                border_style="red" if is_error else "blue",
                expand=False,
            )
        )
    parts.append(Text(step_costs(step), style="dim"))
    return Group(*parts)


def render_run_header(result: RunResult, *, status: str | None = None) -> RenderableType:
    """Who ran what, where, when: the top of ``tao runs show``.

    ``status`` overrides the result's status: the run log's summary knows that a run
    recorded as ``running`` whose process is gone is ``interrupted``.
    """
    labels = labels_for(result.lang)
    lines = Text.assemble(
        (f"{labels.task}: ", "bold"),
        (result.task, "bold"),
        ("\nrun ", "dim"),
        (result.run_id, "cyan"),
        ("  model ", "dim"),
        (result.model, "cyan"),
        ("  lang ", "dim"),
        result.lang,
        ("\nstarted ", "dim"),
        format_time(result.started_at),
        ("  status ", "dim"),
        status_text(status or str(result.status)),
    )
    return Panel(lines, border_style="dim", expand=True)


def _unfinished_note(result: RunResult, status: str) -> str | None:
    """What a person can do about a run that has not ended."""
    if status == Status.RUNNING:
        return "the run is still in progress"
    if status in (Status.INTERRUPTED, Status.AWAITING_APPROVAL):
        return f"continue it with: tao resume {result.run_id}"
    return None


def render_result_footer(result: RunResult, *, status: str | None = None) -> RenderableType:
    """How the run ended: status, answer or error, and what the whole run cost."""
    labels = labels_for(result.lang)
    shown = status or str(result.status)
    parts: list[RenderableType] = [Rule(style="dim")]
    headline = Text.assemble(status_text(shown))
    if result.stop_reason:
        headline.append(f"  (budget spent: {result.stop_reason})", style="yellow")
    parts.append(headline)
    if result.answer is not None:
        parts.append(
            Panel(
                Text(result.answer),
                title=Text(labels.answer, style="bold green"),
                title_align="left",
                border_style="green",
                expand=False,
            )
        )
    if result.error:
        parts.append(Text.assemble(("Error: ", "bold red"), (result.error, "red")))
    note = _unfinished_note(result, shown)
    if note:
        parts.append(Text(note, style="yellow"))
    cost = run_costs(result, shown, result.duration_s)
    parts.append(Text(cost, style="dim"))
    return Group(*parts)
