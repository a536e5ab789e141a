"""One codec for every stored or printed record (issue 29): the JSON is what tao wrote before.

``tests/data/codec/shapes.json`` holds what the hand-written codecs (before
:mod:`tao.state.codec`) printed for the records built below, key order included: old
run logs, checkpoints, results files and ``--json`` readers see the very same text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tao.errors import StateError
from tao.eval.record import QuestionRecord
from tao.models.base import ModelReply, ToolCall
from tao.state.budget import Usage
from tao.state.config import Checkpoint, Completed, EvalTag, PendingCall, RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store.query import RunSummary

SHAPES = json.loads((Path(__file__).parent / "data/codec/shapes.json").read_text("utf-8"))

CALL = PendingCall(step=2, position=1, tool="write_file", arguments={"path": "a.txt"},
                   effects=("writes",), preview="+x")  # fmt: skip
WAITING = PendingCall(step=2, position=0, tool="run_tests", arguments={}, reason="code changed",
                      thought="why", interrupted=True)  # fmt: skip
REPLY = ModelReply(
    text="Thought: t", input_tokens=3, output_tokens=4, evaluated_tokens=2, finish_reason="stop",
    tool_calls=(ToolCall("c1", "write_file", {"path": "a.txt"}, '{"path":"a.txt"}'),),
    cache_read_tokens=1, cost_usd=0.5,
)  # fmt: skip
CHECKPOINT = Checkpoint(
    messages=({"role": "user", "content": "hi"},), elapsed_s=1.5, step=2, reply=REPLY,
    pending=(CALL, WAITING), decisions={CALL.id: True, WAITING.id: "no"}, executing=True,
    completed={CALL.id: Completed(observation="ok", duration_s=0.1, source="files")},
    approved={"run_tests": {"digest": "d"}},
)  # fmt: skip
REFUSED = Checkpoint(step=4, reply=ModelReply(text=""), refused_calls=3)
CONFIG = RunConfig(
    model="openai:gpt", tools=("calc", None), max_cost_usd=1.0, output_schema={"type": "object"},
    eval_tag=EvalTag(benchmark="fever", question_id="q1", gold="SUPPORTS"), pass_env=("HOME",),
    network=("tests",),
)  # fmt: skip
SYSTEM, USER = {"role": "system", "content": "s"}, {"role": "user", "content": "q"}
FIRST = Step(
    index=1, kind=StepKind.ACTION, thought="t", tool="calc", arguments={"expression": "1+1"},
    observation="2", model_input=[SYSTEM, USER], model_output="Action: calc[1+1]",
    input_tokens=5, output_tokens=2, cost_usd=0.25,
)  # fmt: skip
SECOND = Step(
    index=2, kind=StepKind.FINAL, tool="finish", arguments={"answer": "2"},
    model_input=[SYSTEM, USER, {"role": "assistant", "content": "a"}], evaluated_tokens=3,
    forced=True, repeat_of=1,
)  # fmt: skip
RESULT = RunResult(
    run_id="r1", task="q", model="m", status=Status.FINISHED, answer="2", steps=[FIRST, SECOND],
    usage=Usage(model_calls=2, input_tokens=5, output_tokens=2, cost_usd=None), pending=[CALL],
    started_at=3.0, duration_s=1.0, parent_id="r0",
)  # fmt: skip
BARE = RunResult(run_id="r2", task="t", model="local")
RECORD = QuestionRecord(3, "q3", "Q?", "A", None, 0.0, 0.5, "react", "hotpotqa", "local",
                        run_ids=["r1"], cost_usd=None)  # fmt: skip
SUMMARY = RunSummary(
    run_id="r1", task="q", model="m", lang="en", status=Status.INTERRUPTED, answer=None,
    error=None, stop_reason=None, started_at=3.0, finished_at=None, duration_s=None, steps=2,
    model_calls=2, input_tokens=5, output_tokens=2, evaluated_tokens=None, config=CONFIG,
    parent_id="r0", cost_usd=0.25,
)  # fmt: skip
UNKNOWN = RunSummary(
    run_id="r2", task="t", model="local", lang="tr", status=Status.FINISHED, answer="a",
    error=None, stop_reason="steps", started_at=1.0, finished_at=2.0, duration_s=1.0, steps=0,
    model_calls=0, input_tokens=0, output_tokens=0, evaluated_tokens=0, config=None,
)  # fmt: skip

ENCODED = {
    "pending": CALL.to_json(),
    "pending_reason": WAITING.to_json(),
    "checkpoint": CHECKPOINT.to_json(),
    "checkpoint_refused": REFUSED.to_json(),
    "config": CONFIG.to_json(),
    "config_default": RunConfig().to_json(),
    "step": SECOND.to_json(1),
    "result": RESULT.to_json(),
    "result_bare": BARE.to_json(),
    "usage": Usage().to_json(),
    "record": RECORD.to_json(),
    "summary": SUMMARY.to_json(),
    "summary_no_config": UNKNOWN.to_json(),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_record_is_written_as_tao_wrote_it_before_the_codec_M3(name: str) -> None:
    """Byte for byte, key order included; a field left out at its default (a call's reason,
    a checkpoint's ``refused_calls`` of 0) stays left out, computed keys (``forced``,
    ``tokens``, ``id``) stay in."""
    assert json.dumps(ENCODED[name], ensure_ascii=False) == SHAPES[name]


def test_every_record_reads_back_equal() -> None:
    """R1, M3: what is written reads back as the same typed value (steps' inputs rebuilt
    from their ``model_input_from`` deltas)."""
    assert PendingCall.from_json(CALL.to_json()) == CALL
    assert PendingCall.from_json(WAITING.to_json()) == WAITING
    assert Checkpoint.from_json(json.loads(json.dumps(CHECKPOINT.to_json()))) == CHECKPOINT
    assert Checkpoint.from_json(json.loads(json.dumps(REFUSED.to_json()))) == REFUSED
    assert RunConfig.from_json(json.loads(json.dumps(CONFIG.to_json()))) == CONFIG
    assert Usage.from_json(Usage().to_json()) == Usage()
    assert QuestionRecord.from_json(RECORD.to_json()) == RECORD
    back = RunResult.from_json(json.loads(json.dumps(RESULT.to_json())))
    assert back.steps == RESULT.steps and back.steps[1].model_input == SECOND.model_input
    assert back.usage == RESULT.usage and back.pending == RESULT.pending
    assert back.forced and not RunResult.from_json(BARE.to_json()).forced


def test_unknown_keys_are_ignored_and_absent_ones_take_their_meaning() -> None:
    """A newer tao's keys are ignored; a record from before a field existed reads as it
    meant then (a usage without a cost: unknown, not free)."""
    assert RunConfig.from_json({**CONFIG.to_json(), "from_the_future": [1]}) == CONFIG
    assert Usage.from_json({"model_calls": 1}).cost_usd is None
    assert RunResult.from_json({"run_id": "r", "status": "error"}).usage.cost_usd is None
    old = {k: v for k, v in RECORD.to_json().items() if k not in ("cost_usd", "forced", "answer")}
    assert QuestionRecord.from_json(old) == RECORD


V2 = {"schema_version": 2}
CALL_JSON = {"step": 1, "position": 0, "tool": "t"}


@pytest.mark.parametrize(
    ("read", "data", "message"),
    [
        (RunConfig.from_json, {"max_steps": "8"}, "max_steps must be an integer, not '8'"),
        (RunConfig.from_json, {"tools": [3]}, r"tools\[0\] must be"),
        (RunConfig.from_json, {"protocol": "smoke"}, "protocol must be one of auto, text, native"),
        (RunConfig.from_json, {"eval_tag": {"gold": "x"}}, "eval_tag.benchmark is missing"),
        (Checkpoint.from_json, {**V2, "pending": [{"step": 1}]}, r"pending\[0\].position"),
        (Checkpoint.from_json, {**V2, "decisions": {"x": 1}}, "decisions.x must be"),
        (Checkpoint.from_json, {**V2, "reply": {"text": 5}}, "reply.text must be a string"),
        (Checkpoint.from_json, {"schema_version": 3}, "newer than this tao"),
        (PendingCall.from_json, {**CALL_JSON, "arguments": []}, "arguments must be an object"),
    ],
)  # fmt: skip
def test_a_wrong_shape_is_a_state_error_naming_the_field(
    read: object, data: dict[str, object], message: str
) -> None:
    with pytest.raises(StateError, match=message):
        read(data)  # type: ignore[operator]


def test_a_wrong_step_or_results_line_is_a_value_error_naming_the_field() -> None:
    """The run log and the results file turn these into their own errors, with the place."""
    with pytest.raises(ValueError, match="kind is not a known StepKind: 'dance'"):
        Step.from_json({"index": 1, "kind": "dance"})
    with pytest.raises(ValueError, match="em must be a number, not True"):
        QuestionRecord.from_json({**RECORD.to_json(), "em": True})
    with pytest.raises(ValueError, match="status must be one of finished, no_answer, error"):
        QuestionRecord.from_json({**RECORD.to_json(), "status": "done"})


def test_what_is_printed_is_redacted_and_the_objects_keep_the_text_S8() -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    result = RunResult(run_id="r", task="t", model="m", answer=f"key {secret}")
    assert secret not in json.dumps(result.to_json())
    assert result.answer == f"key {secret}"


def test_a_checkpoint_from_before_approvals_and_refusals_reads_as_it_meant_then_R1() -> None:
    """A v2 checkpoint written before ``approved``, ``refused_calls`` and a call's
    ``reason``/``thought`` existed: no approved state (so a gated tool asks again), no
    refused calls, no reason or thought; and written back, it has the same keys as before."""
    old_call = {k: v for k, v in WAITING.to_json().items() if k not in ("reason", "thought")}
    stored = {**V2, "step": 2, "reply": {"text": "t"}, "pending": [old_call], "executing": False}
    read = Checkpoint.from_json(stored)
    assert read.approved == {} and read.refused_calls == 0
    assert read.pending[0].reason is None and read.pending[0].thought is None
    assert read.pending[0].id == WAITING.id
    written = read.to_json()
    assert "refused_calls" not in written and set(written["pending"][0]) == set(old_call)  # type: ignore[index, arg-type]


def test_a_step_written_with_argument_reads_as_one_field_for_its_arguments_M3() -> None:
    """Issue 30: JSON from before v12 (``--json``, exports, eval records) had ``argument``
    beside ``arguments``; it reads as today's step: the answer in ``arguments``, the text
    as written only for a call that never bound, and nothing of a bound call's text."""
    final = Step.from_json({"index": 3, "kind": "final", "tool": "finish", "argument": "395"})
    assert (final.arguments, final.answer, final.unparsed) == ({"answer": "395"}, "395", None)
    unknown = {"index": 1, "kind": "unknown_tool", "tool": "serch", "argument": "Ed Wood"}
    assert (Step.from_json(unknown).arguments, Step.from_json(unknown).unparsed) == (
        None,
        "Ed Wood",
    )
    bound = {"index": 2, "kind": "action", "tool": "calc", "argument": "1+1",
             "arguments": {"expression": "1+1"}}  # fmt: skip
    assert (Step.from_json(bound).arguments, Step.from_json(bound).unparsed) == (
        {"expression": "1+1"},
        None,
    )
    assert "argument" not in SECOND.to_json() and SECOND.to_json()["arguments"] == {"answer": "2"}
