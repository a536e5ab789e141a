"""The click options of the run settings, derived from RunConfig's fields (one declaration each).

Each RunConfig field made with :func:`tao.state.setting.setting` and given a ``flag`` is
one option of ``tao run``, and of ``tao eval`` when its spec has an ``eval`` variant:
the flag names, the type (a range, choices, a path), the default, the help and an
environment variable all come from the field. What click parsed becomes the field's
value through the setting's kind (:func:`config_values`). So a new setting is one
edit, the field; this module needs none.

    @click.command()
    @setting_options("run")
    def run(**options: object) -> None:
        settings, rest = split_options(options, "run")
        config = RunConfig(**config_values(settings))
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, get_args, get_origin

import click

from tao.cli.options import MODEL_FORMS, TOOL_SET_NAMES, Decorator
from tao.state.config import RunConfig
from tao.state.jsontypes import JSONObject
from tao.state.setting import Command, Setting, settings_of

if TYPE_CHECKING:
    from _typeshed import DataclassInstance as Declared  # a class of fields made with setting()
else:
    Declared = object

F = TypeVar("F", bound=Callable[..., object])

#: What a help text's ``{name}`` stands for: lists that other modules own.
HELP_VALUES = {"model_forms": MODEL_FORMS, "tool_sets": TOOL_SET_NAMES}


def shown_settings(command: Command, of: type[Declared] = RunConfig) -> dict[str, Setting]:
    """The settings ``command`` has options for, by field name, in declaration order."""
    return {f.name: spec for f, spec in settings_of(of) if command in spec.commands()}


def setting_options(command: Command, defaults: Declared | None = None) -> Callable[[F], F]:
    """Decorate a click command with an option per setting it shows; ``defaults`` are the
    command's (``tao eval`` starts from :data:`tao.eval.config.EVAL_RUN`), and their class
    declares the settings (RunConfig, a subclass that adds some, or another class of
    settings made the same way, such as the process's :class:`ProcessSettings`)."""
    base: Declared = defaults if defaults is not None else RunConfig()
    shown = shown_settings(command, type(base))
    hints = typing.get_type_hints(type(base))
    options = [_option(name, spec, command, base, hints[name]) for name, spec in shown.items()]

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def split_options(
    options: Mapping[str, object], command: Command, of: type[Declared] = RunConfig
) -> tuple[dict[str, object], dict[str, object]]:
    """What click parsed, as the settings' raw values and the command's other options."""
    names = shown_settings(command, of)
    settings = {key: value for key, value in options.items() if key in names}
    return settings, {key: value for key, value in options.items() if key not in names}


def config_values(raw: Mapping[str, object], of: type[Declared] = RunConfig) -> dict[str, object]:
    """The RunConfig values of settings as click parsed them: names split at commas, paths
    absolute, a schema file read (a bad one is a usage error, exit 2)."""
    specs = {f.name: spec for f, spec in settings_of(of)}
    return {name: _value(specs[name], value) for name, value in raw.items()}


def _value(spec: Setting, value: object) -> object:
    if spec.kind == "list":
        chunks = typing.cast(tuple[str, ...], value)
        return tuple(name for chunk in chunks for name in chunk.split(",") if name.strip())
    if value is None:
        return None
    if spec.kind in ("folder", "file"):
        return str(Path(str(value)).resolve())
    if spec.kind == "schema":
        from tao.run.output import schema_of

        return schema_of(_read_schema(Path(str(value)), _label(spec)))
    return tuple(typing.cast(tuple[object, ...], value)) if spec.repeatable else value


def _option(
    name: str, spec: Setting, command: Command, defaults: Declared, hint: object
) -> Decorator:
    variant = spec.eval if command == "eval" else None
    names = [n for n in (spec.short, spec.flag) if n is not None]
    text = (variant.help if variant is not None and variant.help else spec.help).format_map(
        HELP_VALUES
    )
    declared = next(f.default for f in dataclasses.fields(defaults) if f.name == name)
    if isinstance(declared, bool):  # a flag that turns the setting away from its default
        default_flag = getattr(defaults, name)
        return click.option(
            *names, name, is_flag=True, flag_value=not declared, default=default_flag, help=text
        )
    if declared is None and _scalar(hint) is bool:  # a yes a person gives; absent: not said
        return click.option(
            *names,
            name,
            is_flag=True,
            flag_value=True,
            default=None,
            envvar=spec.envvar,
            help=text,
        )
    default: object = getattr(defaults, name)
    if spec.repeatable or (variant is not None and variant.no_default):
        default = None
    elif spec.command_default is not None:
        default = spec.command_default
    minimum = variant.minimum if variant is not None and variant.minimum is not None else None
    return click.option(
        *names,
        name,
        type=_type(hint, spec, minimum),
        default=default,
        show_default=True,
        multiple=spec.repeatable,
        metavar=spec.metavar,
        envvar=spec.envvar,
        callback=_pattern_check(spec) if spec.pattern is not None else None,
        help=text,
    )


def _type(hint: object, spec: Setting, minimum: int | None) -> click.ParamType[object]:
    """The click type of a setting: its path kind, its choices, or its number range."""
    if spec.kind == "folder":
        return click.Path(exists=True, file_okay=False, path_type=Path)
    if spec.kind in ("file", "schema"):
        return click.Path(dir_okay=False, path_type=Path)
    if spec.choices:
        return click.Choice(spec.choices, case_sensitive=not spec.any_case)
    scalar = _scalar(hint)
    low, open_low = (minimum, False) if minimum is not None else (spec.minimum, False)
    if low is None and spec.above is not None:
        low, open_low = spec.above, True
    if scalar is int:
        return click.IntRange(min=low, min_open=open_low) if low is not None else click.INT
    if scalar is float:
        return click.FloatRange(min=low, min_open=open_low) if low is not None else click.FLOAT
    return click.STRING


def _scalar(hint: object) -> object:
    """``int`` of ``int``, ``float`` of ``float | None``, ``str`` of ``tuple[str, ...]``."""
    args = [a for a in get_args(hint) if a is not type(None) and a is not Ellipsis]
    if get_origin(hint) in (tuple, types.UnionType, typing.Union) and len(args) == 1:
        return _scalar(args[0])
    return hint


def _pattern_check(spec: Setting) -> Callable[[click.Context, click.Parameter, object], object]:
    """Refuse an item the setting's pattern does not match, in the words RunConfig uses."""

    def check(context: click.Context, param: click.Parameter, value: object) -> object:
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if (mismatch := spec.mismatch(item)) is not None:
                raise click.BadParameter(mismatch)
        return value

    return check


def _label(spec: Setting) -> str:
    """``output schema`` for ``--output-schema``: how an error names the file."""
    return (spec.flag or "").lstrip("-").replace("-", " ")


def _read_schema(path: Path, label: str) -> JSONObject:
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise click.UsageError(f"cannot read the {label} {path}: {error}") from None
    if not isinstance(schema, dict):
        raise click.UsageError(f"the {label} {path} must be a JSON object")
    return schema
