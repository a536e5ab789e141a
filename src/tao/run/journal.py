"""The journal of calls with side effects (SPEC R1): a crash between an effect and its record
is put to a person, never silently redone or lost.

The loop (:mod:`tao.run.loop`) writes two records around the calls with side effects of
one reply, as checkpoints (:class:`~tao.state.config.Checkpoint`): before any of them runs
(``executing``), and right after they return, before anything else (``completed``,
what each returned). A step with only read-only calls writes neither. Reading the
journal back on resume:

- a call with a completion record is neither run nor asked about again: its
  recorded outcome stands (a crash after the effect, before the step was stored);
- a call that had started with no completion record may have taken effect: the
  yes it ran on is spent, and it waits for a person again, marked ``interrupted``
  (no policy rule or automatic approver may say yes to it; :class:`tao.run.act.Person`);
- read-only calls in flight are simply run again.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tao.state.calls import Outcome, Ready
from tao.state.config import Completed, PendingCall
from tao.state.result import StepKind

if TYPE_CHECKING:  # the journal reads a turn's approvals; the transcript makes turns
    from tao.run.transcript import Turn


def read(turn: Turn, gated: dict[int, PendingCall], ready: dict[int, Ready]) -> dict[int, Outcome]:
    """The outcomes the journal of ``turn`` already holds, by position; ``gated`` and
    ``ready`` lose those calls, and the calls cut short are marked ``interrupted``."""
    done: dict[int, Outcome] = {}
    for i, call in list(gated.items()):
        entry = turn.completed.get(call.id)
        if entry is not None:
            done[i] = recorded(ready.pop(i), entry)
            del gated[i]
            continue
        if turn.executing and turn.decisions.get(call.id) is True:
            del turn.decisions[call.id]  # that yes was spent on the run that may have happened
            turn.approvals.pop(call.id, None)
            turn.interrupted.add(call.id)
        if call.id in turn.interrupted:
            gated[i] = dataclasses.replace(call, interrupted=True)
    return done


def pending(
    step: int,
    position: int,
    ready: Ready,
    reason: str | None = None,
    thought: str | None = None,
) -> PendingCall:
    """The call at ``position`` of step ``step``, as it waits for approval and is journaled
    (``reason``: why a call of a read-only tool needs a person, SPEC S11; ``thought``, the
    reply's, is what the person reads first)."""
    return PendingCall(
        step=step,
        position=position,
        tool=ready.tool.name,
        arguments=ready.arguments,
        effects=tuple(ready.tool.effects),
        reason=reason,
        thought=thought or None,
    )


def recorded(ready: Ready, entry: Completed) -> Outcome:
    """A call that ran before a crash, as its completion record has it."""
    return Outcome(StepKind.ACTION, entry.observation, ready.tool.name, ready.arguments,
                   entry.duration_s, entry.source)  # fmt: skip


def completion(outcome: Outcome) -> Completed:
    """What the journal records of a call once it ran."""
    return Completed(
        observation=outcome.observation, duration_s=outcome.duration_s, source=outcome.source
    )
