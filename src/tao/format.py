"""How a run reads to a person, shared by the terminal (``tao run``, ``tao runs show``) and the
web page (``tao ui``): status words and colours, durations, times, actions, costs.

Everything here is pure text: no rich, no HTML, no I/O. The terminal wraps these strings
in :class:`rich.text.Text` (:mod:`tao.cli.render`) and the web page escapes them into HTML
(:mod:`tao.ui.pages`), so both say the same thing in the same words.

    format_seconds(4.2)           # '4.20 s'
    format_action(step)           # 'calculator[17 * 23 + 4]'
    status_word(Status.MAX_STEPS) # 'max steps'
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from tao.protocol.labels import LABELS, Labels
from tao.state.status import Status, StepKind

if TYPE_CHECKING:  # rendered, never built here
    from tao.state.result import RunResult, Step

__all__ = [
    "ERROR_KINDS",
    "KIND_NOTES",
    "STATUS_STYLES",
    "UNFINISHED_STATUSES",
    "format_action",
    "format_call",
    "format_seconds",
    "format_time",
    "labels_for",
    "plural",
    "run_costs",
    "status_word",
    "step_costs",
]

#: The colour of each run status, as a rich style (the web page maps the same names to CSS).
STATUS_STYLES: dict[str, str] = {
    Status.RUNNING: "bold blue",
    Status.FINISHED: "bold green",
    Status.MAX_STEPS: "bold yellow",
    Status.AWAITING_APPROVAL: "bold magenta",
    Status.ERROR: "bold red",
    Status.INTERRUPTED: "bold red",
    Status.CANCELLED: "bold yellow",
    Status.QUEUED: "bold cyan",
}

_STATUS_WORDS: dict[str, str] = {
    Status.AWAITING_APPROVAL: "awaiting approval",
    Status.MAX_STEPS: "max steps",
}

#: Statuses of a run that has not ended: it has no duration yet, and may still change.
UNFINISHED_STATUSES = frozenset(
    {Status.QUEUED, Status.RUNNING, Status.INTERRUPTED, Status.AWAITING_APPROVAL}
)

#: Steps that went wrong; both renderers show them red.
ERROR_KINDS = frozenset({StepKind.PARSE_ERROR, StepKind.UNKNOWN_TOOL, StepKind.MODEL_ERROR})
#: What a failed step's header says about it.
KIND_NOTES: dict[StepKind, str] = {
    StepKind.PARSE_ERROR: "no action could be read",
    StepKind.UNKNOWN_TOOL: "unknown tool",
    StepKind.MODEL_ERROR: "model error",
}


def status_word(status: str) -> str:
    """The status as a person reads it: ``awaiting approval``, ``max steps``, ``finished``."""
    return _STATUS_WORDS.get(status, str(status))


def labels_for(lang: str) -> Labels:
    """The run's label language (Thought, Action, ...), English when unknown."""
    return LABELS.get(lang, LABELS["en"])


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 step``, ``2 steps``, ``0 steps``; ``many`` when adding an ``s`` is wrong.

    Every count a person reads goes through here, so the terminal and the web page
    never say ``1 steps``.
    """
    return f"{count:,} {word if count == 1 else many or word + 's'}"


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


def format_call(tool: str, argument: str | None, arguments: object) -> str:
    """A call as the protocol writes it: ``tool[argument]`` or ``tool(key=value, ...)``."""
    if argument is not None:
        return f"{tool}[{argument}]"
    if isinstance(arguments, dict) and arguments:
        shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
        return f"{tool}({shown})"
    return tool


def format_action(step: Step) -> str:
    """The step's action as it was understood: ``tool(key=value, ...)`` once its arguments
    were bound, so a mis-bound argument shows (issue 30); the text as written,
    ``tool[argument]``, only when it could not be bound."""
    if step.arguments is not None:
        return (
            format_call(step.tool or "?", None, step.arguments)
            if step.arguments
            else (f"{step.tool or '?'}()")
        )
    return format_call(step.tool or "?", step.unparsed, step.arguments)


def step_costs(step: Step) -> str:
    """``1.20 s · model 1.10 s · 120 in / 30 out tokens · $0.0004``: what one step cost."""
    parts = [format_seconds(step.duration_s)]
    if step.model_duration_s or step.tool_duration_s:
        parts.append(f"model {format_seconds(step.model_duration_s)}")
        if step.tool_duration_s:
            parts.append(f"tool {format_seconds(step.tool_duration_s)}")
    tokens = f"{step.input_tokens:,} in / {step.output_tokens:,} out tokens"
    if step.evaluated_tokens is not None and step.evaluated_tokens != step.input_tokens:
        tokens += f" ({step.evaluated_tokens:,} evaluated)"
    parts.append(tokens)
    if step.cost_usd is not None and not step.call_index:  # the run's footer says "unknown"
        parts.append(format_cost(step.cost_usd))
    return " · ".join(parts)


def format_cost(cost: float | None) -> str:
    """``$0.0123`` (4 decimals; 6 below $0.0001), or ``unknown``: how tao shows money."""
    if cost is None:
        return "unknown"
    if 0 < cost < 0.0001:
        return f"${cost:.6f}"
    return f"${cost:.4f}"


def run_costs(result: RunResult, status: str, duration_s: float | None) -> str:
    """``3 steps · 3 model calls · 900 in / 80 out tokens · cost $0.0012 · 4.20 s``: what the
    whole run cost (``cost unknown`` when a model has no price, :mod:`tao.models.pricing`).

    An unfinished run (``status`` in :data:`UNFINISHED_STATUSES`) shows no duration. A
    paused run counts the reply whose calls wait for a person: it was a model call, though
    its step (and its tokens) are recorded only once the calls are decided and run; the
    footer said "0 model calls" under a call the model had asked for.
    """
    usage = result.usage
    waiting = len(result.pending or ())
    calls = usage.model_calls + (1 if waiting else 0)
    cost = f"{plural(len(result.steps), 'step')} · {plural(calls, 'model call')} · "
    if waiting:
        cost += f"{plural(waiting, 'call')} awaiting approval · "
    cost += f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens"
    if usage.evaluated_tokens is not None:
        cost += f" ({usage.evaluated_tokens:,} evaluated)"
    cost += f" · cost {format_cost(usage.cost_usd)}"
    if status not in UNFINISHED_STATUSES:
        cost += f" · {format_seconds(duration_s)}"
    return cost


def _escapes() -> dict[int, str]:
    """C0 controls (but newline and tab), DEL, C1 controls and the bidi overrides that can
    reorder what a terminal shows (Trojan Source): each becomes its visible escape."""
    codes = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F)]
    codes += [*range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
    return {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in codes if c not in (9, 10)}


#: Each character a terminal could act on, and the visible escape it is shown as.
TERMINAL_ESCAPES = _escapes()


def terminal_safe(text: str) -> str:
    """``text`` with every control character shown as an escape, never acted on (SPEC S9).

    Model output, tool output and run-log text are untrusted: an ``ESC ]0;title BEL``
    or ``ESC [2J`` inside them would retitle or clear the user's terminal.
    """
    return text.translate(TERMINAL_ESCAPES)
