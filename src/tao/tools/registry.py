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
from pathlib import Path
from typing import Any, Protocol

from tao.errors import ToolDefinitionError, UnknownToolSetError
from tao.tools.base import Tool, make_tool

#: Tool names the loop owns; a user tool may not take them.
RESERVED_NAMES = frozenset({"finish"})


class ToolSetFactory(Protocol):
    """Builds one tool set from the run's configuration."""

    def __call__(
        self, *, project: Path, corpus: Path | None, ask: Callable[[str], str] | None
    ) -> list[Tool]: ...


def _calc(*, project: Path, corpus: Path | None, ask: Callable[[str], str] | None) -> list[Tool]:
    from tao.tools.calc import calculator_tool

    return [calculator_tool()]


def _files(*, project: Path, corpus: Path | None, ask: Callable[[str], str] | None) -> list[Tool]:
    from tao.tools.files import file_tools

    return file_tools(project)


def _tests(*, project: Path, corpus: Path | None, ask: Callable[[str], str] | None) -> list[Tool]:
    from tao.tools.tests import test_tools

    return test_tools(project)


def _wiki(*, project: Path, corpus: Path | None, ask: Callable[[str], str] | None) -> list[Tool]:
    from tao.tools.wiki import CorpusError, wiki_tools

    if corpus is None:
        raise CorpusError(
            "the wiki tool set needs a corpus: pass --corpus PATH "
            '(a JSONL file, one {"title", "text"} object per line)'
        )
    return wiki_tools(corpus)


def _write(*, project: Path, corpus: Path | None, ask: Callable[[str], str] | None) -> list[Tool]:
    from tao.tools.write import write_tools

    return write_tools(project)


def _human(*, project: Path, corpus: Path | None, ask: Callable[[str], str] | None) -> list[Tool]:
    from tao.tools.human import human_tools

    return human_tools(ask)


#: Built-in tool sets by name (SPEC T2); each factory imports its module only when used.
TOOL_SETS: Mapping[str, ToolSetFactory] = {
    "calc": _calc,
    "files": _files,
    "tests": _tests,
    "wiki": _wiki,
    "write": _write,
    "human": _human,
}
#: The tools each set provides, for help texts and prompts without building anything.
TOOL_SET_TOOLS: Mapping[str, tuple[str, ...]] = {
    "calc": ("calculator",),
    "files": ("read_file", "list_files"),
    "tests": ("run_tests",),
    "write": ("write_file", "delete_file"),
    "wiki": ("search", "lookup"),
    "human": ("ask_human",),
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
    specs: Sequence[str | Tool | Callable[..., Any]],
    *,
    project: Path | str | None = None,
    corpus: Path | str | None = None,
    ask: Callable[[str], str] | None = None,
) -> list[Tool]:
    """Turn set names, tools and typed functions into tools, in order, with unique names."""
    root = Path.cwd() if project is None else Path(project)
    corpus_path = None if corpus is None else Path(corpus)
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
                    tools.extend(TOOL_SETS[name](project=root, corpus=corpus_path, ask=ask))
        elif callable(spec):
            tools.append(make_tool(spec))
        else:
            raise ToolDefinitionError(
                f"cannot use {spec!r} as a tool: give a tool set name, a Tool or a typed function"
            )
    seen: set[str] = set()
    for item in tools:
        if item.name in RESERVED_NAMES:
            raise ToolDefinitionError(f"the tool name {item.name!r} is reserved; the loop adds it")
        if item.name in seen:
            raise ToolDefinitionError(
                f"two tools are named {item.name!r}; tool names must be unique"
            )
        seen.add(item.name)
    return tools
