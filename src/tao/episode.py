"""The ReAct loop itself, free of I/O: it *yields* what it needs and is *sent* the answers.

``Agent.run`` (threads) and ``Agent.arun`` (asyncio) drive the same generator,
so the two APIs cannot drift apart: one loop, two drivers, as httpx does.

    ask the model ──> read its reply ──> [approve] ──> run the tool(s) ──> observe ──┐
         ^                                                                           │
         └─────────────────────── until finish or the budget ends ───────────────────┘

After every step, before a call with side effects runs, and when a call waits
for a person, the loop hands a *checkpoint* (plain JSON) to its driver; given
back through ``resume=``, it continues from exactly there, in another process
if need be, and never runs a call with side effects twice (SPEC S3).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tao.act import Call, Outcome, Ready, interrupted, needs_approval, prepare, refuse
from tao.budget import Budget
from tao.models.base import Completion, Message, ToolCall, ToolSpec
from tao.protocol import native, prompts
from tao.protocol.labels import Labels
from tao.protocol.text import Action, FinalAnswer, ParseFailure, cut_at_stop, parse_reply
from tao.tools.base import Tool
from tao.trace import RunResult, Status, Step, StepKind


@dataclass(frozen=True)
class ModelRequest:
    """Ask the model; the driver sends back a :class:`Completion` or a :class:`ModelFailure`."""

    step: int
    messages: list[Message]
    stop: list[str]
    grammar: str | None
    tools: list[ToolSpec] | None


@dataclass(frozen=True)
class ModelFailure:
    message: str
    duration_s: float


@dataclass(frozen=True)
class ApprovalRequest:
    """Calls with side effects; the driver sends back one decision each, in order:
    ``True`` (run it), ``False`` or a reason (denied), ``None`` (nobody can say now: pause)."""

    step: int
    calls: list[Ready]


@dataclass(frozen=True)
class ToolRequest:
    """Run these validated, allowed calls; the driver sends back one Outcome each."""

    step: int
    calls: list[Ready]


Request = ModelRequest | ApprovalRequest | ToolRequest
Episode = Generator[Request, Any, None]
Checkpoint = Callable[[dict[str, Any]], None]


@dataclass
class Settings:
    """What the loop needs from an :class:`tao.Agent`, and nothing else."""

    labels: Labels
    tools: dict[str, Tool]
    budget: Budget
    system_prompt: str
    protocol: Literal["text", "native"]
    grammar: str | None = None
    numbered: bool = False
    task_label: str | None = None
    #: Fence tool output read from the world as untrusted data (SPEC S4); off only to
    #: replay a published prompt format exactly (the paper's benchmarks).
    fence: bool = True


def episode(
    cfg: Settings,
    result: RunResult,
    on_step: Callable[[Step], None],
    checkpoint: Checkpoint,
    resume: dict[str, Any] | None = None,
) -> Episode:
    """Thought, Action, Observation until an answer or a spent budget (SPEC L1-L6)."""
    saved = resume or {}
    messages: list[Message] = (
        saved["messages"]
        if resume
        else [
            {"role": "system", "content": cfg.system_prompt},
            {
                "role": "user",
                "content": prompts.task_message(cfg.labels, result.task, cfg.task_label),
            },
        ]
    )
    specs = native.tool_specs(list(cfg.tools.values())) if cfg.protocol == "native" else None
    started = time.monotonic() - saved.get("elapsed", 0.0)
    pending = saved.get("reply")
    while True:
        if pending is not None:  # a reply that was waiting for a person, or was interrupted
            index, reply, model_s = int(saved["step"]), _completion(pending), 0.0
            sent, state = list(messages), dict(saved)
            pending = None
        else:
            spent = cfg.budget.exhausted(result.usage.model_calls, started, result.usage)
            if spent is not None:
                result.status, result.stop_reason = Status.MAX_STEPS, spent
                return
            index = len(result.steps) + 1
            sent = list(messages)  # messages are never edited once appended: a snapshot
            asked = time.perf_counter()
            answer = yield ModelRequest(index, sent, _stops(cfg, index), cfg.grammar, specs)
            if isinstance(answer, ModelFailure):
                step = Step(
                    index,
                    StepKind.MODEL_ERROR,
                    None,
                    None,
                    None,
                    answer.message,
                    sent,
                    "",
                    answer.duration_s,
                    model_duration_s=answer.duration_s,
                )
                _record(result, step, on_step)
                result.status, result.error = Status.ERROR, answer.message
                return
            reply, model_s = answer, time.perf_counter() - asked
            state = {"step": index, "reply": _reply_state(reply)}
        state.update(messages=sent, elapsed=time.monotonic() - started)
        steps = yield from _respond(cfg, index, reply, messages, state, checkpoint)
        if steps is None:
            result.status, result.pending = Status.AWAITING_APPROVAL, state["pending"]
            return
        for step in steps:
            step.model_duration_s = model_s if step.call_index == 0 else 0.0
            step.duration_s += step.model_duration_s
            _record(result, step, on_step)
        checkpoint({"messages": messages, "elapsed": time.monotonic() - started})
        final = next((s for s in steps if s.kind is StepKind.FINAL), None)
        if final is not None:
            result.status, result.answer = Status.FINISHED, final.argument
            return


def _respond(
    cfg: Settings,
    index: int,
    reply: Completion,
    messages: list[Message],
    state: dict[str, Any],
    checkpoint: Checkpoint,
) -> Generator[Request, Any, list[Step] | None]:
    """Read one reply, run what it asks for, extend the transcript.

    Returns the new steps, or ``None`` when a call waits for a person's approval.
    """
    sent = state["messages"]
    parsed: native.NativeCalls | Action | FinalAnswer | ParseFailure
    if cfg.protocol == "native":
        parsed = native.read_reply(reply, cfg.labels)
    else:
        parsed = parse_reply(cut_at_stop(reply.text, _stops(cfg, index)), cfg.labels)
    if isinstance(parsed, FinalAnswer):
        step = _step(index, StepKind.FINAL, sent, reply, parsed.thought)
        step.tool, step.argument = "finish", parsed.answer
        return [step]
    if isinstance(parsed, ParseFailure):
        remind = prompts.native_reminder if cfg.protocol == "native" else prompts.reminder
        reminder = Outcome(StepKind.PARSE_ERROR, remind(cfg.labels, parsed.reason), "", None)
        _extend(cfg, messages, index, reply, parsed.text, [], [reminder])
        step = _step(index, StepKind.PARSE_ERROR, sent, reply, parsed.thought)
        step.observation = reminder.observation
        return [step]
    calls = _calls(parsed)
    prepared = [prepare(call, cfg.tools) for call in calls]
    outcomes: dict[int, Outcome] = {i: p for i, p in enumerate(prepared) if isinstance(p, Outcome)}
    ready = {i: p for i, p in enumerate(prepared) if isinstance(p, Ready)}
    gated = [i for i, r in ready.items() if needs_approval(r)]
    decisions: dict[str, Any] = state.setdefault("decisions", {})
    ask = [i for i in gated if str(i) not in decisions]
    if ask:
        answers = yield ApprovalRequest(index, [ready[i] for i in ask])
        decisions.update({str(i): a for i, a in zip(ask, answers, strict=True) if a is not None})
        waiting = [i for i in gated if str(i) not in decisions]
        if waiting:
            state["pending"] = [_describe(ready[i], i) for i in waiting]
            checkpoint(state)
            return None
    for i in gated:
        if decisions[str(i)] is not True:
            outcomes[i] = refuse(ready.pop(i), decisions[str(i)])
        elif state.get("executing"):  # killed while it ran: never run it a second time
            outcomes[i] = interrupted(ready.pop(i))
    if any(i in ready for i in gated):
        checkpoint({**state, "executing": True})  # written before any side effect happens
    done = iter((yield ToolRequest(index, list(ready.values()))) if ready else [])
    outcomes.update({i: next(done) for i in ready})
    ordered = [outcomes[i] for i in range(len(calls))]
    native_calls = list(parsed.calls) if isinstance(parsed, native.NativeCalls) else []
    text = parsed.text if isinstance(parsed, Action) else reply.text
    _extend(cfg, messages, index, reply, text, native_calls, ordered)
    steps = []
    for position, (call, outcome) in enumerate(zip(calls, ordered, strict=True)):
        step = _step(index + position, outcome.kind, sent, reply, parsed.thought, position)
        step.tool, step.argument, step.arguments = outcome.tool, call.argument, outcome.arguments
        step.observation = outcome.observation
        step.duration_s = step.tool_duration_s = outcome.duration_s
        steps.append(step)
    return steps


def _describe(ready: Ready, position: int) -> dict[str, Any]:
    """A waiting call as a person (CLI, web page) needs to judge it."""
    preview = None
    if ready.tool.preview is not None:
        try:
            preview = ready.tool.preview(ready.arguments)
        except Exception as error:  # a preview must never break the pause
            preview = f"(no preview: {error})"
    return {
        "position": position,
        "tool": ready.tool.name,
        "arguments": ready.arguments,
        "effects": list(ready.tool.effects),
        "preview": preview,
    }


def _step(
    index: int,
    kind: StepKind,
    sent: list[Message],
    reply: Completion,
    thought: str | None,
    position: int = 0,
) -> Step:
    """A step for one reply; parallel calls after the first carry no thought and no tokens."""
    first = position == 0
    return Step(
        index,
        kind,
        thought if first else None,
        None,
        None,
        None,
        sent,
        reply.text,
        0.0,
        reply.input_tokens if first else 0,
        reply.output_tokens if first else 0,
        reply.evaluated_tokens if first else None,
        call_index=position,
    )


def _calls(parsed: Action | native.NativeCalls) -> list[Call]:
    if isinstance(parsed, Action):
        return [Call(parsed.tool, parsed.argument, parsed.form)]
    return [_native_call(call) for call in parsed.calls]


def _native_call(call: ToolCall) -> Call:
    return Call(call.name, call.raw_arguments, "native", call.arguments or None, call.id)


def _extend(
    cfg: Settings,
    messages: list[Message],
    index: int,
    reply: Completion,
    text: str,
    calls: Sequence[ToolCall],
    outcomes: list[Outcome],
) -> None:
    """Append the model's turn (cut after its first Action) and the real observation(s).

    Output read from the world goes in fenced as untrusted data (SPEC S4).
    """
    if cfg.protocol == "native" and calls:
        messages.append(native.assistant_message(reply))
        messages.extend(
            native.tool_message(
                c,
                prompts.fence(o.observation, o.source) if o.source and cfg.fence else o.observation,
            )
            for c, o in zip(calls, outcomes, strict=True)
        )
        return
    messages.append({"role": "assistant", "content": text})
    first = outcomes[0]
    number = index if cfg.numbered else None
    source = first.source if cfg.fence else None
    content = prompts.observation_message(cfg.labels, first.observation, number, source)
    messages.append({"role": "user", "content": content})


def _stops(cfg: Settings, index: int) -> list[str]:
    """The Observation label ends the model's turn; numbered too in the paper's format."""
    numbered = [f"{cfg.labels.observation} {index}:"] if cfg.numbered else []
    return [*cfg.labels.stop, *numbered]


def _record(result: RunResult, step: Step, on_step: Callable[[Step], None]) -> None:
    result.steps.append(step)
    result.usage.add(step)
    on_step(step)


def _reply_state(reply: Completion) -> dict[str, Any]:
    return {
        "text": reply.text,
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "evaluated_tokens": reply.evaluated_tokens,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "raw": c.raw_arguments}
            for c in reply.tool_calls
        ],
    }


def _completion(data: dict[str, Any]) -> Completion:
    return Completion(
        data["text"],
        data.get("input_tokens", 0),
        data.get("output_tokens", 0),
        data.get("evaluated_tokens"),
        tool_calls=tuple(
            ToolCall(c["id"], c["name"], c.get("arguments") or {}, c.get("raw", ""))
            for c in data.get("tool_calls", [])
        ),
    )
