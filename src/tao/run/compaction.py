"""Keeping a long run inside the model's context window: when to compact, what, and how.

A run is as long as its work, not one context window (issue 27). Before each model
request the loop asks :meth:`Context.over`: past the high-water mark (:data:`HIGH`,
80% of the window less the reply's room), :func:`make_room` compacts the oldest steps
until the view is down to the low-water mark (:data:`LOW`). A provider that refuses a
request for size gets the same, once, and the request again (the reactive path).

What the model is then shown for those steps is the *policy*'s choice (:class:`Policy`):

- :class:`Elide` (``elide``, the default): each older observation becomes a one-line stub
  with a handle, ``[observation of step 12: 1,480 chars; recall[12] shows it again]``, and
  the built-in read-only ``recall`` tool brings it back from the run's record; when stubs
  alone no longer fit, a range of old steps folds into one line listing their actions;
- :class:`Summarize` (``summarize``): the model summarizes the oldest steps into one message;
  that call is recorded and counted in the run's usage and cost;
- ``none``: nothing is compacted; a refusal for size ends the run with an error that names
  ``--context-window`` and ``--compaction``;
- your own: any callable taking a :class:`Span` and returning the messages to show for it
  (or a :class:`SummaryRequest`), named ``module:attribute`` in ``RunConfig.compaction``.

The system prompt, the task, the few-shot examples and the newest :data:`KEEP` steps are
never touched, and neither is the newest observation. Compaction works in chunks: between
two compactions the prompt only grows at its end, so llama.cpp's KV cache and the
providers' prompt caches keep hitting. Each decision is a recorded
:class:`~tao.state.compaction.Compaction`, never recomputed on resume.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tao.errors import InternalError
from tao.models.base import Message, ModelRequest
from tao.models.window import Counter, Overflow, estimate
from tao.protocol.labels import Labels
from tao.run.exchange import Answer, AskModel, ModelAnswer, Request
from tao.run.policies import Policy, Span, Summarize, SummaryRequest, handle
from tao.state.compaction import Compaction, active, view
from tao.state.result import Step, StepKind

#: Compact when the view passes this share of the room the window leaves for the prompt.
HIGH = 0.8
#: And bring it down to this share.
LOW = 0.5
#: The newest steps never compacted (the newest alone, when nothing else makes room).
KEEP = 2


@dataclass(kw_only=True)
class Context:
    """A run's window, its compactions and what it needs to make more (the loop's own)."""

    policy: Policy | None
    policy_name: str
    window: int | None
    """Tokens the context holds; ``None`` until known (set, the backend's, or learned)."""
    count: Counter
    reply_room: int
    """Tokens the reply needs inside the window (``max_reply_tokens``)."""
    labels: Labels
    protocol: Literal["text", "native"]
    compactions: list[Compaction] = field(default_factory=list)
    turns: dict[int, int] = field(default_factory=dict)
    """By the index of its first message in the transcript, each turn's step index."""
    observations: dict[int, str] = field(default_factory=dict)
    """Every step's full observation by step index, for ``recall``."""
    scale: float = 1.0
    """How much the provider's count of a prompt exceeds ours (never under 1)."""
    new: list[Compaction] = field(default_factory=list)
    """Compactions made for the request being prepared: the trace shows them on its step."""

    def note(self, steps: Sequence[Step]) -> None:
        """Remember a turn's steps: where the turn starts, and its observations."""
        for step in steps:
            if step.call_index == 0 and step.kind is not StepKind.MODEL_ERROR:
                self.turns[len(step.model_input)] = step.index
            if step.observation is not None:
                self.observations[step.index] = step.observation

    @property
    def estimated(self) -> bool:
        """Whether prompts are estimated (no tokenizer, or tiktoken's file unavailable), so
        the provider's reported counts should correct ours (:meth:`calibrate`)."""
        return self.count is estimate or bool(getattr(self.count, "estimating", False))

    def calibrate(self, shown: Sequence[Message], input_tokens: int) -> None:
        """The provider counted ``input_tokens`` for ``shown``: learn how far off ours is."""
        ours = self.count(shown)
        if input_tokens > 0 and ours > 0:
            self.scale = min(max(self.scale, input_tokens / ours), 4.0)

    def tokens(self, messages: Sequence[Message]) -> int:
        return int(self.count(messages) * self.scale) + 1

    def room(self) -> int:
        """Tokens the prompt may take: the window less the reply's room (at least half)."""
        if self.window is None:
            raise InternalError("room() asked of a run with no context window")
        return max(self.window - self.reply_room, self.window // 2)

    def shown(self, transcript: Sequence[Message]) -> list[Message]:
        return view(transcript, self.compactions)

    def over(self, shown: Sequence[Message]) -> bool:
        """Past the high-water mark: time to compact (never with no policy or no window)."""
        if self.policy is None or self.window is None:
            return False
        return self.tokens(shown) > HIGH * self.room()

    def learn(self, refused: Overflow, shown: Sequence[Message]) -> None:
        """A request was refused for size: the window is what the refusal names, else a
        little less than what was sent."""
        if refused.limit is not None:
            self.window = refused.limit if self.window is None else min(self.window, refused.limit)
        else:
            self.window = int(self.tokens(shown) * 0.9)
        if refused.requested is not None:  # the provider's count: ours was that far off
            self.scale = min(max(self.scale, refused.requested / max(self.count(shown), 1)), 4.0)


def make_room(
    context: Context, transcript: Sequence[Message], step: int, reason: str
) -> Generator[Request, Answer, str | None]:
    """Compact the oldest steps until the view is under :data:`LOW` of the room; ``None``
    when it fits the window, else why it cannot (the task and newest step alone overflow)."""
    if context.window is None:
        raise InternalError("compaction asked of a run with no context window")
    room = context.room()
    shown = context.shown(transcript)
    before = context.tokens(shown)
    starts = sorted(s for s in context.turns if s < len(transcript))
    now = before
    for keep in (KEEP, 1):  # the newest step alone is kept only when nothing else makes room
        if context.policy is None or len(starts) <= keep:
            continue
        record = yield from _compaction(context, transcript, starts, keep, step, reason)
        if record is not None and record.tokens_after < now:
            context.compactions = active([*context.compactions, record])  # drops those it covers
            context.new.append(record)
            now = record.tokens_after
        if now <= HIGH * room:
            return None
    after = context.tokens(context.shown(transcript))
    if after <= room:
        return None
    return (
        f"the context window of {context.window:,} tokens is full: the task and the newest "
        f"step alone take {after:,} tokens (about {before:,} before compaction); raise "
        "--context-window if the model allows more, or read less at a time"
    )


def _compaction(
    context: Context,
    transcript: Sequence[Message],
    starts: list[int],
    keep: int,
    step: int,
    reason: str,
) -> Generator[Request, Answer, Compaction | None]:
    """One compaction keeping the newest ``keep`` turns: the shortest range of stubs that
    reaches the low-water mark, else the whole old range folded (or summarized)."""
    policy, room = context.policy, context.room()
    if policy is None:
        raise InternalError("compaction asked of a run with no compaction policy")
    before = context.tokens(context.shown(transcript))
    boundary = starts[-keep]
    covered = max((c.end for c in context.compactions), default=starts[0])
    best: Compaction | None = None
    if not isinstance(policy, Summarize):
        for end in (s for s in starts if covered < s <= boundary):
            shown = policy(_span(context, transcript, covered, end, whole=False))
            if isinstance(shown, SummaryRequest):
                break
            best = _record(context, transcript, (covered, end), shown, step, reason, before)
            if best.tokens_after <= LOW * room:
                return best
    region = starts[0]
    if boundary <= region:
        return best
    span = _span(context, transcript, region, boundary, whole=True)
    shown = policy(span)
    usage: tuple[int, int, float | None] = (0, 0, 0.0)
    if isinstance(shown, SummaryRequest):
        answer = yield AskModel(step, _summary_request(shown))
        if not isinstance(answer, ModelAnswer):
            return best  # the summary call failed: stubs, if any, are what there is
        reply = answer.reply
        usage = (reply.input_tokens, reply.output_tokens, reply.cost_usd)
        summary = (
            f"[summary of steps {span.first_step}-{span.last_step}, compacted to save room; "
            f"{handle(span.first_step, span.protocol)}, and so for any step]\n{reply.text.strip()}"
        )
        shown = [{"role": "user", "content": summary}]
    folded = _record(context, transcript, (region, boundary), shown, step, reason, before, usage)
    if best is None or folded.tokens_after < best.tokens_after:
        return folded
    return best


def _summary_request(request: SummaryRequest) -> ModelRequest:
    return ModelRequest(messages=list(request.messages), max_tokens=request.max_tokens)


def _span(
    context: Context, transcript: Sequence[Message], start: int, end: int, *, whole: bool
) -> Span:
    """Messages ``start`` to ``end`` of the transcript as the model sees them now."""
    inside = [c for c in context.compactions if c.start >= start and c.end <= end]
    shown = view(transcript[start:end], [_shifted(c, start) for c in inside])
    steps = [(m, s) for m, s in sorted(context.turns.items()) if start <= m < end]
    observations: dict[int, int] = {}
    if not inside:
        for position, (at, turn) in enumerate(steps):
            stop = steps[position + 1][0] if position + 1 < len(steps) else end
            calls = [
                i for i in range(at + 1, stop) if transcript[i].get("role") in ("tool", "user")
            ]
            observations.update((i - start, turn + n) for n, i in enumerate(calls))
    first = steps[0][1] if steps else 0
    last = max(_last_step(context, end), first)
    return Span(tuple(shown), first, last, observations, whole, context.labels, context.protocol)


def _last_step(context: Context, end: int) -> int:
    """The highest step whose observation sits before message ``end``."""
    turns = sorted(context.turns.items())
    after = [s for m, s in turns if m >= end]
    if after:
        return after[0] - 1
    return max(context.observations, default=0)


def _shifted(record: Compaction, by: int) -> Compaction:
    return dataclasses.replace(record, start=record.start - by, end=record.end - by)


def _record(
    context: Context,
    transcript: Sequence[Message],
    where: tuple[int, int],
    shown: Sequence[Message],
    step: int,
    reason: str,
    before: int,
    usage: tuple[int, int, float | None] = (0, 0, 0.0),
) -> Compaction:
    """A compaction of messages ``where`` shown as ``shown``, with the view's size after it."""
    start, end = where
    steps = [s for m, s in context.turns.items() if start <= m < end]
    draft = Compaction(
        start=start,
        end=end,
        first_step=min(steps, default=0),
        last_step=max(_last_step(context, end), min(steps, default=0)),
        messages=tuple(shown),
        policy=context.policy_name,
        tokens_before=before,
        tokens_after=0,
        window=context.window or 0,
        reason=reason,
        step=step,
        input_tokens=usage[0],
        output_tokens=usage[1],
        cost_usd=usage[2],
    )
    after = context.tokens(view(transcript, [*context.compactions, draft]))
    return dataclasses.replace(draft, tokens_after=after)


def recalled(context: Context, step: object) -> str:
    """What ``recall`` answers: the step's full observation from the run's record."""
    try:
        index = int(str(step).strip().strip("[]"))
    except ValueError:
        return f"Error: recall takes a step number, not {step!r}"
    if index not in context.observations:
        known = f"1-{max(context.observations)}" if context.observations else "none yet"
        return f"Error: no observation of step {index} (steps with one: {known})"
    return context.observations[index]
