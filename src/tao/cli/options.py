"""What several commands' options share: the words that list models and tool sets, and
``shown`` for an option whose default ``--help`` shows.

The run settings' options themselves are derived from RunConfig (:mod:`tao.cli.settings`).
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
#: Kept in step with tao.tools.registry.TOOL_SETS by a test; importing it would load pydantic.
TOOL_SET_NAMES = "calc, files, tests, wiki, write, human"


def shown(flag: str, kind: click.ParamType[object] | type, default: object, text: str) -> Decorator:
    """An option whose default ``--help`` shows."""
    return click.option(flag, type=kind, default=default, show_default=True, help=text)
