"""Tool sets by name, and turning ``tools=[...]`` into a list of :class:`Tool` (SPEC T2).

``--tools files,tests`` and ``Agent(tools=[my_function, "calc"])`` both end up
in :func:`resolve_tools`: strings name built-in sets or plugins' (comma-separated allowed),
:class:`Tool` objects pass through, plain typed functions go through
:func:`make_tool`. ``finish`` is not added here; the loop always adds it.

    resolve_tools(["files,tests", "calc"], project=Path("."))
    # [read_file, list_files, run_tests, calculator]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tao.errors import PluginError, TaoError, ToolDefinitionError, UnknownToolSetError
from tao.lookalikes import name_problem
from tao.sandbox.settings import Sandbox
from tao.tools.base import Tool, ToolFunction, make_tool, name_keys

if TYPE_CHECKING:
    from tao.plugins import Plugin

#: Tool names the loop owns; a user tool may not take them.
RESERVED_NAMES = frozenset({"finish"})


@dataclass(frozen=True, slots=True)
class ToolSetContext:
    """What a tool set may be built from: the run's project folder, corpus, asker, and how
    the children it starts are sandboxed (SPEC S10)."""

    project: Path
    corpus: Path | None = None
    ask: Callable[[str], str] | None = None
    sandbox: Sandbox | None = None


#: Builds one tool set for a run; each imports its module only when used.
ToolSetFactory = Callable[[ToolSetContext], list[Tool]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSet:
    """One built-in tool set, as ``--tools NAME`` names it (SPEC T2)."""

    name: str
    factory: ToolSetFactory
    help: str
    """What the set gives the model, in a few words."""
    extra: str | None = None
    """The pip extra its tools need (``pip install 'tao[EXTRA]'``); ``None``: core."""


def _calc(context: ToolSetContext) -> list[Tool]:
    from tao.tools.calc import calculator_tool

    return [calculator_tool()]


def _files(context: ToolSetContext) -> list[Tool]:
    from tao.tools.files import file_tools

    return file_tools(context.project)


def _tests(context: ToolSetContext) -> list[Tool]:
    from tao.tools.tests import test_tools

    return test_tools(context.project, sandbox=context.sandbox)


def _wiki(context: ToolSetContext) -> list[Tool]:
    from tao.tools.wiki import default_corpus, wiki_tools

    return wiki_tools(context.corpus or default_corpus())


def _write(context: ToolSetContext) -> list[Tool]:
    from tao.tools.write import write_tools

    return write_tools(context.project)


def _human(context: ToolSetContext) -> list[Tool]:
    from tao.tools.human import human_tools

    return human_tools(context.ask)


#: Built-in tool sets by name, in the order the help lists them (SPEC T2). Adding one is
#: one record here; other packages add theirs as ``tao.tools`` plugins (:mod:`tao.plugins`).
TOOL_SETS: dict[str, ToolSet] = {
    s.name: s
    for s in (
        ToolSet(name="calc", factory=_calc, help="a calculator"),
        ToolSet(name="files", factory=_files, help="read and list the project's files"),
        ToolSet(name="tests", factory=_tests, help="run the project's tests (pytest)"),
        ToolSet(name="wiki", factory=_wiki, help="search a local Wikipedia", extra="wiki"),
        ToolSet(name="write", factory=_write, help="write and edit the project's files"),
        ToolSet(name="human", factory=_human, help="ask a person"),
    )
}


def set_names(spec: str) -> list[str]:
    """The set names in ``"files, Tests"``; a name no built-in has must be a plugin's."""
    names = [part.strip().lower() for part in spec.split(",") if part.strip()]
    unknown = [name for name in names if name not in TOOL_SETS]
    if unknown:
        from tao import plugins

        if plugins.find(plugins.TOOLS, unknown[0], TOOL_SETS) is None:
            valid = [*TOOL_SETS, *plugins.names(plugins.TOOLS, TOOL_SETS)]
            raise UnknownToolSetError(
                f"unknown tool set {unknown[0]!r}; valid sets: {', '.join(valid)}"
                f"{plugins.unknown_note()}"
            )
    return names


def _build(name: str, context: ToolSetContext) -> list[Tool]:
    """A built-in set's tools, or a plugin's."""
    if name in TOOL_SETS:
        return TOOL_SETS[name].factory(context)
    from tao import plugins

    plugin = plugins.find(plugins.TOOLS, name, TOOL_SETS)
    if plugin is None:  # checked by set_names; uninstalled since
        raise UnknownToolSetError(f"unknown tool set {name!r}")
    return plugin_tools(plugin, plugins.load(plugin), context)


