"""Dialects models write by habit, end to end through the Agent (SPEC L11, issue 13).

The parser's own cases are in tests/protocol; here each dialect drives a real run
and the tool receives its arguments bound by name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tao import Agent, Status, StepKind, tool

Replay = Callable[[list[str]], Path]
calls: list[tuple[str, int]] = []


@tool
def repeat(word: str, times: int) -> str:
    """Repeat a word."""
    calls.append((word, times))
    return " ".join([word] * times)


@tool(effects="deletes")
def delete_file(path: str) -> str:
    """Delete a file."""
    calls.append((path, 0))
    return "deleted"


@pytest.fixture(autouse=True)
def _clear() -> None:
    calls.clear()


DIALECTS = {
    "langchain": 'Thought: repeat it.\nAction: repeat\nAction Input: {"word": "ho", "times": 3}',
    "json_blob": '```json\n{"action": "repeat", "action_input": {"word": "ho", "times": 3}}\n```',
    "bare_json": '{"action": "repeat", "action_input": {"word": "ho", "times": 3}}',
    "hermes": '<tool_call>{"name": "repeat", "arguments": {"word": "ho", "times": 3}}</tool_call>',
    "bracket_json": 'Thought: x\nAction: repeat[{"word": "ho", "times": 3}]',
}
FINISHES = {
    "langchain": "Action: finish\nAction Input: ho ho ho",
    "json_blob": '```json\n{"action": "Final Answer", "action_input": "ho ho ho"}\n```',
    "bare_json": '{"action": "Final Answer", "action_input": "ho ho ho"}',
    "hermes": '<tool_call>{"name": "finish", "arguments": {"answer": "ho ho ho"}}</tool_call>',
    "bracket_json": "Action: finish[ho ho ho]",
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_each_dialect_calls_the_tool_with_arguments_bound_by_name_L11(
    replay: Replay, dialect: str
) -> None:
    script = replay([DIALECTS[dialect], FINISHES[dialect]])
    result = Agent(f"replay:{script}", [repeat], record=False).run("say ho three times")
    assert calls == [("ho", 3)]
    assert result.steps[0].observation == "ho ho ho"
    assert (result.status, result.answer) == (Status.FINISHED, "ho ho ho")


def test_a_description_after_the_tool_is_never_taken_as_its_argument_L11(replay: Replay) -> None:
    script = replay(["Action: delete_file (remove a file)", "Action: finish[no]"])
    result = Agent(f"replay:{script}", [delete_file], record=False).run("x")
    assert calls == []
    assert result.steps[0].kind is StepKind.PARSE_ERROR
    assert result.status is Status.FINISHED


def test_a_description_with_an_action_input_is_a_call_with_that_input_L11(
    replay: Replay,
) -> None:
    script = replay(
        ['Action: repeat (say a word n times)\nAction Input: {"word": "a", "times": 2}',
         "Action: finish[a a]"]
    )  # fmt: skip
    Agent(f"replay:{script}", [repeat], record=False).run("x")
    assert calls == [("a", 2)]


def test_plain_text_binds_only_a_one_parameter_tool(replay: Replay) -> None:
    script = replay(["Action: repeat[ho three times]", "Action: finish[no]"])
    result = Agent(f"replay:{script}", [repeat], record=False).run("x")
    assert calls == []
    observation = result.steps[0].observation or ""
    # issue 30: the error shows the call to write, by name
    assert observation.startswith("Error: repeat needs word and times; call it as repeat[word=")
