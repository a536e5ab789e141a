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

import dataclasses
from typing import cast

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from tao.format import (
    ERROR_KINDS,
    KIND_NOTES,
    STATUS_STYLES,
    format_action,
    format_call,
    format_time,
    labels_for,
    run_costs,
    step_costs,
    terminal_safe,
)
from tao.redact.scan import redact
from tao.redact.structured import redact_json
from tao.state.compaction import Compaction
from tao.state.config import PendingCall
from tao.state.jsontypes import JSON, JSONObject
from tao.state.result import RunResult, Status, Step, StepKind

__all__ = ["render_result_footer", "render_run_header", "render_step", "status_text"]


def safe_step(step: Step) -> Step:
    """The step's untrusted text with control characters escaped, for the terminal."""
    return step.replace(
        thought=_safe(step.thought),
        tool=_safe(step.tool),
        arguments=None if step.arguments is None else _safe_object(step.arguments),
        unparsed=_safe(step.unparsed),
        observation=_safe(step.observation),
        model=_safe(step.model),
        model_failures=[terminal_safe(redact(f)) for f in step.model_failures],
    )


def safe_result(result: RunResult) -> RunResult:
    """The run's untrusted text (task, answer, error, model) escaped, for the terminal."""
    return dataclasses.replace(
        result,
        task=terminal_safe(redact(result.task)),
        model=terminal_safe(result.model),
        answer=_safe(result.answer),
        error=_safe(result.error),
        stop_reason=_safe(result.stop_reason),
    )


def _safe(text: str | None) -> str | None:
    return None if text is None else terminal_safe(redact(text))


def _safe_object(arguments: JSONObject) -> JSONObject:
    """A call's arguments with secrets redacted and every string escaped for the terminal
    (a final answer lives here too)."""

    def walk(value: JSON) -> JSON:
        if isinstance(value, str):
            return terminal_safe(value)
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {terminal_safe(key): walk(item) for key, item in value.items()}
        return value

    redacted = redact_json(arguments)
    return cast(JSONObject, walk(redacted))


def status_text(status: str) -> Text:
    """A status word in its colour, e.g. green ``finished``."""
    return Text(str(status), style=STATUS_STYLES.get(status, "bold"))


def render_compaction(record: Compaction) -> Text:
    """A compaction's line, the same in ``tao runs show`` and the live trace (issue 27)."""
    return Text(f"⤓ {terminal_safe(record.describe())}", style="magenta")


