"""The ReAct loop itself, free of I/O: it *yields* what it needs and is *sent* the answers.

``Agent.run`` (threads) and ``Agent.arun`` (asyncio) drive the same generator,
so the two APIs cannot drift apart: one loop, two drivers, as httpx does.

    ask the model ──> read its reply ──> run the tool(s) ──> append the observation ──┐
         ^                                                                            │
         └──────────────────────── until finish or the budget ends ───────────────────┘
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tao.act import Call, Outcome, Ready, prepare
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
class ToolRequest:
    """Run these validated calls (approval first); the driver sends back one Outcome each."""

    step: int
    calls: list[Ready]


Request = ModelRequest | ToolRequest
Episode = Generator[Request, Any, None]


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


def episode(cfg: Settings, result: RunResult, on_step: Callable[[Step], None]) -> Episode:
    """Thought, Action, Observation until an answer or a spent budget (SPEC L1-L6)."""
    messages: list[Message] = [
        {"role": "system", "content": cfg.system_prompt},
        {"role": "user", "content": prompts.task_message(cfg.labels, result.task, cfg.task_label)},
    ]
    specs = native.tool_specs(list(cfg.tools.values())) if cfg.protocol == "native" else None
    started = time.monotonic()
    while (spent := cfg.budget.exhausted(result.usage.model_calls, started, result.usage)) is None:
        index = len(result.steps) + 1
        sent = [dict(m) for m in messages]
        stops = _stops(cfg, index)
        asked = time.perf_counter()
        reply = yield ModelRequest(index, sent, stops, cfg.grammar, specs)
        if isinstance(reply, ModelFailure):
            step = Step(
                index,
                StepKind.MODEL_ERROR,
                None,
                None,
                None,
                reply.message,
                sent,
                "",
                reply.duration_s,
                model_duration_s=reply.duration_s,
            )
            _record(result, step, on_step)
            result.status, result.error = Status.ERROR, reply.message
            return
        model_s = time.perf_counter() - asked
        steps = yield from _respond(cfg, index, sent, reply, stops, messages)
        for step in steps:
            step.model_duration_s = model_s if step.call_index == 0 else 0.0
            step.duration_s += model_s if step.call_index == 0 else 0.0
            _record(result, step, on_step)
        final = next((s for s in steps if s.kind is StepKind.FINAL), None)
        if final is not None:
            result.status, result.answer = Status.FINISHED, final.argument
            return
    result.status, result.stop_reason = Status.MAX_STEPS, spent


def _respond(
    cfg: Settings,
    index: int,
    sent: list[Message],
    reply: Completion,
    stops: list[str],
    messages: list[Message],
) -> Generator[Request, Any, list[Step]]:
    """Read one reply, run what it asks for, extend the transcript; returns the new steps."""
    parsed: native.NativeCalls | Action | FinalAnswer | ParseFailure
    if cfg.protocol == "native":
        parsed = native.read_reply(reply, cfg.labels)
    else:
        parsed = parse_reply(cut_at_stop(reply.text, stops), cfg.labels)
    if isinstance(parsed, FinalAnswer):
        step = _step(index, StepKind.FINAL, sent, reply, parsed.thought)
        step.tool, step.argument = "finish", parsed.answer
        return [step]
    if isinstance(parsed, ParseFailure):
        observation = prompts.reminder(cfg.labels, parsed.reason)
        _extend(
            cfg,
            messages,
            index,
            reply,
            parsed.text,
            [],
            [Outcome(StepKind.PARSE_ERROR, observation, "", None)],
        )
        step = _step(index, StepKind.PARSE_ERROR, sent, reply, parsed.thought)
        step.observation = observation
        return [step]
    calls = _calls(parsed)
    prepared = [prepare(call, cfg.tools) for call in calls]
    ready = [p for p in prepared if isinstance(p, Ready)]
    done = iter((yield ToolRequest(index, ready)) if ready else [])
    outcomes: list[Outcome] = [p if isinstance(p, Outcome) else next(done) for p in prepared]
    native_calls = list(parsed.calls) if isinstance(parsed, native.NativeCalls) else []
    text = parsed.text if isinstance(parsed, Action) else reply.text
    _extend(cfg, messages, index, reply, text, native_calls, outcomes)
    steps = []
    for position, (call, outcome) in enumerate(zip(calls, outcomes, strict=True)):
        step = _step(index + position, outcome.kind, sent, reply, parsed.thought, position)
        step.tool, step.argument, step.arguments = outcome.tool, call.argument, outcome.arguments
        step.observation = outcome.observation
        step.duration_s = step.tool_duration_s = outcome.duration_s
        steps.append(step)
    return steps


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
