"""Backends and tool sets from other packages, found through entry points (as llm's plugins are).

A distribution registers them in its ``pyproject.toml``:

    [project.entry-points."tao.models"]
    echo = "tao_echo:make_model"    # (rest: str, **options) -> tao Model; --model echo:REST

    [project.entry-points."tao.tools"]
    shout = "tao_echo:shout"        # a @tool, a list of them, or a callable returning them

Nothing here runs at ``import tao``: the entry points are read only when a model spec or a
tool-set name is not built in, and a plugin's module is imported only when it is named. A
plugin never takes a built-in's name, nor one that differs from it or another plugin's only
in case, spaces, ``-``, ``_`` or look-alike letters (``Iocal`` with a capital I for
``local``; names are compared as tool names are, :func:`name_keys`): it is refused with a
message naming it and its distribution. A plugin that fails to import is one line too, never
a traceback (:class:`tao.errors.PluginError`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tao.errors import PluginError
from tao.tools.base import name_keys, normal_name

if TYPE_CHECKING:
    from importlib.metadata import Distribution, EntryPoint

#: The entry-point group of model backends: a name -> ``(rest: str, **options) -> Model``.
MODELS = "tao.models"
#: The entry-point group of tool sets: a name -> a ``@tool``, a list, or a callable making them.
TOOLS = "tao.tools"
GROUPS = (MODELS, TOOLS)
#: What a plugin may be called: it must fit in ``--model NAME:REST`` and ``--tools A,B``.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: A section header of one of the groups in an ``entry_points.txt``.
_SECTION = re.compile(r"^\s*\[\s*tao\.(?:models|tools)\s*\]", re.MULTILINE)


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
    """Every plugin of ``group`` (both groups when ``None``), in a stable order.

    Each distribution's entry points are read on their own: one whose ``entry_points.txt``
    cannot be parsed (``importlib.metadata.entry_points()`` would raise for everyone) is
    left out here and named by :func:`unreadable`, so it never hides the others or breaks a
    built-in. A distribution found twice on ``sys.path`` counts once, the first, as Python
    imports it. Only distributions that declare a ``tao.*`` section are parsed beyond that
    file (reading every METADATA would cost a third of a second).
    """
    groups = GROUPS if group is None else (group,)
    found = [
        Plugin(
            name=point.name,
            group=point.group,
            value=point.value,
            distribution=distribution,
            version=version,
        )
        for distribution, version, points in _distributions()
        if not isinstance(points, Exception)
        for point in points
        if point.group in groups
    ]
    return sorted(found, key=lambda plugin: (plugin.group, normal_name(plugin.name)))


def unreadable() -> list[str]:
    """One line for each distribution declaring ``tao.*`` entry points that cannot be read."""
    return [
        f"the entry points of {distribution} {version} cannot be read: {_detail(points)}"
        for distribution, version, points in _distributions()
        if isinstance(points, Exception)
    ]


def _distributions() -> Iterator[tuple[str, str, list[EntryPoint] | Exception]]:
    """Each installed distribution declaring ``tao.*`` entry points, once: its name,
    version, and those entry points (or why they cannot be read)."""
    from importlib.metadata import distributions

    seen: set[str] = set()
    for dist in distributions():
        named = _declares_plugins(dist)
        if named is None:
            continue
        key = re.sub(r"[-_.]+", "-", named[0]).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            points: list[EntryPoint] | Exception = [
                point for point in dist.entry_points if point.group in GROUPS
            ]
        except Exception as error:  # a line without '=', a broken section: its author's bug
            points = error
        yield *named, points


def _declares_plugins(dist: Distribution) -> tuple[str, str] | None:
    """The distribution's name and version if its ``entry_points.txt`` has a ``tao.*``
    section, else ``None`` (as for metadata that cannot be read at all)."""
    try:
        if not _SECTION.search(dist.read_text("entry_points.txt") or ""):
            return None
        return str(dist.metadata["Name"] or "?"), str(dist.version or "?")
    except Exception:  # unreadable files: nothing of it can be named, so nothing is used
        return None


def refusal(plugin: Plugin, builtins: Iterable[str], others: Iterable[Plugin] = ()) -> str | None:
    """Why ``plugin`` may not be used, or ``None``: a bad name, a built-in's, a twin's."""
    if not _NAME.fullmatch(plugin.name):
        return (
            f"{plugin.label()} is refused: its name must be letters, digits, '.', '-' or '_', "
            "starting with a letter or digit"
        )
    keys = name_keys(plugin.name)
    taken = next((name for name in builtins if keys & name_keys(name)), None)
    if taken is not None:
        return (
            f"{plugin.label()} is refused: {taken!r} is built in, and a plugin cannot take its "
            "name or one that looks like it"
        )
    twin = next((o for o in others if o != plugin and keys & name_keys(o.name)), None)
    if twin is not None:
        return (
            f"{plugin.label()} is refused: {twin.label()} has a name that cannot be told apart "
            "(names are compared ignoring case, spaces, '-' and '_', and look-alike letters "
            "such as I, l and 1); uninstall one"
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
    """Import the object the plugin's entry point names; any failure is one :class:`PluginError`.

    A module that calls ``sys.exit()`` as it is imported is a failure like any other (it
    would otherwise end tao with the plugin's exit code); Ctrl-C still interrupts.
    """
    import importlib

    module, _, attribute = plugin.value.partition(":")
    try:
        found: object = importlib.import_module(module.strip())
        for part in attribute.strip().split(".") if attribute.strip() else ():
            found = getattr(found, part)
    except (Exception, SystemExit) as error:  # its author's bug: one line, no traceback
        raise failed(plugin, "failed to load", error) from None
    return found


def failed(plugin: Plugin, what: str, error: BaseException) -> PluginError:
    """``plugin 'x' (...) failed to load: ModuleNotFoundError: No module named 'y'``."""
    return PluginError(f"{plugin.label()} {what}: {_detail(error)}")


def _detail(error: BaseException) -> str:
    """``TypeName: the first line of its message``."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def unknown_note() -> str:
    """Said after an unknown name's list of valid ones: which plugins could not be read."""
    return "".join(f"; {line}" for line in unreadable())


def names(group: str, builtins: Iterable[str]) -> list[str]:
    """The usable plugin names of ``group`` (for the lists in unknown-name errors)."""
    plugins = installed(group)
    allowed = list(builtins)
    return [p.name for p in plugins if refusal(p, allowed, plugins) is None]
