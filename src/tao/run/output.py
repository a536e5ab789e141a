"""Typed final answers (SPEC L13): the answer must match a JSON Schema, on every backend.

The type comes as a pydantic model, a dataclass, any type pydantic can describe, or a
JSON Schema itself. The run records the schema (``RunConfig.output_schema``); the
loop checks every final answer against it and, when it does not match, tells the
model which field is wrong so it can answer again. The result carries the answer as
JSON text (``result.answer``) and, given a Python type, the typed object
(``result.output``).

    class Person(BaseModel):
        name: str
        age: int

    result = Agent("local", ["wiki"], output_type=Person).run("Who directed Ed Wood?")
    result.output.name
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import cast

from tao.errors import ConfigError, ModelFacingError
from tao.state.jsontypes import JSON, JSONObject


class AnswerMismatch(ModelFacingError):
    """A final answer that does not match the run's output schema; the model is told why."""


def schema_of(output_type: object) -> JSONObject:
    """The JSON Schema of a pydantic model, a dataclass or any type; a dict is one already."""
    if isinstance(output_type, dict):
        _check_schema(cast(JSONObject, output_type))
        return cast(JSONObject, output_type)
    from pydantic import TypeAdapter

    try:
        return cast(JSONObject, TypeAdapter(cast(type[object], output_type)).json_schema())
    except Exception as error:  # pydantic says why it cannot describe the type
        raise ConfigError(f"output_type {output_type!r} has no JSON Schema: {error}") from None


def _check_schema(schema: JSONObject) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        message = error.message
        raise ConfigError(f"the output schema is not a valid JSON Schema: {message}") from None


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What a final answer must be: JSON matching ``schema``."""

    schema: JSONObject

    def check(self, answer: str) -> str:
        """The answer as canonical JSON text; :class:`AnswerMismatch` naming the bad field."""
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import best_match

        value = self._decode(answer)
        error = best_match(Draft202012Validator(self.schema).iter_errors(value))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "the answer"
            raise AnswerMismatch(f"at {where}: {error.message}")
        return json.dumps(value, ensure_ascii=False)

    def _decode(self, answer: str) -> JSON:
        try:
            value: JSON = json.loads(answer)
        except ValueError:
            if self.schema.get("type") == "string":
                return answer  # a plain-text answer to a string schema
            raise AnswerMismatch(
                "the answer is not JSON; write the answer as one JSON value"
            ) from None
        return value

    def hint(self) -> str:
        """What the prompt tells the model about the answer's form."""
        return (
            "The final answer must be JSON matching this JSON Schema, written inside "
            f"finish[...]: {json.dumps(self.schema, ensure_ascii=False)}"
        )


def typed(output_type: object, answer: str) -> object:
    """The checked answer as ``output_type`` (a pydantic model instance, a dataclass…)."""
    if output_type is None or isinstance(output_type, dict):
        return json.loads(answer)
    from pydantic import TypeAdapter

    return TypeAdapter(cast(type[object], output_type)).validate_json(answer)
