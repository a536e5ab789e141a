"""The loop as a pure generator: typed requests out, answers in, no I/O and no clock (issue 11).

These tests drive :func:`tao.run.loop.react` by hand, the way h11's tests drive a
connection: every request the loop makes is visible, and time is whatever the
test says it is.
"""

from __future__ import annotations

from collections.abc import Callable

from tao.models.base import ModelReply
from tao.protocol.labels import get_labels
from tao.run.exchange import (
    ApprovalAnswer,
    AskApproval,
    AskModel,
    Ending,
    LoopSetup,
    ModelAnswer,
    ModelFailure,
    RunTools,
    SaveCheckpoint,
    StepsDone,
)
from tao.run.loop import Loop, react
from tao.state.calls import Outcome
from tao.state.config import RunConfig
from tao.state.result import Status, StepKind
from tao.tools.base import Tool, make_tool, tool


def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


@tool(effects="deletes")
def delete_log(path: str) -> str:
    """Delete a log file."""
    raise AssertionError("the loop never runs a tool itself")


def finish(answer: str) -> str:
    """Finish with the answer."""
    return answer


def setup(*tools: Tool, max_seconds: float = 60.0) -> LoopSetup:
    named = {t.name: t for t in (*tools, make_tool(finish))}
    return LoopSetup(
        config=RunConfig(max_steps=4, max_seconds=max_seconds),
        labels=get_labels("en"),
        tools=named,
        system_prompt="system",
        protocol="text",
    )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def reply(text: str) -> ModelAnswer:
    return ModelAnswer(ModelReply(text=text, input_tokens=5, output_tokens=2), 0.25)


def drive(loop: Loop, answer: Callable[[object], object]) -> tuple[list[object], Ending]:
    """Send each request's answer; collect every request and the ending."""
    seen: list[object] = []
    sent: object = None
    while True:
        try:
            request = loop.send(sent)  # type: ignore[arg-type]
        except StopIteration as stop:
            return seen, stop.value
        seen.append(request)
        sent = answer(request)


def test_a_step_is_a_checkpoint_a_model_request_a_tool_request_and_a_step() -> None:
    replies = iter([reply("Thought: add\nAction: add(a=2, b=3)"), reply("Action: finish[5]")])

    def answer(request: object) -> object:
        if isinstance(request, AskModel):
            return next(replies)
        if isinstance(request, RunTools):
            return [Outcome(StepKind.ACTION, "5", "add", {"a": 2, "b": 3}, 0.5)]
        return None

    seen, ending = drive(react(setup(make_tool(add)), "2+3?", clock=Clock()), answer)
    kinds = [type(r).__name__ for r in seen]
    assert kinds == [
        "SaveCheckpoint",  # before the first model call: a killed run can resume (R1)
        "AskModel",
        "RunTools",
        "StepsDone",  # the step and the checkpoint after it, stored together
        "AskModel",
        "StepsDone",
    ]
    assert ending == Ending(Status.FINISHED, answer="5")
    ask = seen[1]
    assert isinstance(ask, AskModel) and "Observation:" in ask.request.stop
    done, last = seen[3], seen[5]
    assert isinstance(done, StepsDone) and isinstance(last, StepsDone)
    ((step,),) = [done.steps]
    assert (step.duration_s, step.model_duration_s) == (0.75, 0.25)
    after = done.checkpoint()  # made when asked for, after the run went on: still step 1's end
    assert after is not None and done.usage.model_calls == 1 and after.step is None
    assert after.messages[-1]["content"].startswith("Observation")
    final = last.checkpoint()
    assert final is not None and final.messages[: len(after.messages)] == after.messages
    assert len(final.messages) > len(after.messages)  # the answer's turn came after


def test_the_time_budget_reads_the_injected_clock_only_L5() -> None:
    clock = Clock()

    def answer(request: object) -> object:
        if isinstance(request, AskModel):
            clock.now += 61  # the model took a minute: the budget is spent
            return reply("Thought: think more\nAction: add(a=1, b=1)")
        if isinstance(request, RunTools):
            return [Outcome(StepKind.ACTION, "2", "add", {"a": 1, "b": 1})]
        return None

    _, ending = drive(react(setup(make_tool(add)), "x", clock=clock), answer)
    assert ending.status is Status.MAX_STEPS
    assert ending.stop_reason == "time limit of 60 s reached"


def test_a_model_call_cut_by_the_time_limit_is_a_spent_budget_not_an_error_L1_L5() -> None:
    """The request carries the time left; a backend that fails once it is gone was cut by
    ``--max-seconds``: status ``max_steps`` with the limit named, the failed call kept as a
    step. The same failure with time left is the backend's: status ``error``."""
    for took, status in ((60.5, Status.MAX_STEPS), (3.0, Status.ERROR)):
        clock = Clock()

        def answer(request: object, took: float = took, clock: Clock = clock) -> object:
            if isinstance(request, SaveCheckpoint):
                clock.now += 0.5  # the first checkpoint took 0.5 s: 59.5 s left to ask
            if isinstance(request, AskModel):
                assert request.request.timeout_s == 59.5
                clock.now += took
                return ModelFailure("openai:m: 127.0.0.1 timed out", took)
            return None

        seen, ending = drive(react(setup(), "x", clock=clock), answer)
        assert ending.status is status
        (done,) = [r for r in seen if isinstance(r, StepsDone)]
        assert done.steps[0].kind is StepKind.MODEL_ERROR
        assert done.steps[0].observation == "openai:m: 127.0.0.1 timed out"
        if status is Status.MAX_STEPS:
            assert ending.stop_reason == "time limit of 60 s reached during a model call"
            assert ending.error is None
        else:
            assert ending.error == "openai:m: 127.0.0.1 timed out"


def test_a_side_effect_without_a_decision_pauses_with_a_bound_pending_call_S3_S7() -> None:
    def answer(request: object) -> object:
        if isinstance(request, AskModel):
            return reply("Action: delete_log[old.log]")
        if isinstance(request, AskApproval):
            return ApprovalAnswer((None,), ("- old.log",))
        assert isinstance(request, SaveCheckpoint)
        return None

    seen, ending = drive(react(setup(delete_log), "clean", clock=Clock()), answer)
    assert ending.status is Status.AWAITING_APPROVAL
    (call,) = ending.pending
    assert (call.tool, call.arguments, call.preview) == (
        "delete_log",
        {"path": "old.log"},
        "- old.log",
    )
    saved = seen[-1]
    assert isinstance(saved, SaveCheckpoint)
    assert saved.checkpoint.pending == (call,) and saved.checkpoint.step == 1
    # Resumed with a decision for that exact call id, the loop runs it without asking again.
    resumed = saved.checkpoint.__class__(
        messages=saved.checkpoint.messages,
        step=1,
        reply=saved.checkpoint.reply,
        decisions={call.id: True},
    )

    def approve_run(request: object) -> object:
        if isinstance(request, RunTools):
            assert [r.tool.name for r in request.calls] == ["delete_log"]
            return [Outcome(StepKind.ACTION, "deleted", "delete_log", {"path": "old.log"})]
        if isinstance(request, AskModel):
            return reply("Action: finish[done]")
        assert not isinstance(request, AskApproval)
        return None

    _, ending = drive(react(setup(delete_log), "clean", clock=Clock(), resume=resumed), approve_run)
    assert ending == Ending(Status.FINISHED, answer="done")
