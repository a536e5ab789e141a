"""Turning a requested tool call into an Observation (SPEC L4, L6, S3).

Every way a call can go wrong ends here as text the model can react to: an
unknown tool, arguments that do not fit, a refusal, a crash, a person's "no".
Nothing raised by a tool escapes, and every observation is cut to its tool's
size. Calls with side effects run only once a person approved that exact call.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tao.errors import ToolError
from tao.lookalikes import name_problem
from tao.redact.kept import redact_kept
from tao.state.calls import Call, Outcome, Ready
from tao.state.config import PendingCall, Via
from tao.state.jsontypes import JSON, JSONObject
from tao.state.result import StepKind
from tao.tools.base import Tool, cut, normal_name, to_text
from tao.tools.limits import Finished, TimedOut, await_with_limit, run_with_limit

#: Runs one validated call; the default calls the tool, ``--human-tools`` asks a person.
Executor = Callable[[Tool, JSONObject], str]
#: Decides on a call with side effects: ``True`` runs it, ``False`` or a reason refuses it.
Approver = Callable[[Tool, JSONObject], "bool | str"]
#: A person deciding on the waiting call they are shown (its id, whether a crash cut it short).
Ask = Callable[[Tool, JSONObject, PendingCall], "bool | str"]


@dataclass(frozen=True, slots=True)
class Person:
    """An approver that is a person (a terminal prompt, a form), not a rule.

    Only a person is asked whether to run again a call that was running when its
    process stopped (SPEC R1): it may have taken effect, and a plain :data:`Approver`
    may be a rule that says yes to everything. ``ask`` is given the waiting call;
    ``call.interrupted`` is what to tell the person.

        agent = Agent(..., approve=Person(lambda tool, arguments, call: input("ok? ") == "y"))

    ``via`` and ``by`` are what the run log records of each decision (issue 30): where it
    was taken (``tao run``'s prompt says ``cli``) and who took it (default: the OS user).
    """

    ask: Ask
    via: Via = "python"
    by: str | None = None


def call_tool(tool: Tool, arguments: JSONObject) -> str:
    """The default executor: run the function; ``prepare`` has validated the arguments."""
    return tool.call(arguments)


def find_tool(name: str, tools: Mapping[str, Tool]) -> Tool | None:
    """The tool whose name equals ``name`` after :func:`normal_name`, and no other fallback.

    The paper's prompts write ``Search[...]``; models write ``read-file``. The
    registry refused two tools with one normal name at startup, so at most one
    tool can match (issue 12 item 9). A name that is not ASCII matches nothing: no
    tool has one, and a look-alike (``reаd_file``, Cyrillic ``а``; full-width letters)
    must not reach the tool it imitates (issue 26).
    """
    if name in tools:
        return tools[name]
    if not name.isascii():
        return None
    wanted = normal_name(name)
    return next((tool for key, tool in tools.items() if normal_name(key) == wanted), None)


def prepare(call: Call, tools: Mapping[str, Tool]) -> Ready | Outcome:
    """Find the tool and validate the arguments; anything wrong is already an Outcome."""
    tool = find_tool(call.tool, tools)
    if tool is None:
        available = ", ".join(name for name in tools if name != "recall")  # the stubs name it
        problem = name_problem(call.tool)
        why = f" ({problem})" if problem is not None else ""
        return Outcome(
            StepKind.UNKNOWN_TOOL,
            f"Unknown tool: {call.tool}{why}. Available: {available}",
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


def needs_approval(ready: Ready, approved: Mapping[str, JSON] | None = None) -> bool:
    """Read-only tools run; anything that writes, deletes, sends or pays asks first (S3), and
    so does a read-only call its tool's gate says needs a person (S11: ``run_tests`` once
    the project's code changed since ``approved``, the states approved so far by tool)."""
    if not ready.tool.read_only:
        return True
    return ready.tool.gate is not None and approval_reason(ready, approved or {}) is not None


def approval_reason(ready: Ready, approved: Mapping[str, JSON]) -> str | None:
    """Why a person must decide on this call though its tool declares no effect; ``None``
    when it may run unasked. A gate that fails says so, and the call asks (fail closed)."""
    gate = ready.tool.gate
    if gate is None:
        return None
    try:
        return gate.reason(ready.arguments, approved.get(ready.tool.name))
    except Exception as error:  # a gate that cannot decide must not let the call through
        return f"could not check whether {ready.tool.name} needs approval ({error})"


def refuse(ready: Ready, decision: bool | str | None, interrupted: bool = False) -> Outcome:
    """The Observation for a call a person denied (with their reason, if they gave one).

    ``interrupted``: it was running when the process stopped (SPEC R1), so the model is
    told it may have taken effect even though it was not run again."""
    reason = f": {decision}" if isinstance(decision, str) and decision.strip() else ""
    name, effects = ready.tool.name, ", ".join(ready.tool.effects)
    if interrupted:
        why = (
            f"{name} was running when the run stopped, and it may have taken effect; a person "
            f"chose not to run it again{reason}. Check before retrying."
        )
    else:
        why = f"a person denied {name} ({effects}){reason}. It was not run."
    return Outcome(StepKind.ACTION, f"Error: {why}", name, ready.arguments)


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
    (``run_tests``) read the same deadline and kill their process group; an
    ``async def`` tool is cancelled (``limits.run_coroutine``).
    Secrets are redacted before the text goes anywhere (S5), and output read
    from the world is marked with its source so the transcript fences it (S4).
    """
    started = time.perf_counter()
    changed = _changed(ready, approved_preview)
    if changed is not None:
        return changed
    limit = time_limit(ready, run, timeout_s)
    result = run_with_limit(_redacted, limit, run, ready.tool, ready.arguments)
    return _observed(ready, result, started, run is call_tool)


def _redacted(run: Executor, tool: Tool, arguments: JSONObject) -> str:
    """The call's output, redacted and cut: redaction runs inside the call's time limit
    (SPEC S11), so a tool returning a huge text cannot hold the run past it, and a call
    cut short while redacting shows nothing of its output."""
    return redacted_cut(run(tool, arguments), tool)


def redacted_cut(output: str, tool: Tool) -> str:
    """``output`` redacted, then cut to ``tool``'s size (SPEC L6, S8): of a long output
    only the kept end is redacted (:mod:`tao.redact.kept`), so 100 MB costs what 40 KB
    does, and no secret across the cut shows in part."""
    region, whole = redact_kept(output, tool.max_chars, tool.keep)
    if whole and len(region) <= tool.max_chars:  # nothing was cut: no note
        return region
    return cut(region, tool.max_chars, tool.keep, len(output))  # the note counts the output


async def aexecute(
    ready: Ready, *, timeout_s: float | None = None, approved_preview: str | None = None
) -> Outcome:
    """:func:`execute` for an ``async def`` tool on the running loop (``Agent.arun``): the
    coroutine is awaited here, next to the other calls of the reply, and cancelled at its
    time limit (``asyncio.timeout``)."""
    if (changed := _changed(ready, approved_preview)) is not None:
        return changed
    started, limit = time.perf_counter(), time_limit(ready, call_tool, timeout_s)
    result = await await_with_limit(lambda: _acall(ready.tool, ready.arguments), limit)
    if isinstance(result, Finished) and result.value is not None:  # awaited: redacted here
        result = Finished(redacted_cut(result.value, ready.tool), result.error)
    return _observed(ready, result, started, True)


async def _acall(tool: Tool, arguments: JSONObject) -> str:
    value = tool.fn(**arguments)
    if inspect.isawaitable(value):
        value = await value
    return value if isinstance(value, str) else to_text(value)


def _changed(ready: Ready, approved_preview: str | None) -> Outcome | None:
    """An approved call runs only if it would still do what the person was shown."""
    try:
        ready.tool.confirm(ready.arguments, approved_preview)
    except ToolError as error:
        return Outcome(StepKind.ACTION, f"Error: {error}", ready.tool.name, ready.arguments)
    return None


def _observed(ready: Ready, result: Finished[str] | TimedOut, started: float, own: bool) -> Outcome:
    """The Observation of a call that ran (``own``: by the default executor, so its output
    is the tool's, fenced unless trusted)."""
    if isinstance(result, TimedOut):
        observation = (
            f"Error: {ready.tool.name} did not finish within {result.limit_s:g} s; it was "
            "abandoned and its result, if any, is lost. Try a smaller request."
        )
    elif isinstance(result.error, ToolError):
        observation = redacted_cut(f"Error: {result.error}", ready.tool)
    elif isinstance(result.error, Exception):  # a crashing tool is an observation
        error = f"Error: {type(result.error).__name__}: {result.error}"
        observation = redacted_cut(error, ready.tool)
    elif result.error is not None:  # KeyboardInterrupt, SystemExit: not the model's doing
        raise result.error
    else:
        observation = str(result.value)  # redacted and cut already (redacted_cut)
    return Outcome(
        StepKind.ACTION,
        observation,
        ready.tool.name,
        ready.arguments,
        time.perf_counter() - started,
        None if ready.tool.trusted_output or not own else ready.tool.name,
    )
