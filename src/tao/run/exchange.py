"""What the ReAct loop and its driver say to each other: typed requests out, answers in.

The loop (:mod:`tao.run.loop`) yields a request and is sent its answer:

==================  =====================================================
``AskModel``        a :class:`ModelAnswer` or a :class:`ModelFailure`
``AskApproval``     an :class:`ApprovalAnswer`, one decision per call
``RunTools``        one :class:`~tao.run.act.Outcome` per call, in order
``SaveCheckpoint``  nothing; store it (after every step, before side effects, on pause)
``StepDone``        nothing; record it, show it
==================  =====================================================

and returns an :class:`Ending`. All frozen dataclasses, as h11's events are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, dataclass_transform

from tao.models.base import Message, ModelReply, ModelRequest
from tao.models.window import Counter
from tao.protocol.labels import Labels
from tao.run.output import OutputSpec
from tao.state.budget import Usage
from tao.state.calls import Outcome, Ready
from tao.state.compaction import Compaction
from tao.state.config import Approval, Checkpoint, Decision, PendingCall, RunConfig
from tao.state.frozen import frozen
from tao.state.result import Status, Step
from tao.tools.base import Tool

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def message(cls: type[T]) -> type[T]:
    """A message between the loop and its driver: a frozen, slotted dataclass (as h11's events)."""
    return frozen(cls)


# -- what the loop asks for ------------------------------------------------------------------


@message
class AskModel:
    step: int
    request: ModelRequest
    compactions: tuple[Compaction, ...] = ()
    """Compactions made for this request and not announced before (the stream shows them)."""


@message
class AskApproval:
    """Calls with side effects that no decision covers yet; answer with an ApprovalAnswer."""

    step: int
    calls: tuple[Ready, ...]
    pending: tuple[PendingCall, ...]
    """The same calls as a person sees them: id, digest, tool, arguments."""


@message
class ChildResume:
    """A child run (``Agent.as_tool``) that paused this run, to be continued by the call
    that started it, with the decisions taken on its calls since (issue 31)."""

    run_id: str
    decisions: Mapping[str, Decision]
    """By the child's own call id: what the person decided on the parent's pending call."""
    approvals: Mapping[str, Approval]
    """Who took those decisions, when and from where, by the child's call id."""


@message
class RunTools:
    """Validated, allowed calls; answer with one Outcome each, in order."""

    step: int
    calls: tuple[Ready, ...]
    approved_previews: tuple[str | None, ...]
    """Per call, what the person who approved it was shown; the call runs only if that is
    still what it would do (``Tool.confirm``, SPEC S6/S7). ``None``: nothing to compare."""
    timeout_s: float | None = None
    """What is left of the run's time budget; no call may outlast it."""
    positions: tuple[int, ...] = ()
    """Per call, its place among the reply's calls: a child run it starts is recorded
    under this run's step and that place, where a resumed run finds it again."""
    children: tuple[ChildResume | None, ...] = ()
    """Per call, the paused child run it continues, if the run stopped on one."""


@message
class SaveCheckpoint:
    checkpoint: Checkpoint


@message
class StepsDone:
    """A reply acted on: one message a turn, as the run log writes them together."""

    steps: tuple[Step, ...]
    """One per call of the reply (one for an answer, a parse or model error)."""
    usage: Usage
    """The run's totals with ``steps`` counted (the loop's; the driver need not add again)."""
    transcript: Sequence[Message] | None
    """The run's transcript, whose first ``length`` messages are where it stands after
    ``steps``: the loop's own list, which it only ever appends to (never change it).
    ``None`` when the run ends on a failed model call (no checkpoint after it)."""
    length: int = 0
    elapsed_s: float = 0.0
    """Run time spent when ``steps`` were done."""
    compactions: tuple[Compaction, ...] = ()
    """Every compaction of the run so far: what the model is shown instead of the transcript."""
    window: int | None = None
    """The context window the run keeps to (set, the backend's, or learned)."""

    def checkpoint(self) -> Checkpoint | None:
        """Where the run stands after ``steps``. Made when wanted, not every turn: a run log
        writes only the latest one held, and a run with no log wants only its last."""
        if self.transcript is None:
            return None
        return Checkpoint(
            messages=tuple(self.transcript[: self.length]),
            elapsed_s=self.elapsed_s,
            compactions=self.compactions,
            window=self.window,
        )


Request = AskModel | AskApproval | RunTools | SaveCheckpoint | StepsDone

# -- what the driver answers -----------------------------------------------------------------


@message
class ModelAnswer:
    reply: ModelReply
    duration_s: float


@message
class ModelFailure:
    message: str
    duration_s: float


@message
class ApprovalAnswer:
    """Per call: ``True`` (run it), ``False`` or a reason (denied), ``None`` (nobody can say
    now: the run pauses); and what a person would be shown to decide (a diff)."""

    decisions: tuple[Decision | None, ...]
    previews: tuple[str | None, ...]
    """What each call would do, as the person deciding sees it (a diff); ``None`` if the tool
    has no preview."""
    approvals: tuple[Approval | None, ...] = ()
    """Per call, who took its decision, when and from where (``None`` where none was taken)."""


Answer = ModelAnswer | ModelFailure | ApprovalAnswer | Sequence[Outcome] | None


@message
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
    """What the loop needs from an agent: the run's settings, and what was decided from them."""

    config: RunConfig
    """The run's settings (budget, numbered labels, fences, reply limits…), never copied."""
    labels: Labels
    """The label language ``config.lang`` names."""
    tools: dict[str, Tool]
    """Every tool the model may call, by name, ``finish`` included."""
    system_prompt: str
    protocol: Literal["text", "native"]
    """``config.protocol`` resolved for this backend (``auto`` is never left)."""
    grammar: str | None = None
    """A GBNF grammar for backends that constrain decoding."""
    answer_grammar: str | None = None
    """The same grammar allowing only the final answer, for a step that must answer."""
    send_stop: bool = True
    """Whether the backend takes stop sequences; the loop cuts client-side anyway (L3)."""
    output: OutputSpec | None = None
    """What a final answer must be (``config.output_schema``), checked before it is taken."""
    window: int | None = None
    """The model's context window in tokens, if known before the first request
    (``config.context_window``, else the backend's, :func:`tao.models.window.window_of`)."""
    count: Counter | None = None
    """Tokens a prompt takes by the backend's own tokenizer; ``None``: an estimate."""
