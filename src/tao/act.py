"""Turning a requested tool call into an Observation (SPEC L4, L6, S3).

Every way a call can go wrong ends here as text the model can react to: an
unknown tool, arguments that do not fit, a refusal, a crash, a person's "no".
Nothing raised by a tool escapes, and every observation is cut to its tool's
size. Calls with side effects run only once a person approved that exact call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Literal

from tao.errors import ToolError
from tao.frozen import frozen
from tao.jsontypes import JSONObject
from tao.redact import redact
from tao.tools.base import Tool, cut, normal_name
from tao.tools.limits import TimedOut, run_with_limit
from tao.trace import StepKind

#: Runs one validated call; the default calls the tool, ``--human-tools`` asks a person.
Executor = Callable[[Tool, JSONObject], str]
#: Decides on a call with side effects: ``True`` runs it, ``False`` or a reason refuses it.
Approver = Callable[[Tool, JSONObject], "bool | str"]


def call_tool(tool: Tool, arguments: JSONObject) -> str:
    """The default executor: run the function; ``prepare`` has validated the arguments."""
    return tool.call(arguments)


@frozen
class Call:
    """A tool call as the model asked for it, in either protocol."""

    tool: str
    argument: str
    form: Literal["bracket", "call", "native"]
    #: Already-structured arguments (native tool calling); ``None`` means bind ``argument``.
    arguments: JSONObject | None = None
    call_id: str | None = None


@frozen
class Ready:
    """A call whose tool exists and whose arguments passed validation."""

    call: Call
    tool: Tool
    arguments: JSONObject


@frozen
class Outcome:
    """What a call came to: the Observation and how the step that records it is filed."""

    kind: StepKind
    observation: str
    tool: str
    arguments: JSONObject | None
    duration_s: float = 0.0
    #: The tool whose output this is, when that output is untrusted data (SPEC S4).
    source: str | None = None


def find_tool(name: str, tools: Mapping[str, Tool]) -> Tool | None:
    """The tool whose name equals ``name`` after :func:`normal_name`, and no other fallback.

    The paper's prompts write ``Search[...]``; models write ``read-file``. The
    registry refused two tools with one normal name at startup, so at most one
    tool can match (issue 12 item 9).
    """
    if name in tools:
        return tools[name]
    wanted = normal_name(name)
    return next((tool for key, tool in tools.items() if normal_name(key) == wanted), None)


def prepare(call: Call, tools: Mapping[str, Tool]) -> Ready | Outcome:
    """Find the tool and validate the arguments; anything wrong is already an Outcome."""
    tool = find_tool(call.tool, tools)
    if tool is None:
        available = ", ".join(tools)
        return Outcome(
            StepKind.UNKNOWN_TOOL,
            f"Unknown tool: {call.tool}. Available: {available}",
            call.tool,
            None,
        )
    try:
        raw: Mapping[str, object]
        if call.form == "native":
            raw = call.arguments if call.arguments else _decode(call.argument)
        elif call.arguments is not None:  # a JSON object in any text dialect: bind by name
            raw = tool.bind_object(call.arguments)
        else:
            raw = tool.bind(call.argument, call.form)
        return Ready(call, tool, tool.validate(raw))
    except ToolError as error:
        return Outcome(
            StepKind.ACTION, cut(f"Error: {error}", tool.max_chars, "head"), tool.name, None
        )


def _decode(text: str) -> JSONObject:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ToolError(f"the arguments are not valid JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise ToolError("the arguments must be a JSON object")
    return value


def needs_approval(ready: Ready) -> bool:
    """Read-only tools run; anything that writes, deletes, sends or pays asks first (S3)."""
    return not ready.tool.read_only


def refuse(ready: Ready, decision: bool | str | None) -> Outcome:
    """The Observation for a call a person denied (with their reason, if they gave one)."""
    reason = f": {decision}" if isinstance(decision, str) and decision.strip() else ""
    effects = ", ".join(ready.tool.effects)
    return _not_run(
        ready, f"a person denied {ready.tool.name} ({effects}){reason}. It was not run."
    )


def interrupted(ready: Ready) -> Outcome:
    """A call with side effects that was running when the process died: never run twice."""
    return _not_run(
        ready,
        f"the run stopped while {ready.tool.name} was running; it may or may not have "
        "taken effect, and it was not run again. Check before retrying.",
    )


def _not_run(ready: Ready, why: str) -> Outcome:
    return Outcome(StepKind.ACTION, f"Error: {why}", ready.tool.name, ready.arguments)


def time_limit(ready: Ready, run: Executor, timeout_s: float | None) -> float | None:
    """The tighter of the tool's own limit (for the default executor) and the run's."""
    limits = [timeout_s] if timeout_s is not None else []
    if run is call_tool and ready.tool.timeout_s is not None:
        limits.append(ready.tool.timeout_s)
    return min(limits) if limits else None


def execute(
    ready: Ready,
    run: Executor = call_tool,
    *,
    timeout_s: float | None = None,
    approved_preview: str | None = None,
) -> Outcome:
    """Run a validated call; a crash or a refusal becomes ``Error: ...`` (L4), cut to size (L6).

    The call runs under the tighter of ``tool.timeout_s`` and ``timeout_s`` (the
    run's remaining ``--max-seconds``). A Python function cannot be killed, only
    abandoned: at the limit the observation says so and the run goes on while
    the call's daemon thread ends on its own; tools that start children
    (``run_tests``) read the same deadline and kill their process group.
    Secrets are redacted before the text goes anywhere (S5), and output read
    from the world is marked with its source so the transcript fences it (S4).
    """
    started = time.perf_counter()
    try:  # an approved call runs only if it would still do what the person was shown
        ready.tool.confirm(ready.arguments, approved_preview)
    except ToolError as error:
        return Outcome(StepKind.ACTION, f"Error: {error}", ready.tool.name, ready.arguments)
    limit = time_limit(ready, run, timeout_s)
    result = run_with_limit(lambda: run(ready.tool, ready.arguments), limit)
    if isinstance(result, TimedOut):
        observation = (
            f"Error: {ready.tool.name} did not finish within {result.limit_s:g} s; it was "
            "abandoned and its result, if any, is lost. Try a smaller request."
        )
    elif isinstance(result.error, ToolError):
        observation = f"Error: {result.error}"
    elif isinstance(result.error, Exception):  # a crashing tool is an observation
        observation = f"Error: {type(result.error).__name__}: {result.error}"
    elif result.error is not None:  # KeyboardInterrupt, SystemExit: not the model's doing
        raise result.error
    else:
        observation = str(result.value)
    return Outcome(
        StepKind.ACTION,
        cut(redact(observation), ready.tool.max_chars, ready.tool.keep),
        ready.tool.name,
        ready.arguments,
        time.perf_counter() - started,
        None if ready.tool.trusted_output or run is not call_tool else ready.tool.name,
    )
