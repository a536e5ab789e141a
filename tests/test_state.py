"""Typed run state: RunConfig, PendingCall and Checkpoint at the run log's edge (issue 11)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tao.errors import StateError
from tao.models.base import ModelReply, ToolCall
from tao.state.config import (
    Checkpoint,
    Completed,
    EvalTag,
    PendingCall,
    RunConfig,
    call_digest,
)
from tao.state.jsontypes import canonical_json


def test_run_config_round_trips_through_json_and_ignores_a_newer_taos_keys() -> None:
    config = RunConfig(model="replay:x.json", tools=("calc", None), max_steps=5, lang="sv",
                       fallback_models=("openai:gpt-5",))  # fmt: skip
    data = json.loads(json.dumps(config.to_json()))
    assert RunConfig.from_json(data) == config
    assert RunConfig.from_json({**data, "from_the_future": 1}) == config


def test_run_config_refuses_bad_values_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="max_steps must be at least 1"):
        RunConfig(max_steps=0)
    with pytest.raises(StateError, match="stored config is not valid"):
        RunConfig.from_json({"max_steps": 0})
    with pytest.raises(StateError, match="tools must be a list"):
        RunConfig.from_json({"tools": "calc"})


def test_an_eval_tag_round_trips_and_a_damaged_one_is_a_state_error() -> None:
    tag = EvalTag(benchmark="fever", question_id="q7", gold="SUPPORTS", strategy="react")
    config = RunConfig(model="local", eval_tag=tag)
    data = json.loads(json.dumps(config.to_json()))
    assert data["eval_tag"] == {"benchmark": "fever", "question_id": "q7", "gold": "SUPPORTS",
                                "strategy": "react"}  # fmt: skip
    assert RunConfig.from_json(data) == config
    assert RunConfig.from_json({**data, "eval_tag": None}).eval_tag is None
    for bad in ("fever", {"benchmark": "fever", "question_id": 7, "gold": "x"}):
        with pytest.raises(StateError, match="eval_tag"):
            RunConfig.from_json({**data, "eval_tag": bad})


def test_pending_call_id_and_digest_follow_from_the_call_S7() -> None:
    one = PendingCall(step=2, position=0, tool="write_file", arguments={"path": "a", "n": 1})
    same = PendingCall(step=2, position=0, tool="write_file", arguments={"n": 1, "path": "a"})
    other = PendingCall(step=2, position=0, tool="write_file", arguments={"path": "b", "n": 1})
    assert one.digest == same.digest == call_digest("write_file", {"path": "a", "n": 1})
    assert one.id == same.id and one.id.startswith("s2c0-")
    assert other.digest != one.digest and other.id != one.id
    assert PendingCall.from_json(one.to_json()) == one


def test_checkpoint_round_trips_with_its_reply_and_decisions() -> None:
    call = PendingCall(step=1, position=0, tool="delete_file", arguments={"path": "x"})
    reply = ModelReply(
        text="Action: delete_file[x]",
        input_tokens=3,
        tool_calls=(ToolCall("c1", "delete_file", {"path": "x"}, '{"path": "x"}'),),
    )
    checkpoint = Checkpoint(
        messages=({"role": "system", "content": "s"},),
        elapsed_s=1.5,
        step=1,
        reply=reply,
        pending=(call,),
        decisions={call.id: "not that one"},
    )
    back = Checkpoint.from_json(json.loads(json.dumps(checkpoint.to_json())))
    assert back == checkpoint


def test_a_checkpoint_written_by_tao_0_1_is_migrated() -> None:
    """Today's main stored plain dicts: decisions by position, "elapsed", no version."""
    old = {
        "messages": [{"role": "user", "content": "clean up"}],
        "elapsed": 2.0,
        "step": 3,
        "reply": {"text": "Action: delete_log[old.log]", "input_tokens": 9, "tool_calls": []},
        "pending": [
            {
                "position": 0,
                "tool": "delete_log",
                "arguments": {"path": "old.log"},
                "effects": ["deletes"],
                "preview": None,
            }
        ],
        "decisions": {"0": True},
    }
    checkpoint = Checkpoint.from_json(old)
    (call,) = checkpoint.pending
    assert (call.step, call.tool, call.effects) == (3, "delete_log", ("deletes",))
    assert checkpoint.decisions == {call.id: True}
    assert checkpoint.elapsed_s == 2.0 and checkpoint.reply is not None
    assert checkpoint.reply.input_tokens == 9


def test_a_checkpoint_from_a_newer_tao_or_corrupt_is_a_state_error() -> None:
    with pytest.raises(StateError, match="newer than this tao"):
        Checkpoint.from_json({"schema_version": 99})
    with pytest.raises(StateError, match="checkpoint is not valid"):
        Checkpoint.from_json({"schema_version": 1, "reply": {"no_text": 1}})


def test_the_journal_round_trips_and_a_v1_checkpoint_still_loads_R1() -> None:
    """v2 adds the journal's second half (``completed``) and ``PendingCall.interrupted``; a
    checkpoint written by v1 (no completion records) loads with none, its call unmarked."""
    call = PendingCall(
        step=2, position=0, tool="send_invoice", arguments={"to": "ACME"}, interrupted=True
    )
    checkpoint = Checkpoint(
        step=2,
        reply=ModelReply(text="Action: send_invoice[ACME]"),
        pending=(call,),
        executing=True,
        completed={"s2c1-abc": Completed(observation="sent", duration_s=0.5, source=None)},
    )
    data = json.loads(json.dumps(checkpoint.to_json()))
    assert data["schema_version"] == 2 and data["pending"][0]["interrupted"] is True
    assert Checkpoint.from_json(data) == checkpoint
    assert call.warning is not None and "may have taken effect" in call.warning
    v1 = {**data, "schema_version": 1, "pending": [{**data["pending"][0]}]}
    del v1["completed"], v1["pending"][0]["interrupted"]
    old = Checkpoint.from_json(v1)
    assert old.executing and old.completed == {} and not old.pending[0].interrupted
    assert old.pending[0].id == call.id and old.pending[0].warning is None


@settings(max_examples=500, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), st.text(max_size=8) | st.integers(), max_size=2)
    | st.text(max_size=4)
)
def test_canonical_json_is_json_with_sorted_keys_and_no_spaces_S7(
    value: dict[str, object] | str,
) -> None:
    """The digest an approval is bound to (S7) must not depend on a shortcut's spelling."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == expected  # type: ignore[arg-type]
