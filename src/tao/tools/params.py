"""The pydantic model a tool's arguments are validated with, made from the function's hints.

Validation happens on every call, so the commonest case skips pydantic: when every
parameter is a bare ``str``, ``int``, ``float`` or ``bool`` and the model passed
each one a value of exactly that type, pydantic would hand back the very same
values, so :func:`as_given` says so at a dict lookup's cost. Anything else (a
missing argument, a ``"5"`` for an ``int``, a constraint, a validator, a model
config of the user's) goes through pydantic, which owns the rules and the messages.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model

from tao.errors import InternalError, ToolDefinitionError
from tao.state.jsontypes import JSONObject

#: Types whose exact instances pydantic's lax mode returns unchanged.
_AS_IS = (str, int, float, bool)
#: The config :func:`params_model` gives its models; any other config may transform values.
_CONFIG = ConfigDict(extra="forbid")


def params_model(
    fn: Callable[..., object], tool_name: str, doc: docstring_parser.Docstring
) -> tuple[type[BaseModel], tuple[str, ...]]:
    """The pydantic model that validates ``fn``'s arguments, and its parameter names in order."""
    param_docs: dict[str, str] = {p.arg_name: p.description or "" for p in doc.params}
    try:
        hints = get_type_hints(fn, include_extras=True)  # Annotated constraints kept
    except Exception as error:
        raise ToolDefinitionError(f"cannot read type hints of {tool_name}: {error}") from error
    # create_model types each field definition (a type form and a FieldInfo) as Any too.
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"{tool_name}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise ToolDefinitionError(f"{tool_name}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            hints[param.name],
            Field(default, description=param_docs.get(param.name)),
        )
    return create_model(f"{tool_name}_args", __config__=_CONFIG, **fields), tuple(fields)


@functools.cache
def exact_types(model: type[BaseModel]) -> tuple[tuple[str, type], ...] | None:
    """Each field's type, when every field is a bare ``str``/``int``/``float``/``bool`` of a
    model with no validators and the default config; ``None``: pydantic must see every call."""
    decorators = model.__pydantic_decorators__
    if dict(model.model_config) != dict(_CONFIG) or any(
        (
            decorators.validators,
            decorators.field_validators,
            decorators.root_validators,
            decorators.model_validators,
        )
    ):
        return None
    types: list[tuple[str, type]] = []
    for name, info in model.model_fields.items():
        if info.annotation not in _AS_IS or info.metadata or info.alias or info.validation_alias:
            return None
        if not isinstance(info.annotation, type):
            raise InternalError(f"{name}: {info.annotation!r} passed as a plain type")
        types.append((name, info.annotation))
    return tuple(types)


def as_given(model: type[BaseModel], arguments: Mapping[str, object]) -> JSONObject | None:
    """``arguments`` as they are, when pydantic would return each unchanged (see the module
    docstring); ``None`` when pydantic has to decide."""
    types = exact_types(model)
    if types is None or len(arguments) != len(types):
        return None
    for name, kind in types:
        if type(arguments.get(name)) is not kind:
            return None
    # each value is a str, int, float or bool, checked above: JSON
    return cast("JSONObject", {name: arguments[name] for name, _ in types})
