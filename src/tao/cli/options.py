"""What several commands' options share: the words that list models and tool sets, and
``shown`` for an option whose default ``--help`` shows.

The run settings' options themselves are derived from RunConfig (:mod:`tao.cli.settings`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import click

from tao.models.backends import MODEL_FORMS as BACKEND_FORMS
from tao.tools.registry import TOOL_SETS

F = TypeVar("F", bound=Callable[..., object])


class Decorator(Protocol):
    """What ``click.option(...)`` returns: it gives back the command it decorates."""

    def __call__(self, command: F, /) -> F: ...


#: ``--model``'s help: every built-in backend's spec form, and the plugins' (tao plugins).
MODEL_FORMS = f"{BACKEND_FORMS}, or NAME:SPEC of a plugin (tao plugins)"
#: The built-in tool sets, as ``--tools``'s help lists them (then: or a plugin's).
TOOL_SET_NAMES = ", ".join(TOOL_SETS)


def shown(flag: str, kind: click.ParamType[object] | type, default: object, text: str) -> Decorator:
    """An option whose default ``--help`` shows."""
    return click.option(flag, type=kind, default=default, show_default=True, help=text)
