"""What a run leaves behind: its steps, its usage, its status (SPEC L1).

A :class:`RunResult` is plain data so that the CLI can print it as JSON, the
run log can store it, and a test can compare it.

    result = agent.run("What is 2 + 2?")
    if result.status is Status.FINISHED:
        print(result.answer, result.usage.model_calls)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, cast

from tao.models.base import Message
from tao.state import codec, migrations
from tao.state.budget import ChildRun, Usage
from tao.state.compaction import Compaction
from tao.state.config import Approval, PendingCall, RunConfig
from tao.state.frozen import frozen
from tao.state.jsontypes import JSON, JSONObject
from tao.state.status import Status, StepKind

__all__ = ["RunObserver", "RunResult", "Status", "Step", "StepKind"]


@frozen(kw_only=True)
class Step:
    """One Thought → Action → Observation round, with what it cost."""

    index: int
    """1-based; parallel calls of one reply take consecutive indexes."""
    kind: StepKind
    thought: str | None = None
    tool: str | None = None
    """The tool called (``finish`` for a final answer)."""
    arguments: JSONObject | None = None
    """What the tool was called with, by parameter name, however the model wrote the call
    (``tool[text]``, ``tool(key=value)`` or a native call): ``{"answer": ...}`` for
    ``finish``. ``None`` when the call never became arguments (an unknown tool, text that
    did not bind): then :attr:`unparsed` holds what the model wrote."""
    unparsed: str | None = None
    """The argument text of a call that could not be bound, as the model wrote it; ``None``
    whenever :attr:`arguments` is set. The one place the raw text survives, so a trace
    shows ``tool[text]`` for a call that failed to bind, and a repeat of it is noticed."""
    observation: str | None = None
    """What went back to the model: the tool's output, an error or a format reminder."""
    model_input: list[Message] = field(default_factory=list)
    """The run's transcript when this step's request was made: the messages sent, unless
    the run compacted some (then :func:`tao.state.compaction.view` of it and the run's
    compactions up to this step is what was sent; the full observations stay here)."""
    model_output: str = ""
    """The model's raw reply."""
    duration_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    evaluated_tokens: int | None = None
    """Prompt tokens the backend really processed (smaller with a KV cache), if known."""
    model_duration_s: float = 0.0
    tool_duration_s: float = 0.0
    call_index: int = 0
    """Position among the parallel calls of one reply; its tokens count on position 0 only."""
    repeat_of: int | None = None
    """The earlier step that made the same call, with no state change between (SPEC L12)."""
    forced: bool = False
    """The model could only answer in this step (the last of the budget, or after repeats)."""
    model: str | None = None
    """The model that answered this step, when a fallback model did; ``None``: the run's own."""
    model_failures: list[str] = field(default_factory=list)
    """Why the models tried before it did not answer (kept in the trace, one line each)."""
    child_run: str | None = None
    """The run this call started, when its tool is an agent (``Agent.as_tool``)."""
    child_input_tokens: int = 0
    """What that child run spent; counted in this run's usage (a tool's model is billed too)."""
    child_output_tokens: int = 0
    child_cost_usd: float | None = 0.0
    """The child run's cost; ``None``: unknown, which makes the parent's total unknown."""
    cost_usd: float | None = None
    """What this step's model call cost in US dollars (:mod:`tao.models.pricing`); ``None``: unknown
    (a model with no price, a failed call). Parallel calls after the first carry ``0.0``."""
    compactions: tuple[Compaction, ...] = ()
    """The compactions made just before this step's request (issue 27): which steps, tokens
    before and after; a summary call's tokens and cost are counted in this step's."""
    approval: Approval | None = None
    """Who approved (or denied) this step's call with side effects, when and from where."""

    @property
    def child(self) -> ChildRun | None:
        """The agent-as-tool run this step started, with what it spent; ``None``: none."""
        if self.child_run is None:
            return None
        spent = (self.child_input_tokens, self.child_output_tokens, self.child_cost_usd)
        return ChildRun(self.child_run, *spent)

    @property
    def answer(self) -> str | None:
        """The final answer of a ``finish`` step (its ``answer`` argument); else ``None``."""
        if self.kind is not StepKind.FINAL or self.arguments is None:
            return None
        answer = self.arguments.get("answer")
        return answer if isinstance(answer, str) else None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def replace(self, **changes: object) -> Step:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def billed(self) -> bool:
        """Whether the provider bills this call: a failed model call costs nothing."""
        return self.kind is not StepKind.MODEL_ERROR

    def to_json(self, since: int = 0) -> JSONObject:
        """The step as JSON; ``model_input`` holds the messages from index ``since`` on.

        ``model_input_from`` says where they start: the whole input is the first
        ``model_input_from`` messages of the step before's input, then these
        (``0``: ``model_input`` is the whole input).
        """
        data = codec.encode(self)
        data["model_input"] = cast(JSON, self.model_input[since:])
        data["model_input_from"] = since
        data["approval"] = None if self.approval is None else self.approval.to_json()
        return data

    def new_messages_since(self, before: Step | None) -> int:
        """Where this step's input stops repeating ``before``'s: the index of its first new
        message (``0`` when it does not start with ``before``'s input)."""
        if before is None:
            return 0
        start = len(before.model_input)
        mine = self.model_input
        if start > len(mine) or (start and mine[start - 1] != before.model_input[start - 1]):
            return 0
        return start

    @classmethod
    def from_json(cls, data: Mapping[str, JSON], before: Step | None = None) -> Step:
        """Read :meth:`to_json`'s JSON; ``before`` (the step before) completes a step
        whose ``model_input_from`` is not 0. A wrong shape is a ``ValueError``."""
        data = migrations.step_without_argument(data)
        since = data.get("model_input_from")
        if isinstance(since, int) and since and before is not None:
            new = data.get("model_input") or []
            if not isinstance(new, list):
                raise codec.ShapeError(f"model_input must be a list, not {new!r}")
            data = {**data, "model_input": [*cast(list[JSON], before.model_input[:since]), *new]}
        return codec.decode(cls, dict(data), f"step {data.get('index')}")


