"""Rich renderables for a run's trace, shared by ``tao run`` (live) and ``tao runs show``.

Reading a trace should feel like reading the seeds: the Thought quiet, the
Action standing out, the Observation boxed as what the world answered, errors
red, and what each step cost in one subtle line.

Every piece of model or tool text goes through :class:`rich.text.Text`, never
into markup, so an observation containing ``[bold]`` or ``[/]`` prints as
written and cannot restyle (or break) the display.

    console.print(render_step(step, lang=result.lang))
    console.print(render_result_footer(result))
"""

from __future__ import annotations

from datetime import datetime

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from tao.protocol.labels import LABELS, Labels
from tao.trace import RunResult, Step, StepKind

#: Colour of each run status (SPEC L1) and of the run log's ``running``/``interrupted``.
STATUS_STYLES: dict[str, str] = {
    "finished": "bold green",
    "max_steps": "bold yellow",
    "awaiting_approval": "bold magenta",
    "error": "bold red",
    "running": "bold blue",
    "interrupted": "bold red",
}

_ERROR_KINDS = {StepKind.PARSE_ERROR, StepKind.UNKNOWN_TOOL, StepKind.MODEL_ERROR}
_KIND_NOTES = {
    StepKind.PARSE_ERROR: "no action could be read",
    StepKind.UNKNOWN_TOOL: "unknown tool",
    StepKind.MODEL_ERROR: "model error",
}


def status_text(status: str) -> Text:
    """A status word in its colour, e.g. green ``finished``."""
    return Text(status, style=STATUS_STYLES.get(status, "bold"))


def format_seconds(seconds: float | None) -> str:
    """``420 ms``, ``4.20 s``, ``12.3 s``, ``2 min 05 s``: exact when short, plain when long."""
    if seconds is None:
        return "–"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def format_time(timestamp: float | None, *, seconds: bool = True) -> str:
    """A Unix time as local ``YYYY-MM-DD HH:MM[:SS]`` (``–`` when unknown)."""
    if not timestamp:
        return "–"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M" + (":%S" if seconds else ""))


def format_action(step: Step) -> str:
    """The action as the protocol writes it: ``tool[argument]`` or ``tool(key=value)``."""
    tool = step.tool or "?"
    if step.argument is not None:
        return f"{tool}[{step.argument}]"
    if step.arguments:
        shown = ", ".join(f"{key}={value!r}" for key, value in step.arguments.items())
        return f"{tool}({shown})"
    return tool


def _labels(lang: str) -> Labels:
    return LABELS.get(lang, LABELS["en"])


def _step_costs(step: Step) -> Text:
    parts = [format_seconds(step.duration_s)]
    if step.model_duration_s or step.tool_duration_s:
        parts.append(f"model {format_seconds(step.model_duration_s)}")
        if step.tool_duration_s:
            parts.append(f"tool {format_seconds(step.tool_duration_s)}")
    tokens = f"{step.input_tokens:,} in / {step.output_tokens:,} out tokens"
    if step.evaluated_tokens is not None and step.evaluated_tokens != step.input_tokens:
        tokens += f" ({step.evaluated_tokens:,} evaluated)"
    parts.append(tokens)
    return Text(" · ".join(parts), style="dim")


def render_step(step: Step, *, lang: str = "en") -> RenderableType:
    """One Thought → Action → Observation round, labelled in the run's language."""
    labels = _labels(lang)
    failed = step.kind in _ERROR_KINDS
    title = Text(f"#{step.index}", style="bold red" if failed else "bold")
    note = _KIND_NOTES.get(step.kind)
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
    parts.append(_step_costs(step))
    return Group(*parts)


def render_run_header(result: RunResult, *, status: str | None = None) -> RenderableType:
    """Who ran what, where, when: the top of ``tao runs show``.

    ``status`` overrides the result's status, for the run log's ``running``
    and ``interrupted`` states that :class:`tao.Status` cannot express.
    """
    labels = _labels(result.lang)
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


def render_result_footer(result: RunResult, *, status: str | None = None) -> RenderableType:
    """How the run ended: status, answer or error, and what the whole run cost."""
    labels = _labels(result.lang)
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
    usage = result.usage
    cost = (
        f"{len(result.steps)} steps · {usage.model_calls} model calls · "
        f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens"
    )
    if usage.evaluated_tokens is not None:
        cost += f" ({usage.evaluated_tokens:,} evaluated)"
    if shown not in ("running", "interrupted"):  # an unfinished run has no duration yet
        cost += f" · {format_seconds(result.duration_s)}"
    parts.append(Text(cost, style="dim"))
    return Group(*parts)
