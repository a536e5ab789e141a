"""Compaction policies: what the model is shown for a span of old steps (issue 27).

The loop decides *when* and *which* steps (:mod:`tao.run.compaction`); a policy decides
*what* the model sees of them instead. A policy is any callable taking a :class:`Span` and
returning the messages to show for it, or a :class:`SummaryRequest` for a model call whose
reply is shown (as one message). Two come with tao:

- :class:`Elide` (``elide``, the default): each observation becomes a one-line stub with a
  handle, ``[observation of step 12: 1,480 chars; recall[12] shows it again]``; when stubs
  are not enough (``span.whole``), the span folds into one line listing its actions;
- :class:`Summarize` (``summarize``): the model summarizes the span into one message.

Your own is named ``module:attribute`` in ``RunConfig.compaction`` (``--compaction``): a
function, an object with ``__call__``, or a class made with no arguments. Keep a native
run's tool messages after their assistant message, or replace both (docs/long-runs.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from tao.errors import ConfigError
from tao.models.base import Message
from tao.protocol.labels import Labels

#: Builtin policies by name; ``none`` is no policy.
POLICIES = ("elide", "summarize", "none")
#: The name of the built-in read-only tool that shows an elided observation again.
RECALL = "recall"


@dataclass(frozen=True, slots=True)
class Span:
    """A range of old steps to compact, as a policy is given it."""

    messages: tuple[Message, ...]
    """The range as the model sees it now (earlier compactions inside it applied)."""
    first_step: int
    last_step: int
    observations: Mapping[int, int]
    """By position in ``messages``, the step whose observation that message is (only
    observations not compacted yet)."""
    whole: bool
    """Stubs were not enough: the range must shrink to a message or two."""
    labels: Labels
    protocol: Literal["text", "native"]


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """A policy's request for a model call; its reply is shown as the range's one message."""

    messages: tuple[Message, ...]
    """What the model is sent to make the summary."""
    max_tokens: int = 400


Shown = Sequence[Message] | SummaryRequest


class Policy(Protocol):
    """What the model is shown for a span of old steps: messages, or a summary to ask for."""

    def __call__(self, span: Span) -> Shown: ...


def handle(step: int, protocol: str) -> str:
    """How the model asks for an elided observation again."""
    if protocol == "native":
        return f"call {RECALL} with step={step} to see it again"
    return f"{RECALL}[{step}] shows it again"


class Elide:
    """Older observations become one-line stubs; a range of stubs folds into one line."""

    name = "elide"

    def __call__(self, span: Span) -> Shown:
        if span.whole:
            return [{"role": "user", "content": fold_note(span)}]
        shown = list(span.messages)
        for at, step in span.observations.items():
            message: Message = {**shown[at]}
            chars = len(message.get("content") or "")
            stub = f"[observation of step {step}: {chars:,} chars; {handle(step, span.protocol)}]"
            if span.protocol == "text" or message.get("role") != "tool":
                stub = f"{span.labels.observation}: {stub}"
            message["content"] = stub
            shown[at] = message
        return shown


def fold_note(span: Span) -> str:
    """One line for a folded range: which steps, what they did, how to see them again."""
    actions = _actions(span)
    listed = "; ".join(actions[-30:])
    more = f" (the first {len(actions) - 30} not listed)" if len(actions) > 30 else ""
    return (
        f"[steps {span.first_step}-{span.last_step} compacted to save room; "
        f"their actions{more}: {listed}. {handle(span.first_step, span.protocol)}, "
        "and so for any step]"
    )


def _actions(span: Span) -> list[str]:
    """The actions a span's assistant messages took, one short line each."""
    actions: list[str] = []
    for message in span.messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            actions.append(f"{call['function']['name']}({call['function']['arguments'][:60]})")
        text = message.get("content") or ""
        label = f"{span.labels.action}:"
        lines = [line for line in text.splitlines() if line.strip().startswith(label)]
        actions += [line.strip()[len(label) :].strip()[:80] for line in lines[-1:]]
    return actions


class Summarize:
    """The model summarizes the oldest steps into one message (a recorded, counted call)."""

    name = "summarize"

    def __call__(self, span: Span) -> Shown:
        lines = []
        for message in span.messages:
            role = message.get("role", "user")
            content = message.get("content") or ""
            for call in message.get("tool_calls") or ():
                content += f"\n[call {call['function']['name']} {call['function']['arguments']}]"
            lines.append(f"{role}: {content}")
        instruction = (
            "You compact the working notes of an agent. Summarize the steps below in at most "
            "200 words: what was tried, what was found (exact names, numbers, paths), what "
            "remains open. Write only the summary."
        )
        return SummaryRequest(
            (
                {"role": "system", "content": instruction},
                {"role": "user", "content": "\n\n".join(lines)},
            )
        )


def policy_named(name: str) -> tuple[str, Policy | None]:
    """The policy ``RunConfig.compaction`` names (``module:attribute`` for your own; a class
    is made with no arguments), and the name the trace gives it."""
    if name == "elide":
        return name, Elide()
    if name == "summarize":
        return name, Summarize()
    if name == "none":
        return name, None
    module, _, attribute = name.partition(":")
    try:
        found = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigError(f"--compaction {name}: cannot load the policy ({error})") from None
    policy = found() if isinstance(found, type) else found
    if not callable(policy):
        raise ConfigError(f"--compaction {name}: the policy is not callable")
    return str(getattr(policy, "name", attribute)), policy
