"""Options several commands share, written once: the model spec, the server URL, ``--json``.

@click.command()
@model_option("Which model answers.")
@base_url_option
def command(model_spec: str, base_url: str | None) -> None: ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])


class Decorator(Protocol):
    """What ``click.option(...)`` returns: it gives back the command it decorates."""

    def __call__(self, command: F, /) -> F: ...


MODEL_FORMS = "local, local:PATH.gguf, openai:MODEL, anthropic:MODEL, gemini:MODEL, replay:PATH"


def shown(flag: str, kind: click.ParamType[object] | type, default: object, text: str) -> Decorator:
    """An option whose default ``--help`` shows."""
    return click.option(flag, type=kind, default=default, show_default=True, help=text)


def model_option(text: str = MODEL_FORMS) -> Decorator:
    """``-m/--model SPEC``, from ``$TAO_MODEL`` when not given, else the embedded model."""
    return click.option(
        "-m", "--model", "model_spec", envvar="TAO_MODEL", default="local", show_default=True,
        help=text,
    )  # fmt: skip


base_url_option = click.option(
    "--base-url", envvar="OPENAI_BASE_URL", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1"
)  # fmt: skip


def compaction_policy(context: click.Context, param: click.Parameter, value: str) -> str:
    """``--compaction``: a built-in policy's name, or ``module:attribute`` naming your own."""
    from tao.state.config import COMPACTIONS

    if value in COMPACTIONS or (":" in value and all(value.partition(":")[::2])):
        return value
    raise click.BadParameter(
        f"{value!r} is not a policy: give {', '.join(COMPACTIONS)}, or module:attribute"
    )