def render_step(step: Step, *, lang: str = "en", compactions: bool = True) -> RenderableType:
    """One Thought → Action → Observation round, labelled in the run's language; without
    its ``compactions`` where they were shown as they happened (the live trace)."""
    step = safe_step(step)
    labels = labels_for(lang)
    failed = step.kind in ERROR_KINDS
    title = Text(f"#{step.index}", style="bold red" if failed else "bold")
    note = KIND_NOTES.get(step.kind)
    if note:
        title.append(f" {note}", style="red")
    parts: list[RenderableType] = [Rule(title, align="left", style="red" if failed else "dim")]
    for record in step.compactions if compactions else ():  # made for its request
        parts.append(render_compaction(record))
    for failure in step.model_failures:  # a fallback answered: why the models before did not
        parts.append(Text(f"model failed: {failure}", style="yellow"))
    if step.model is not None:
        parts.append(Text(f"answered by {step.model}", style="yellow"))

    if step.thought:
        parts.append(Text.assemble((f"{labels.thought}: ", "bold dim"), (step.thought, "italic")))

    if step.kind is StepKind.FINAL:
        parts.append(
            Text.assemble((f"{labels.answer}: ", "bold green"), (step.answer or "", "green"))
        )
    elif step.tool is not None:
        parts.append(
            Text.assemble(
                (f"{labels.action}: ", "bold cyan"),
                (step.tool, "bold cyan"),
                (terminal_safe(format_action(step)[len(step.tool) :]), "cyan"),
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
    if step.approval is not None:  # who let the call run (or refused it), when, from where
        parts.append(Text(_safe(step.approval.describe()) or "", style="magenta"))
    if step.child_run is not None:  # an agent as a tool: its run is in the log on its own
        parts.append(Text(f"child run {step.child_run} (tao runs show {step.child_run})", "dim"))
    parts.append(Text(step_costs(step), style="dim"))
    return Group(*parts)


def render_run_header(
    result: RunResult, *, status: str | None = None, holder: str | None = None
) -> RenderableType:
    """Who ran what, where, when: the top of ``tao runs show``.

    ``status`` overrides the result's status: the run log's summary knows that a run
    recorded as ``running`` whose process is gone is ``interrupted``. ``holder``: who acts
    for the run now (a worker, a ``tao resume``), from its live lease.
    """
    result = safe_result(result)
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
    if holder is not None:
        lines.append_text(Text.assemble(("\nheld by ", "dim"), (holder_words(holder), "cyan")))
    if result.parent_id is not None and result.parent_step is not None:  # Agent.as_tool
        lines.append_text(
            Text.assemble(
                ("\nchild of ", "dim"),
                (result.parent_id, "cyan"),
                (f", step {result.parent_step}", "dim"),
            )
        )
    elif result.parent_id is not None:  # a follow-up: where its conversation began
        lines.append_text(Text.assemble(("\ncontinues ", "dim"), (result.parent_id, "cyan")))
    return Panel(lines, border_style="dim", expand=True)


def holder_words(holder: str) -> str:
    """``host vm, pid 4242`` for a tao process or worker (``host:pid:random``), else as is."""
    parts = holder.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return terminal_safe(f"host {parts[0]}, pid {parts[1]}")
    return terminal_safe(holder)


def _unfinished_note(result: RunResult, status: str) -> str | None:
    """What a person can do about a run that has not ended."""
    if status == Status.QUEUED:
        return f"waiting for a worker (tao worker); wait for it with: tao runs wait {result.run_id}"
    if status == Status.RUNNING:
        return "the run is still in progress"
    if status == Status.AWAITING_APPROVAL:
        run = result.run_id
        return (
            f"decide with: tao runs approve {run}   or: tao runs deny {run} --reason '…'\n"
            f"(one call: --call ID), then continue it with: tao resume {run}"
        )
    if status == Status.INTERRUPTED:
        return f"continue it with: tao resume {result.run_id}"
    return None


def render_pending(
    tool: str,
    arguments: JSONObject,
    effects: tuple[str, ...],
    preview: str | None,
    call_id: str = "",
    warning: str | None = None,
    thought: str | None = None,
    origin: str | None = None,
) -> RenderableType:
    """A call waiting for a person: why the model wants it (its Thought), what it is, what
    it does, and its diff in colour; ``warning``: that a crash cut it short and it may
    have taken effect (SPEC R1); ``origin``: the child run that holds the call (issue 31).
    All of it is shown before the person is asked."""
    head = Text()
    if thought:
        head.append("Thought: ", style="bold dim")
        head.append(terminal_safe(redact(thought)) + "\n", style="italic")
    head.append_text(
        Text.assemble(
            (f"[{call_id}] " if call_id else "", "dim"),
            (terminal_safe(redact(format_call(tool, None, arguments))), "bold"),
            ("  — it " + ", ".join(effects or ("has side effects",)), "yellow"),
        )
    )
    if origin:
        head.append(f"\n  ↳ {terminal_safe(origin)}", style="dim")
    if warning:
        head.append(f"\n  ⚠ {warning}", style="bold red")
    if not preview:
        return head
    diff = Text()
    for line in terminal_safe(redact(preview)).splitlines():
        style = _DIFF_STYLES.get(line[:1], "") if not line.startswith(("+++", "---")) else "bold"
        diff.append(line + "\n", style=style)
    return Group(head, Panel(diff, border_style="yellow", expand=False))


_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def render_pending_call(call: PendingCall) -> RenderableType:
    """:func:`render_pending` of a recorded waiting call (``runs show``, ``runs approve``),
    its arguments redacted by key first, as every other surface shows them (S8)."""
    arguments = redact_json(call.arguments)
    return render_pending(
        call.tool,
        arguments if isinstance(arguments, dict) else {},
        call.effects,
        call.preview,
        call.id,
        call.warning,
        call.thought,
        call.origin,
    )


def render_result_footer(result: RunResult, *, status: str | None = None) -> RenderableType:
    """How the run ended: status, answer or error, and what the whole run cost."""
    result = safe_result(result)
    labels = labels_for(result.lang)
    shown = status or str(result.status)
    parts: list[RenderableType] = [Rule(style="dim")]
    headline = Text.assemble(status_text(shown))
    if result.forced:  # no plain success: the model was made to answer (issue 30)
        why = "repeats spent" if "repeat" in (result.stop_reason or "") else "step budget spent"
        headline.append(f"  (answer forced: {why}; the model was not done, check it)", "yellow")
    elif result.stop_reason:
        headline.append(f"  (budget spent: {result.stop_reason})", style="yellow")
    parts.append(headline)
    if result.answer is not None:
        parts.append(
            Panel(
                Text(result.answer),
                title=Text(labels.answer, style="bold yellow" if result.forced else "bold green"),
                title_align="left",
                border_style="yellow" if result.forced else "green",
                expand=False,
            )
        )
    if result.error:
        parts.append(Text.assemble(("Error: ", "bold red"), (result.error, "red")))
    parts.extend(render_pending_call(call) for call in result.pending or ())
    note = _unfinished_note(result, shown)
    if note:
        parts.append(Text(note, style="yellow"))
    cost = run_costs(result, shown, result.duration_s)
    parts.append(Text(cost, style="dim"))
    return Group(*parts)