@dataclass(kw_only=True)
class RunResult:
    """The outcome of :meth:`tao.Agent.run`: status, answer, full trace and usage.

    Mutable while its run goes on (the agent appends steps); plain data afterwards.
    """

    run_id: str
    task: str
    model: str
    status: Status = Status.RUNNING
    answer: str | None = None
    error: str | None = None
    steps: list[Step] = field(default_factory=list)
    stop_reason: str | None = None
    """Why a ``max_steps`` run stopped: which budget ran out (steps, time, tokens or cost)."""
    pending: list[PendingCall] | None = None
    """The calls an ``awaiting_approval`` run waits on."""
    usage: Usage = field(default_factory=Usage)
    lang: str = "en"
    started_at: float = 0.0
    duration_s: float = 0.0
    config: RunConfig | None = None
    """The settings the run was started with, when known."""
    parent_id: str | None = None
    """The run this one follows up (``tao run --continue``, ``agent.run(task, history=…)``):
    it started from that run's whole transcript. For a child run (``Agent.as_tool``,
    ``parent_step`` set): the run whose tool call started it."""
    parent_step: int | None = None
    """A child run's parent step: the step whose call started it (``None``: not a child)."""
    parent_position: int | None = None
    """That call's place among the parent step's calls."""
    output: object = None
    """A finished typed run's answer as its type (SPEC L13): a pydantic model instance, a
    dataclass, plain JSON data; ``answer`` holds the same as JSON text."""

    @property
    def finished(self) -> bool:
        return self.status is Status.FINISHED

    @property
    def forced(self) -> bool:
        """The answer came from a step that could only answer (the step budget spent, or a
        model that kept repeating itself): the model was not done, so the answer is suspect.
        ``tao run`` says so and exits 5, never 0 (issue 30)."""
        return self.status is Status.FINISHED and any(
            step.forced and step.kind is StepKind.FINAL for step in self.steps
        )

    def add_step(self, step: Step, usage: Usage | None = None) -> None:
        """Append ``step``; ``usage`` is the totals with it counted, if known already."""
        self.steps.append(step)
        self.usage = self.usage.plus(step) if usage is None else usage

    def to_json(self) -> JSONObject:
        """The ``--json`` shape: run_id, status, answer, error, steps, usage (+ context).

        Linear in the run's length (SPEC R3): each step's ``model_input`` holds only
        the messages new since the step before (see :meth:`Step.to_json`);
        :meth:`from_json` rebuilds the whole inputs. It is what people are shown, so
        secrets in it are redacted (SPEC S8); the Python objects keep the real text.
        """
        from tao.redact import redact_json

        return cast(JSONObject, redact_json(codec.encode(self)))

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> RunResult:
        """Read :meth:`to_json`'s JSON; a wrong shape is a ``ValueError``."""
        return codec.decode(cls, dict(data), "run")


def _steps_json(steps: list[Step]) -> JSON:
    """Each step with only the messages new since the step before (SPEC R3)."""
    encoded: list[JSON] = []
    before: Step | None = None
    for step in steps:
        encoded.append(step.to_json(step.new_messages_since(before)))
        before = step
    return encoded


def _steps_from(data: JSON, path: str) -> list[Step]:
    if not isinstance(data, list):
        raise codec.ShapeError(f"{path} must be a list, not {data!r}")
    steps: list[Step] = []
    for record in data:
        if not isinstance(record, dict):
            raise codec.ShapeError(f"{path}[{len(steps)}] must be an object, not {record!r}")
        steps.append(Step.from_json(record, steps[-1] if steps else None))
    return steps


codec.shape(Step, computed=("tokens",))
codec.shape(
    RunResult,
    keys=("run_id", "status", "answer", "error", "steps", "usage", "stop_reason", "forced",
          "pending", "task", "model", "lang", "started_at", "duration_s", "parent_id",
          "parent_step", "parent_position"),
    computed=("forced",),
    omit_default=("parent_step", "parent_position"),
    custom={"steps": codec.FieldCodec(_steps_json, _steps_from)},
    null_is_default=True,
    missing={"task": "", "model": "", "usage": {}},
)  # fmt: skip


class RunObserver(Protocol):
    """Watches a run as it happens: the live display and the run log are observers.

    ``on_step`` is called once per step *as soon as it is complete*, so a run
    killed mid-way has already recorded every finished step.
    """

    def on_start(self, result: RunResult) -> None: ...

    def on_step(self, result: RunResult, step: Step) -> None: ...

    def on_finish(self, result: RunResult) -> None: ...