def plugin_tools(plugin: Plugin, given: object, context: ToolSetContext) -> list[Tool]:
    """A ``tao.tools`` plugin's tools from what its entry point names: a :class:`Tool`, a
    list of them, or a callable returning either (given the context if it takes one)."""
    from tao import plugins

    if callable(given) and not isinstance(given, Tool):
        try:
            takes = len(inspect.signature(given).parameters) > 0
            given = given(context) if takes else given()
        except TaoError:
            raise
        except (Exception, SystemExit) as error:  # the plugin's bug: one line, no traceback
            raise plugins.failed(plugin, "failed to make its tools", error) from None
    tools = [given] if isinstance(given, Tool) else given
    if not isinstance(tools, list | tuple) or not all(isinstance(t, Tool) for t in tools):
        raise PluginError(
            f"{plugin.label()} gave {given!r}, not a tao Tool (@tool), a list of them, "
            "or a callable returning them"
        )
    try:
        check_names(tools)
    except ToolDefinitionError as error:  # e.g. a tool named 'finish', or two alike
        raise PluginError(f"{plugin.label()} gave tools that cannot be used: {error}") from None
    return list(tools)


def resolve_tools(
    specs: Sequence[str | Tool | ToolFunction],
    *,
    project: Path | str | None = None,
    corpus: Path | str | None = None,
    ask: Callable[[str], str] | None = None,
    sandbox: Sandbox | None = None,
) -> list[Tool]:
    """Turn set names, tools and typed functions into tools, in order, with unique names."""
    context = ToolSetContext(
        Path.cwd() if project is None else Path(project),
        None if corpus is None else Path(corpus),
        ask,
        sandbox,
    )
    if isinstance(specs, str):  # a bare "files,tests" is one spec, not a sequence of letters
        specs = [specs]
    tools: list[Tool] = []
    built_sets: set[str] = set()
    for spec in specs:
        if isinstance(spec, Tool):
            tools.append(spec)
        elif isinstance(spec, str):
            for name in set_names(spec):
                if name not in built_sets:  # "files,files" is one files set
                    built_sets.add(name)
                    tools.extend(_build(name, context))
        elif callable(spec):
            tools.append(make_tool(spec))
        else:
            raise ToolDefinitionError(
                f"cannot use {spec!r} as a tool: give a tool set name, a Tool or a typed function"
            )
    check_names(tools)
    return tools


def check_names(tools: Sequence[Tool]) -> None:
    """Refuse a reserved name, a name that is not ASCII, or two tools whose names differ
    only in spelling or look alike.

    Names are compared after :func:`normal_name` (case, whitespace, ``-``/``_``),
    the same form :func:`tao.run.act.find_tool` looks them up in: an MCP tool
    ``Read_File`` beside the built-in ``read_file`` would otherwise take the
    model's ``READ_FILE[...]`` calls (issue 12 item 9). They are also compared by
    their UTS #39 skeleton (:func:`name_keys`), so ``read_fiIe`` (capital I) or
    ``read_fi1e`` cannot pass for ``read_file`` in a prompt or an approval; and a
    name must be ASCII, so no other script can lend it look-alike letters (issue 26).
    """
    seen: dict[str, str] = {}
    reserved = {key for name in RESERVED_NAMES for key in name_keys(name)}
    for item in tools:
        problem = name_problem(item.name)
        if problem is not None:
            raise ToolDefinitionError(f"{problem}; give it an ASCII name (@tool(name=...))")
        keys = name_keys(item.name)
        if keys & reserved:
            raise ToolDefinitionError(f"the tool name {item.name!r} is reserved; the loop adds it")
        first = next((seen[key] for key in keys if key in seen), None)
        if first is not None:
            same = "two tools are named" if first == item.name else "the tool names"
            shown = repr(first) if first == item.name else f"{first!r} and {item.name!r}"
            raise ToolDefinitionError(
                f"{same} {shown}, which the model cannot tell apart (names are compared "
                "ignoring case, spaces, '-' and '_', and look-alike letters such as I, l "
                "and 1 or rn and m, Unicode UTS #39); rename one"
            )
        seen.update(dict.fromkeys(keys, item.name))
