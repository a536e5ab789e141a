"""What :meth:`tao.Agent.stream` yields while a run happens (SPEC L1, issue 6).

for event in agent.stream("What is 17 * 23 + 4?"):
    match event:
        case TextDelta(text=text):
            print(text, end="")
        case ActionEvent(tool=tool, arguments=arguments):
            print(f"\\n-> {tool}({arguments})")
        case ObservationEvent(step=step):
            print(step.observation)
        case AnswerEvent(answer=answer):
            print("answer step:", answer)
        case CompactionEvent() as made:
            print(made.describe())
        case FinalEvent(result=result):
            print("answer:", result.answer)
"""

from __future__ import annotations

from dataclasses import dataclass

from tao.state.compaction import Compaction
from tao.state.config import PendingCall
from tao.state.jsontypes import JSONObject
from tao.state.result import RunResult, Step


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Model text as it arrives (thought tokens); one per chunk the backend streams."""

    step: int
    text: str


@dataclass(frozen=True, slots=True)
class ActionEvent:
    """The model asked for a tool call; it is about to run (or to be approved)."""

    step: int
    tool: str
    arguments: JSONObject
    """What the tool is called with, by parameter name (bound and validated)."""


@dataclass(frozen=True, slots=True)
class ApprovalEvent:
    """A call with side effects waits for a person (SPEC S3); ``call`` names it exactly."""

    step: int
    tool: str
    arguments: JSONObject
    call: PendingCall


@dataclass(frozen=True, slots=True)
class ObservationEvent:
    """A step with an observation is complete: its observation, timings and tokens are in
    ``step``. The final answer's step is an :class:`AnswerEvent`, never one of these."""

    step: Step


@dataclass(frozen=True, slots=True)
class AnswerEvent:
    """The model's final answer step is complete (issue 30: it came as an ``ObservationEvent``
    of kind ``FINAL``); ``step`` holds its thought, timings and tokens. The run's end, with
    its status (a forced answer, a failed typed answer), is the :class:`FinalEvent` after."""

    step: Step

    @property
    def answer(self) -> str:
        """The answer as the model gave it."""
        return self.step.answer or ""


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """Older steps were compacted to make room in the context window (issue 27), just
    before the model request of ``compaction.step``. Only the model's view changes; the
    run's record keeps every observation. ``compaction`` is the decision exactly as the run
    log stores it (``Step.compactions`` of that step, once it is done), so the stream and
    the log cannot disagree: which steps, the policy, the tokens before and after, the
    window and why."""

    compaction: Compaction

    def describe(self) -> str:
        """The line ``tao runs show`` prints for it: ``steps 1-12 compacted (elide): …``."""
        return self.compaction.describe()


@dataclass(frozen=True, slots=True)
class FinalEvent:
    """The run ended; ``result.status`` says how."""

    result: RunResult


Event = (
    TextDelta
    | ActionEvent
    | ApprovalEvent
    | CompactionEvent
    | ObservationEvent
    | AnswerEvent
    | FinalEvent
)
