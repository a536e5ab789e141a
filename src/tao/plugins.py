"""Backends and tool sets from other packages, found through entry points (as llm's plugins are).

A distribution registers them in its ``pyproject.toml``:

    [project.entry-points."tao.models"]
    echo = "tao_echo:make_model"    # (rest: str, **options) -> tao Model; --model echo:REST

    [project.entry-points."tao.tools"]
    shout = "tao_echo:shout"        # a @tool, a list of them, or a callable returning them

Nothing here runs at ``import tao``: the entry points are read only when a model spec or a
tool-set name is not built in, and a plugin's module is imported only when it is named. A
plugin never takes a built-in's name, nor one that differs from another plugin's only in
case, spaces, ``-`` or ``_`` (names are compared as tool names are, :func:`normal_name`):
it is refused with a message naming it and its distribution. A plugin that fails to
import is one line too, never a traceback (:class:`tao.errors.PluginError`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tao.errors import PluginError
from tao.tools.base import normal_name

#: The entry-point group of model backends: a name -> ``(rest: str, **options) -> Model``.
MODELS = "tao.models"
#: The entry-point group of tool sets: a name -> a ``@tool``, a list, or a callable making them.
TOOLS = "tao.tools"
GROUPS = (MODELS, TOOLS)
#: What a plugin may be called: it must fit in ``--model NAME:REST`` and ``--tools A,B``.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True, kw_only=True, slots=True)
class Plugin:
    """One entry point of a ``tao.*`` group, as its distribution declares it."""

    name: str
    group: str
    value: str
    """Where it lives: ``"module:attribute"``."""
    distribution: str
    version: str

    def label(self) -> str:
        """How errors name it: ``plugin 'shout' (tao.tools, from tao-shout 0.1)``."""
        return f"plugin {self.name!r} ({self.group}, from {self.distribution} {self.version})"


def installed(group: str | None = None) -> list[Plugin]:
    """Every plugin of ``group`` (both groups when ``None``), in a stable order."""
    from importlib.metadata import entry_points

    found = []
    for name in GROUPS if group is None else (group,):
        for point in entry_points(group=name):
            dist = point.dist
            found.append(
                Plugin(
                    name=point.name,
                    group=name,
                    value=point.value,
                    distribution=dist.name if dist is not None else "?",
                    version=dist.version if dist is not None else "?",
                )
            )
    return sorted(found, key=lambda plugin: (plugin.group, normal_name(plugin.name)))


def refusal(plugin: Plugin, builtins: Iterable[str], others: Iterable[Plugin] = ()) -> str | None:
    """Why ``plugin`` may not be used, or ``None``: a bad name, a built-in's, a twin's."""
    if not _NAME.fullmatch(plugin.name):
        return (
            f"{plugin.label()} is refused: its name must be letters, digits, '.', '-' or '_', "
            "starting with a letter or digit"
        )
    normal = normal_name(plugin.name)
    taken = next((name for name in builtins if normal_name(name) == normal), None)
    if taken is not None:
        return (
            f"{plugin.label()} is refused: {taken!r} is built in, and a plugin cannot take its name"
        )
    twin = next((o for o in others if o != plugin and normal_name(o.name) == normal), None)
    if twin is not None:
        return (
            f"{plugin.label()} is refused: {twin.label()} has a name that cannot be told apart "
            "(names are compared ignoring case, spaces, '-' and '_'); uninstall one"
        )
    return None


def find(group: str, name: str, builtins: Iterable[str]) -> Plugin | None:
    """The plugin ``name`` names in ``group``, or ``None``; a refused one raises its reason."""
    plugins = installed(group)
    wanted = normal_name(name)
    plugin = next((p for p in plugins if normal_name(p.name) == wanted), None)
    if plugin is None:
        return None
    reason = refusal(plugin, builtins, plugins)
    if reason is not None:
        raise PluginError(reason)
    return plugin


def load(plugin: Plugin) -> object:
    """Import the object the plugin's entry point names; any failure is one :class:`PluginError`."""
    import importlib

    module, _, attribute = plugin.value.partition(":")
    try:
        found: object = importlib.import_module(module.strip())
        for part in attribute.strip().split(".") if attribute.strip() else ():
            found = getattr(found, part)
    except Exception as error:  # its author's bug: one line, no traceback
        raise failed(plugin, "failed to load", error) from None
    return found


def failed(plugin: Plugin, what: str, error: BaseException) -> PluginError:
    """``plugin 'x' (...) failed to load: ModuleNotFoundError: No module named 'y'``."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return PluginError(f"{plugin.label()} {what}: {detail}")


def names(group: str, builtins: Iterable[str]) -> list[str]:
    """The usable plugin names of ``group`` (for the lists in unknown-name errors)."""
    plugins = installed(group)
    allowed = list(builtins)
    return [p.name for p in plugins if refusal(p, allowed, plugins) is None]
