"""Native tool calling, parallel calls, the async and streaming APIs, approval (L7, S3, issue 6)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao import Agent, Status, StepKind, TaoError, tool
from tao.events import ActionEvent, AnswerEvent, FinalEvent, ObservationEvent, TextDelta

Replay = Callable[[list[Any]], Path]


def call(tool_name: str, /, **arguments: Any) -> dict[str, Any]:
    return {"name": tool_name, "arguments": arguments}


def test_native_tool_calls_run_and_the_transcript_carries_them_L7(replay: Replay) -> None:
    script = replay(
        [
            {
                "content": "I will compute.",
                "tool_calls": [call("calculator", expression="17 * 23 + 4")],
            },
            {"content": "", "tool_calls": [call("finish", answer="395")]},
        ]
    )
    result = Agent(f"replay:{script}", ["calc"], record=False).run("What is 17 * 23 + 4?")
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    first = result.steps[0]
    assert (first.thought, first.tool, first.arguments, first.observation) == (
        "I will compute.",
        "calculator",
        {"expression": "17 * 23 + 4"},
        "395",
    )
    assert first.unparsed is None  # a native call's arguments are the record, not its JSON text
    assistant, tool_turn = result.steps[1].model_input[-2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "calculator"
    assert tool_turn == {
        "role": "tool",
        "tool_call_id": assistant["tool_calls"][0]["id"],
        "content": "395",
    }


def test_parallel_calls_run_concurrently_and_return_in_model_order(replay: Replay) -> None:
    both_running = threading.Barrier(2, timeout=5)

    @tool
    def fetch(name: str) -> str:
        """Fetch a record."""
        both_running.wait()  # only passes if the two calls overlap
        return f"record {name}"

    script = replay(
        [
            {"tool_calls": [call("fetch", name="a"), call("fetch", name="b")]},
            {"tool_calls": [call("finish", answer="a and b")]},
        ]
    )
    result = Agent(f"replay:{script}", [fetch], record=False).run("fetch a and b")
    assert [s.observation for s in result.steps[:2]] == ["record a", "record b"]
    assert [(s.index, s.call_index) for s in result.steps] == [(1, 0), (2, 1), (3, 0)]
    assert result.usage.model_calls == 2
    assert result.steps[1].input_tokens == 0  # the reply's tokens are counted once


def test_bad_json_arguments_become_an_error_observation_L4(replay: Replay) -> None:
    script = replay(
        [
            {"tool_calls": [{"name": "calculator", "arguments": "not an object"}]},
            {"tool_calls": [call("finish", answer="x")]},
        ]
    )
    result = Agent(f"replay:{script}", ["calc"], record=False).run("task")
    assert result.steps[0].observation is not None
    assert result.steps[0].observation.startswith("Error:")


def test_native_reply_without_a_call_gets_a_reminder(replay: Replay) -> None:
    script = replay([{"content": "I think it is 4."}, {"tool_calls": [call("finish", answer="4")]}])
    result = Agent(f"replay:{script}", ["calc"], protocol="native", record=False).run("2+2")
    assert result.steps[0].kind is StepKind.PARSE_ERROR
    assert "call a tool or finish" in (result.steps[0].observation or "")
    assert result.answer == "4"


def test_native_protocol_needs_a_backend_that_supports_it(replay: Replay) -> None:
    with pytest.raises(TaoError, match="does not support native tool calling"):
        Agent(f"replay:{replay(['Action: finish[x]'])}", protocol="native", record=False)


SCRIPT = ["Thought: add\nAction: calculator[2 + 2]", "Thought: done\nAction: finish[4]"]


def test_arun_mirrors_run(replay: Replay) -> None:
    sync = Agent(f"replay:{replay(SCRIPT)}", ["calc"], record=False).run("2+2")
    async_ = asyncio.run(Agent(f"replay:{replay(SCRIPT)}", ["calc"], record=False).arun("2+2"))
    strip = ("run_id", "started_at", "duration_s", "model")

    def shape(d: dict[str, Any]) -> dict[str, Any]:
        d = {k: v for k, v in d.items() if k not in strip}
        d["steps"] = [
            {k: v for k, v in s.items() if not k.endswith("duration_s")} for s in d["steps"]
        ]
        return d

    assert shape(async_.to_json()) == shape(sync.to_json())


def test_stream_yields_text_actions_observations_and_the_result_last(replay: Replay) -> None:
    events = list(Agent(f"replay:{replay(SCRIPT)}", ["calc"], record=False).stream("2+2"))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "TextDelta",
        "ActionEvent",
        "ObservationEvent",
        "TextDelta",
        "AnswerEvent",
        "FinalEvent",
    ]
    assert isinstance(events[0], TextDelta) and events[0].text == SCRIPT[0]
    assert isinstance(events[1], ActionEvent) and events[1].arguments == {"expression": "2 + 2"}
    assert isinstance(events[2], ObservationEvent) and events[2].step.observation == "4"
    assert isinstance(events[-2], AnswerEvent) and events[-2].answer == "4"
    assert events[-2].step.kind is StepKind.FINAL  # the answer's step, no observation (issue 30)
    assert isinstance(events[-1], FinalEvent) and events[-1].result.answer == "4"


def test_astream_mirrors_stream(replay: Replay) -> None:
    async def collect() -> list[Any]:
        agent = Agent(f"replay:{replay(SCRIPT)}", ["calc"], record=False)
        return [event async for event in agent.astream("2+2")]

    events = asyncio.run(collect())
    assert [type(e).__name__ for e in events][-1] == "FinalEvent"
    assert events[-1].result.answer == "4"
    assert sum(isinstance(e, ObservationEvent) for e in events) == 1
    assert sum(isinstance(e, AnswerEvent) for e in events) == 1
