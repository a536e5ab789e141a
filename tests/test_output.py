"""Typed final answers (SPEC L13, issue 13): validated, fed back when wrong, typed on the result."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tao import Agent, Status, StepKind
from tao.models.base import ModelReply, ModelRequest, ToolCall

Replay = Callable[[list[str]], Path]


class Person(BaseModel):
    name: str
    age: int


@dataclass
class City:
    name: str
    population: int


def test_a_pydantic_answer_is_validated_and_typed_on_the_result_L13(replay: Replay) -> None:
    script = replay(['Thought: done.\nAction: finish[{"name": "Ada", "age": 36}]'])
    result = Agent(f"replay:{script}", ["calc"], record=False, output_type=Person).run("who?")
    assert result.status is Status.FINISHED
    assert result.output == Person(name="Ada", age=36)
    assert json.loads(result.answer or "") == {"name": "Ada", "age": 36}


def test_a_wrong_answer_names_the_bad_field_and_the_model_fixes_it_L13(replay: Replay) -> None:
    script = replay(
        [
            'Action: finish[{"name": "Ada", "age": "thirty-six"}]',
            'Final Answer: {"name": "Ada", "age": 36}',
        ]
    )
    result = Agent(f"replay:{script}", ["calc"], record=False, output_type=Person).run("who?")
    first, last = result.steps
    assert first.kind is StepKind.ACTION and first.tool == "finish"
    assert first.observation is not None and "age" in first.observation
    assert "Error" in first.observation
    assert last.kind is StepKind.FINAL and result.output == Person(name="Ada", age=36)


def test_a_dataclass_and_a_plain_json_schema_work_the_same(replay: Replay) -> None:
    script = replay(['Action: finish[{"name": "Oslo", "population": 709000}]'])
    city = Agent(f"replay:{script}", record=False, output_type=City).run("x")
    assert city.output == City(name="Oslo", population=709000)
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 2}
    script = replay(["Action: finish[[1]]", "Action: finish[[1, 2]]"])
    numbers = Agent(f"replay:{script}", record=False, output_type=schema).run("x")
    assert numbers.output == [1, 2]
    assert numbers.steps[0].observation is not None
    assert numbers.steps[0].observation.startswith("Error")


class Native:
    """A native tool-calling model that records the finish tool's schema it was sent."""

    name, supports_stop, supports_grammar, supports_tools = "native", True, False, True

    def __init__(self) -> None:
        self.finish_schema: object = None

    def complete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        (finish,) = [t for t in request.tools or () if t.name == "finish"]
        self.finish_schema = finish.parameters
        call = ToolCall("c1", "finish", {"answer": {"name": "Ada", "age": 36}})
        return ModelReply(text="", tool_calls=(call,))

    async def acomplete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        return self.complete(request, on_text)


def test_native_backends_get_the_schema_on_finish_and_typed_answers_back_L13() -> None:
    model = Native()
    result = Agent(model, ["calc"], record=False, output_type=Person).run("who?")
    assert isinstance(model.finish_schema, dict)
    assert model.finish_schema["properties"]["answer"]["required"] == ["name", "age"]
    assert result.output == Person(name="Ada", age=36)


def test_output_schema_on_the_command_line(replay: Replay, tao_cli: Any, tmp_path: Path) -> None:
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(Person.model_json_schema()))
    script = replay(['Action: finish[{"name": "Ada", "age": 36}]'])
    out = tao_cli("run", "x", "--model", f"replay:{script}", "--output-schema", str(schema),
                  "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(json.loads(out.stdout)["answer"]) == {"name": "Ada", "age": 36}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    refused = tao_cli("run", "x", "--model", f"replay:{script}", "--output-schema", str(bad))
    assert refused.returncode == 2 and "cannot read the output schema" in refused.stderr


def test_the_local_grammar_constrains_the_answer_to_the_schema() -> None:
    pytest.importorskip("llama_cpp")
    from tao.protocol.grammar import check_grammar, react_grammar
    from tao.protocol.labels import get_labels

    grammar = react_grammar(
        get_labels("en"), ["calculator"], answer_schema=Person.model_json_schema()
    )
    check_grammar(grammar)  # llama.cpp parses it
    assert 'finish[" answer-json "]' in grammar and "answer-json ::=" in grammar
