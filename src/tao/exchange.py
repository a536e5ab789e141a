"""What the ReAct loop and its driver say to each other: typed requests out, answers in.

The loop (:mod:`tao.loop`) yields a request and is sent its answer:

==================  =====================================================
``AskModel``        a :class:`ModelAnswer` or a :class:`ModelFailure`
``AskApproval``     an :class:`ApprovalAnswer`, one decision per call
``RunTools``        one :class:`~tao.act.Outcome` per call, in order
``SaveCheckpoint``  nothing; store it (after every step, before side effects, on pause)
``StepDone``        nothing; record it, show it
==================  =====================================================

and returns an :class:`Ending`. All frozen dataclasses, as h11's events are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tao.act import Outcome, Ready
from tao.budget import Budget
from tao.models.base import ModelReply, ModelRequest
from tao.protocol.labels import Labels
from tao.state import Checkpoint, Decision, PendingCall, Protocol
from tao.tools.base import Tool
from tao.trace import Status, Step

# -- what the loop asks for ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AskModel:
    step: int
    request: ModelRequest


@dataclass(frozen=True, slots=True)
class AskApproval:
    """Calls with side effects that no decision covers yet; answer with an ApprovalAnswer."""

    step: int
    calls: tuple[Ready, ...]
    pending: tuple[PendingCall, ...]
    """The same calls as a person sees them: id, digest, tool, arguments."""


@dataclass(frozen=True, slots=True)
class RunTools:
    """Validated, allowed calls; answer with one Outcome each, in order."""

    step: int
    calls: tuple[Ready, ...]


@dataclass(frozen=True, slots=True)
class SaveCheckpoint:
    checkpoint: Checkpoint


@dataclass(frozen=True, slots=True)
class StepDone:
    step: Step


Request = AskModel | AskApproval | RunTools | SaveCheckpoint | StepDone

# -- what the driver answers -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    reply: ModelReply
    duration_s: float


@dataclass(frozen=True, slots=True)
class ModelFailure:
    message: str
    duration_s: float


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """Per call: ``True`` (run it), ``False`` or a reason (denied), ``None`` (nobody can say
    now: the run pauses); and what a person would be shown to decide (a diff)."""

    decisions: tuple[Decision | None, ...]
    previews: tuple[str | None, ...]


Answer = ModelAnswer | ModelFailure | ApprovalAnswer | Sequence[Outcome] | None


@dataclass(frozen=True, slots=True)
class Ending:
    """How the run ended; the driver copies it onto the RunResult."""

    status: Status
    answer: str | None = None
    error: str | None = None
    stop_reason: str | None = None
    pending: tuple[PendingCall, ...] = ()


# -- what the loop is given ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopSetup:
    """What the loop needs from an agent, and nothing else."""

    labels: Labels
    tools: dict[str, Tool]
    budget: Budget
    system_prompt: str
    protocol: Protocol
    grammar: str | None = None
    numbered: bool = False
    task_label: str | None = None
    fence: bool = True
    """Fence tool output read from the world as untrusted data (SPEC S4)."""
    send_stop: bool = True
    """Whether the backend takes stop sequences; the loop cuts client-side anyway (L3)."""
    max_reply_tokens: int = 512
    temperature: float = 0.0
