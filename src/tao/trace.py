"""What a run leaves behind: its steps, its usage, its status (SPEC L1).

A :class:`RunResult` is plain data so that the CLI can print it as JSON, the
run log can store it, and a test can compare it.

    result = agent.run("What is 2 + 2?")
    if result.status is Status.FINISHED:
        print(result.answer, result.usage.model_calls)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from tao.models.base import Message


class Status(StrEnum):
    """How a run ended; budget exhaustion is a status, never an exception."""

    FINISHED = "finished"
    MAX_STEPS = "max_steps"
    AWAITING_APPROVAL = "awaiting_approval"
    ERROR = "error"


class StepKind(StrEnum):
    """What the model's reply turned out to be, so traces can be filtered."""

    ACTION = "action"  # a tool ran (or refused) and produced an observation
    FINAL = "final"  # finish[...] or a final-answer line
    PARSE_ERROR = "parse_error"  # no action could be read; a format reminder went back
    UNKNOWN_TOOL = "unknown_tool"
    MODEL_ERROR = "model_error"  # the backend failed; the run ends with status error


@dataclass
class Step:
    """One Thought → Action → Observation round, with what it cost."""

    index: int
    kind: StepKind
    thought: str | None
    tool: str | None
    argument: str | None
    observation: str | None
    model_input: list[Message]
    model_output: str
    duration_s: float
    input_tokens: int = 0
    output_tokens: int = 0
    #: Prompt tokens the backend really processed (smaller with a KV cache), if known.
    evaluated_tokens: int | None = None
    model_duration_s: float = 0.0
    tool_duration_s: float = 0.0
    #: Typed arguments the tool was called with (call form or bound bracket argument).
    arguments: dict[str, Any] | None = None
    #: Position among the parallel calls of one model reply (native tool calling): each
    #: call is its own step, and the reply's tokens are counted on position 0 only.
    call_index: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = str(self.kind)
        data["tokens"] = self.tokens
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["kind"] = StepKind(fields["kind"])
        return cls(**fields)


@dataclass
class Usage:
    """Totals over a run; ``evaluated_tokens`` shows what a KV cache saved."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    evaluated_tokens: int | None = None

    def add(self, step: Step) -> None:
        if step.call_index:
            return  # a parallel call of a reply already counted
        self.model_calls += 1
        self.input_tokens += step.input_tokens
        self.output_tokens += step.output_tokens
        if step.evaluated_tokens is not None:
            self.evaluated_tokens = (self.evaluated_tokens or 0) + step.evaluated_tokens


@dataclass
class RunResult:
    """The outcome of :meth:`tao.Agent.run`: status, answer, full trace and usage."""

    run_id: str
    task: str
    model: str
    status: Status
    answer: str | None
    error: str | None = None
    steps: list[Step] = field(default_factory=list)
    #: Why a ``max_steps`` run stopped: which budget ran out (steps, time or tokens).
    stop_reason: str | None = None
    #: The calls an ``awaiting_approval`` run waits on: tool, arguments, effects, preview.
    pending: list[dict[str, Any]] | None = None
    usage: Usage = field(default_factory=Usage)
    lang: str = "en"
    started_at: float = 0.0
    duration_s: float = 0.0

    @property
    def finished(self) -> bool:
        return self.status is Status.FINISHED

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape: run_id, status, answer, error, steps, usage (+ context)."""
        return {
            "run_id": self.run_id,
            "status": str(self.status),
            "answer": self.answer,
            "error": self.error,
            "steps": [step.to_dict() for step in self.steps],
            "usage": asdict(self.usage),
            "stop_reason": self.stop_reason,
            "pending": self.pending,
            "task": self.task,
            "model": self.model,
            "lang": self.lang,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        return cls(
            run_id=data["run_id"],
            task=data.get("task", ""),
            model=data.get("model", ""),
            status=Status(data["status"]),
            answer=data.get("answer"),
            error=data.get("error"),
            steps=[Step.from_dict(s) for s in data.get("steps", [])],
            usage=Usage(**data.get("usage", {})),
            stop_reason=data.get("stop_reason"),
            pending=data.get("pending"),
            lang=data.get("lang", "en"),
            started_at=data.get("started_at", 0.0),
            duration_s=data.get("duration_s", 0.0),
        )


class RunObserver(Protocol):
    """Watches a run as it happens: the live display and the run log are observers.

    ``on_step`` is called once per step *as soon as it is complete*, so a run
    killed mid-way has already recorded every finished step.
    """

    def on_start(self, result: RunResult) -> None: ...

    def on_step(self, result: RunResult, step: Step) -> None: ...

    def on_finish(self, result: RunResult) -> None: ...
