"""The protocol side of a step: what goes to the model, and how its reply is read and kept.

The loop (:mod:`tao.run.loop`) decides; this module only reads a reply (text or native
tool calls), cuts what the model made up after its first action (SPEC L2), and
writes the model's turn and the real observations into the transcript, fencing
what was read from the world as untrusted data (SPEC S4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from tao.models.base import Message, ModelReply, ToolCall
from tao.protocol import native, prompts
from tao.protocol.text import FINISH, Action, FinalAnswer, ParseFailure, cut_at_stop, parse_reply
from tao.run.exchange import LoopSetup, ModelAnswer, ModelFailure
from tao.run.repeats import Earlier
from tao.state.calls import Call, Outcome
from tao.state.compaction import Compaction
from tao.state.config import Approval, Completed, Decision, PendingCall
from tao.state.jsontypes import JSONObject
from tao.state.result import Step, StepKind


def parse(
    setup: LoopSetup, index: int, reply: ModelReply
) -> native.NativeCalls | Action | FinalAnswer | ParseFailure:
    if setup.protocol == "native":
        return native.read_reply(reply, setup.labels)
    return parse_reply(cut_at_stop(reply.text, stops(setup, index)), setup.labels)


def kept_reply(setup: LoopSetup, reply: ModelReply) -> ModelReply:
    """A native reply without the Observation or Final Answer a model made up after its
    calls (backends that ignore stop sequences, SPEC L2/L3); text replies are cut by the
    parser."""
    if setup.protocol != "native" or not reply.text:
        return reply
    text = native.cut_made_up(reply.text, setup.labels, has_calls=bool(reply.tool_calls))
    return reply if text == reply.text else dataclasses.replace(reply, text=text)


def capped(setup: LoopSetup, turn: Turn, reply: ModelReply) -> ModelReply:
    """``reply`` with only its first ``max_calls_per_reply`` tool calls; ``turn.refused``
    counts the others (SPEC L4). One reply of thousands of parallel calls would otherwise
    run them all, and fill the transcript and the record with one step each.

    The reply kept in the turn's checkpoint is this one, with the count beside it, so a
    resumed run refuses exactly the same calls (and stores no more than it runs). The
    text protocol reads one Action per reply (SPEC L2), so only native calls are capped.
    """
    limit = setup.config.max_calls_per_reply
    if len(reply.tool_calls) <= limit:
        return reply
    turn.refused = len(reply.tool_calls) - limit
    return dataclasses.replace(reply, tool_calls=reply.tool_calls[:limit])


def refusal(setup: LoopSetup, turn: Turn) -> str | None:
    """The one observation for the calls :func:`capped` refused, or ``None``: how many,
    and why, in tao's own voice (outside any fence)."""
    if not turn.refused:
        return None
    limit = setup.config.max_calls_per_reply
    more = "call was" if turn.refused == 1 else "calls were"
    return (
        f"Error: {turn.refused} more tool {more} refused and not run: at most {limit} "
        f"calls of one reply run (max_calls_per_reply). Call only what you need next."
    )


def kept_text(parsed: Action | native.NativeCalls, reply: ModelReply) -> str:
    """What of the reply enters the transcript: the text protocol cuts after the Action."""
    return parsed.text if isinstance(parsed, Action) else reply.text


def opening(setup: LoopSetup, task: str, prior: Sequence[Message] = ()) -> list[Message]:
    """The first messages: the system prompt and the task, after ``prior`` (the whole
    transcript of the run this one follows up) when there is one.

    A follow-up's messages start with exactly its parent's, so a backend with a prefix
    cache (llama.cpp's KV cache, a provider's prompt cache) reuses all of them. Only a
    changed system prompt (other tools, say) replaces the parent's, as the model must be
    told the tools it has now."""
    system: Message = {"role": "system", "content": setup.system_prompt}
    task_message = prompts.task_message(setup.labels, task, setup.config.task_label)
    before = list(prior) or [system]
    if before[0].get("role") == "system" and before[0] != system:
        before[0] = system
    return [*before, {"role": "user", "content": task_message}]


def closing(setup: LoopSetup, reply: ModelReply, parsed: FinalAnswer) -> list[Message]:
    """The final answer's turn, so the transcript a finished run leaves is the whole
    exchange, ready for a follow-up task. A native ``finish`` call gets its answer as the
    tool's result (every call needs one before the next user message)."""
    finish = next((c for c in reply.tool_calls if c.name.lower() == FINISH), None)
    if setup.protocol != "native":
        return [{"role": "assistant", "content": parsed.text}]
    if finish is None:
        return [{"role": "assistant", "content": reply.text}]
    turn = dataclasses.replace(reply, tool_calls=(finish,))
    return [native.assistant_message(turn), native.tool_message(finish, parsed.answer)]


def calls_of(parsed: Action | native.NativeCalls) -> list[Call]:
    if isinstance(parsed, Action):
        return [Call(parsed.tool, parsed.argument, parsed.form, parsed.arguments)]
    return [
        Call(c.name, c.raw_arguments, "native", c.arguments or None, c.id) for c in parsed.calls
    ]


