"""Tool sets by name, and turning ``tools=[...]`` into a list of :class:`Tool` (SPEC T2).

``--tools files,tests`` and ``Agent(tools=[my_function, "calc"])`` both end up
in :func:`resolve_tools`: strings name built-in sets (comma-separated allowed),
:class:`Tool` objects pass through, plain typed functions go through
:func:`make_tool`. ``finish`` is not added here; the loop always adds it.

    resolve_tools(["files,tests", "calc"], project=Path("."))
    # [read_file, list_files, run_tests, calculator]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tao.errors import ToolDefinitionError, UnknownToolSetError
from tao.lookalikes import name_problem, skeleton
from tao.sandbox.settings import Sandbox
from tao.tools.base import Tool, ToolFunction, make_tool, normal_name

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


#: Built-in tool sets by name (SPEC T2).
TOOL_SETS: Mapping[str, ToolSetFactory] = {
    "calc": _calc,
    "files": _files,
    "tests": _tests,
    "wiki": _wiki,
    "write": _write,
    "human": _human,
}


def _set_names(spec: str) -> list[str]:
    names = [part.strip().lower() for part in spec.split(",") if part.strip()]
    unknown = [name for name in names if name not in TOOL_SETS]
    if unknown:
        raise UnknownToolSetError(
            f"unknown tool set {unknown[0]!r}; valid sets: {', '.join(TOOL_SETS)}"
        )
    return names


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
            for name in _set_names(spec):
                if name not in built_sets:  # "files,files" is one files set
                    built_sets.add(name)
                    tools.extend(TOOL_SETS[name](context))
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


def name_keys(name: str) -> set[str]:
    """The forms two names are compared in: the normal name, and the UTS #39 skeleton
    taken before and after it (a skeleton keeps case: ``I`` looks like ``l``, ``i`` not)."""
    normal = normal_name(name)
    return {normal, normal_name(skeleton(name)), normal_name(skeleton(normal))}