def extend(
    setup: LoopSetup,
    messages: list[Message],
    index: int,
    reply: ModelReply,
    text: str,
    calls: Sequence[ToolCall],
    outcomes: list[Outcome],
    refused: str | None = None,
) -> None:
    """Append the model's turn (cut after its first Action) and the real observation(s).

    Output read from the world goes in fenced as untrusted data (SPEC S4). ``refused``
    (calls over the reply's cap) follows the last call's result, after its fence: every
    call the turn keeps has its result, and no provider takes a message in between.
    """
    if setup.protocol == "native" and calls:
        messages.append(native.assistant_message(reply))
        last = len(calls) - 1
        for position, (call, outcome) in enumerate(zip(calls, outcomes, strict=True)):
            observation = outcome.observation
            if outcome.source and setup.config.fence_untrusted:
                observation = prompts.fence(observation, outcome.source)
            if refused is not None and position == last:
                observation = f"{observation}\n\n{refused}"
            messages.append(native.tool_message(call, observation))
        return
    messages.append({"role": "assistant", "content": text})
    first = outcomes[0]
    number = index if setup.config.numbered else None
    source = first.source if setup.config.fence_untrusted else None
    content = prompts.observation_message(setup.labels, first.observation, number, source)
    messages.append({"role": "user", "content": content})


def stops(setup: LoopSetup, index: int) -> Sequence[str]:
    """The Observation label ends the model's turn; numbered too in the paper's format."""
    if not setup.config.numbered:
        return setup.labels.stop
    return [*setup.labels.stop, f"{setup.labels.observation} {index}:"]


@dataclass(slots=True)
class Turn:
    """One model reply being acted on: its step, the messages it answered, the reply, and
    the approvals of its calls so far."""

    index: int
    sent: list[Message]
    answer: ModelAnswer
    decisions: dict[str, Decision] = field(default_factory=dict)
    """Decisions taken, by PendingCall id."""
    approvals: dict[str, Approval] = field(default_factory=dict)
    """Who took them, when and from where, by PendingCall id (kept on the steps)."""
    shown: dict[str, str | None] = field(default_factory=dict)
    """What the person deciding was shown for each call, by PendingCall id."""
    executing: bool = False
    """Its side effects had started when the run stopped (resumed from a checkpoint)."""
    completed: dict[str, Completed] = field(default_factory=dict)
    """What its calls with side effects returned, by PendingCall id (the journal, SPEC R1)."""
    interrupted: set[str] = field(default_factory=set)
    """Calls that were running when the process stopped, by PendingCall id: a person decides."""
    refused: int = 0
    """Tool calls of the reply refused over ``max_calls_per_reply`` (not run, not kept)."""
    forced: str | None = None
    """Why this reply could only be the final answer, if it was made to be."""
    compactions: tuple[Compaction, ...] = ()
    """Compactions made for this reply's request (the trace shows them on its step)."""
    children: dict[int, tuple[PendingCall, ...]] = field(default_factory=dict)
    """By call position, the calls a paused child run of that call waits on, as this run's
    pending calls (issue 31): the call continues that child with the decisions on them."""


def action_step(
    turn: Turn,
    thought: str | None,
    position: int,
    call: Call,
    outcome: Outcome,
    earlier: Earlier | None,
    approval: Approval | None = None,
) -> Step:
    step = make_step(
        turn,
        outcome.kind,
        thought,
        position=position,
        duration_s=outcome.duration_s,
        tool=outcome.tool,
        arguments=outcome.arguments,
        unparsed=call.argument if outcome.arguments is None else None,
        observation=outcome.observation,
        repeat_of=earlier.step if earlier else None,
        approval=approval,
    )
    child = outcome.child
    if child is None:
        return step
    return step.replace(
        child_run=child.run_id,
        child_input_tokens=child.input_tokens,
        child_output_tokens=child.output_tokens,
        child_cost_usd=child.cost_usd,
    )


def make_step(
    turn: Turn,
    kind: StepKind,
    thought: str | None,
    *,
    position: int = 0,
    duration_s: float = 0.0,
    tool: str | None = None,
    arguments: JSONObject | None = None,
    unparsed: str | None = None,
    observation: str | None = None,
    repeat_of: int | None = None,
    approval: Approval | None = None,
) -> Step:
    """A step for one reply; parallel calls after the first carry no thought, tokens or model
    time (the reply is counted once)."""
    reply, first = turn.answer.reply, position == 0
    model_s = turn.answer.duration_s if first else 0.0
    return Step(
        index=turn.index + position,
        kind=kind,
        thought=thought if first else None,
        tool=tool,
        arguments=arguments,
        unparsed=unparsed,
        observation=observation,
        model_input=turn.sent,
        model_output=reply.text,
        duration_s=duration_s + model_s,
        model_duration_s=model_s,
        tool_duration_s=duration_s,
        input_tokens=reply.input_tokens if first else 0,
        output_tokens=reply.output_tokens if first else 0,
        evaluated_tokens=reply.evaluated_tokens if first else None,
        cost_usd=reply.cost_usd if first or reply.cost_usd is None else 0.0,
        model=reply.model,
        model_failures=list(reply.failures) if first else [],
        call_index=position,
        repeat_of=repeat_of,
        compactions=turn.compactions if first else (),
        approval=approval,
    )


def failed_step(index: int, sent: Sequence[Message], failure: ModelFailure) -> Step:
    """The step of a model call that failed: what was sent, and why it failed."""
    return Step(
        index=index,
        kind=StepKind.MODEL_ERROR,
        observation=failure.message,
        model_input=list(sent),
        duration_s=failure.duration_s,
        model_duration_s=failure.duration_s,
    )
