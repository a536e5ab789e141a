#!/usr/bin/env python3
"""Measure the shape of the tao source tree against the limits of issue 11.

Why: the redesign promised small units, one copy of each piece of logic, typed state and
layers that never climb back. Promises like these drift back one commit at a time, so this
script measures them on every run of ``scripts/test.sh`` and in CI, and fails the run when a
limit is crossed.

Usage: ``python scripts/shape.py [--root src/tao] [--json]``. Prints one row a check (the
measured value, the limit, PASS or FAIL, and where the worst case is), then the details of the
failing checks. Exit status: 0 when every check passes, 1 when one fails, 2 for bad usage
(a missing root, a file that does not parse).

Standard library only, so it runs before (or without) the project's own environment.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import keyword
import sys
import tokenize
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where the sources are when ``--root`` is not given: this checkout's ``src/tao``.
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "src" / "tao"

#: A run of this many same-shape code lines in two places is a duplicate.
WINDOW = 6
#: A window standing in more places than this is an idiom, not a copy (as ``duplicates`` does).
MOST_PLACES = 8
#: A window with fewer different line shapes than this is a list or a table, not logic.
MIN_SHAPES = 3
#: Packages (below the root) that must never import the CLI: the web page and the servers.
NO_CLI_PACKAGES = ("ui", "server", "serve")

#: Debt: this round's merges (issues 26, 29, 30) took the pairs from 5 to 14 and the longest
#: function to 80 lines (protocol/grammar.py react_grammar); the limits below hold the line
#: there, and issue 29's follow-up brings them back to 5 and 60. Agent.__init__ is back at 10
#: parameters: trust_project_policy became a run setting (a typed keyword).
MAX_DUPLICATE_PAIRS = 14
MAX_ANY = 60
MAX_DICT_STR_ANY = 10
MAX_TOP_LEVEL_MODULES = 12
MAX_PRIVATE_IMPORTS = 3
MAX_IMPORT_CHAIN = 9
MAX_FUNCTION_LINES = 80
MAX_AGENT_PARAMETERS = 10

#: Tokens that carry no code: they never make two lines alike or different.
_SILENT = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
)
#: Operator and bracket tokens: a line made of these alone (``)``, ``},``) never counts.
_PUNCTUATION = frozenset(tokenize.EXACT_TOKEN_TYPES)
# Python 3.12 splits f-strings into several tokens; 3.11 has one STRING token.
_FSTRING_START: int | None = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END: int | None = getattr(tokenize, "FSTRING_END", None)


class UsageError(Exception):
    """The call cannot be measured (no such root, a file that does not parse): exit 2."""


# -- the tree ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """One module of the measured tree, read and parsed once for every check."""

    module: str
    """Dotted name, the root folder being the top package: ``tao.store.sqlite``."""
    shown: str
    """Path relative to the root, as the report names it: ``store/sqlite.py``."""
    is_package: bool
    """An ``__init__.py``: relative imports resolve from the module itself."""
    text: str
    tree: ast.Module
    tokens: tuple[tokenize.TokenInfo, ...]


def load_tree(root: Path) -> list[Source]:
    """Every ``.py`` file below ``root`` (caches left out), sorted by path."""
    if not root.is_dir():
        raise UsageError(f"not a folder: {root}")
    sources = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if "__pycache__" in relative.parts:
            continue
        parts = [root.name, *relative.with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text, filename=str(path))
            tokens = tuple(tokenize.generate_tokens(io.StringIO(text).readline))
        except (SyntaxError, tokenize.TokenError) as error:
            raise UsageError(f"{path}: does not parse: {error}") from error
        sources.append(
            Source(
                module=".".join(parts),
                shown=relative.as_posix(),
                is_package=is_package,
                text=text,
                tree=tree,
                tokens=tokens,
            )
        )
    return sources


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One row of the report: a measured value against its limit."""

    name: str
    value: int
    limit: int
    where: str
    """The worst case (or the first offender), named so a reader can go and look."""
    details: tuple[str, ...] = ()
    """Every offender, printed below the table when the check fails."""
    found: bool = True
    """Whether there was anything to measure (a check of ``Agent`` with no ``Agent`` fails)."""

    @property
    def passed(self) -> bool:
        return self.found and self.value <= self.limit

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": self.value if self.found else None,
            "limit": self.limit,
            "passed": self.passed,
            "where": self.where,
            "details": list(self.details),
        }


# -- duplicated runs -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    """One code line: its number, its shape (names and values replaced) and its text."""

    number: int
    shape: tuple[str, ...]
    names: tuple[str, ...]
    """The names the line uses, in order: a window renames them consistently."""
    text: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """A stretch of same-shape lines that two places share."""

    first: str
    first_lines: tuple[int, int]
    second: str
    second_lines: tuple[int, int]
    length: int
    """How many code lines (blank, comment and trivial lines not counted) the run spans."""
    identical: bool
    """The same to the letter, not only the same shape."""

    def __str__(self) -> str:
        (a1, a2), (b1, b2) = self.first_lines, self.second_lines
        shape = "" if self.identical else " shape"
        return f"{self.first}:{a1}-{a2} ~ {self.second}:{b1}-{b2}{shape}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Pair:
    """Two files (or one file with itself) that share one run or more; the longest first."""

    runs: tuple[Run, ...]

    def __str__(self) -> str:
        more = len(self.runs) - 1
        suffix = f" (+{more} more run{'s' if more > 1 else ''})" if more else ""
        return f"{self.runs[0]}{suffix}"


def _skipped_lines(tree: ast.Module) -> set[int]:
    """Lines that never count as code: imports, string-only statements (docstrings), and
    field declarations in a class body (``name: type = default``): a run of small
    dataclasses declares data, it does not repeat logic."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for field in node.body:
                if isinstance(field, ast.AnnAssign):
                    skipped.update(range(field.lineno, (field.end_lineno or field.lineno) + 1))
        if not isinstance(node, ast.stmt):
            continue
        is_docstring = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        if isinstance(node, ast.Import | ast.ImportFrom) or is_docstring:
            skipped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return skipped


def _shape_of(token: tokenize.TokenInfo) -> str:
    """A token with its name or value replaced: ``x`` and ``y`` look alike, ``if`` does not."""
    if token.type == tokenize.NAME:
        return token.string if keyword.iskeyword(token.string) else "_"
    if token.type == tokenize.STRING:
        return '"s"'
    if token.type == tokenize.NUMBER:
        return "0"
    return token.string


def code_lines(source: Source) -> list[Line]:
    """The lines that can be copied: no blanks, comments, docstrings, imports, or lines of
    punctuation alone (``)``, ``],``)."""
    skipped = _skipped_lines(source.tree)
    shapes: dict[int, list[str]] = defaultdict(list)
    names: dict[int, list[str]] = defaultdict(list)
    texts: dict[int, list[str]] = defaultdict(list)
    fstring_depth = 0
    for token in source.tokens:
        row = token.start[0]
        if token.type in _SILENT or row in skipped:
            continue
        if token.type == _FSTRING_START:
            fstring_depth += 1
            if fstring_depth == 1:
                shapes[row].append('"s"')
        elif token.type == _FSTRING_END:
            fstring_depth -= 1
        elif fstring_depth == 0:
            shape = _shape_of(token)
            shapes[row].append(shape)
            if shape == "_":
                names[row].append(token.string)
        texts[row].append(token.string)
    return [
        Line(row, tuple(shapes[row]), tuple(names[row]), tuple(texts[row]))
        for row in sorted(shapes)
        if not all(part in _PUNCTUATION for part in shapes[row])
    ]


def _window_key(window: Sequence[Line]) -> tuple[object, ...] | None:
    """What two windows must share to be copies: the line shapes, and the same pattern of
    names (``a = f(a)`` matches ``b = g(b)``, not ``b = g(c)``). A window of fewer than
    ``MIN_SHAPES`` different line shapes is a list or a table (fields, keyword arguments,
    entries of a dict), not copied logic: it has no key."""
    shapes = tuple(line.shape for line in window)
    if len(set(shapes)) < MIN_SHAPES:
        return None
    numbers: dict[str, int] = {}
    renamed = tuple(
        numbers.setdefault(name, len(numbers)) for line in window for name in line.names
    )
    return (shapes, renamed)


def _runs(
    first: str,
    second: str,
    matches: Iterable[tuple[int, int]],
    lines: dict[str, list[Line]],
) -> list[Run]:
    """Merge matching windows that follow each other on one diagonal into runs."""
    runs = []
    ordered = sorted(matches, key=lambda match: (match[1] - match[0], match[0]))
    start = 0
    while start < len(ordered):
        end = start
        while (
            end + 1 < len(ordered)
            and ordered[end + 1][0] == ordered[end][0] + 1
            and ordered[end + 1][1] == ordered[end][1] + 1
        ):
            end += 1
        (a, b), length = ordered[start], end - start + WINDOW
        a_lines, b_lines = lines[first][a : a + length], lines[second][b : b + length]
        runs.append(
            Run(
                first=first,
                first_lines=(a_lines[0].number, a_lines[-1].number),
                second=second,
                second_lines=(b_lines[0].number, b_lines[-1].number),
                length=length,
                identical=all(x.text == y.text for x, y in zip(a_lines, b_lines, strict=True)),
            )
        )
        start = end + 1
    return sorted(runs, key=lambda run: -run.length)


def duplicate_pairs(sources: Sequence[Source]) -> tuple[list[Pair], int]:
    """Pairs of files sharing runs of ``WINDOW`` or more same-shape code lines.

    Returns the pairs, longest run first, and how many windows were left out because they
    stand in more than ``MOST_PLACES`` places (an idiom of the language, not a copy).
    """
    lines = {source.shown: code_lines(source) for source in sources}
    places: dict[tuple[object, ...], list[tuple[str, int]]] = defaultdict(list)
    for shown, file_lines in lines.items():
        for index in range(len(file_lines) - WINDOW + 1):
            key = _window_key(file_lines[index : index + WINDOW])
            if key is not None:
                places[key].append((shown, index))
    matches: dict[tuple[str, str], set[tuple[int, int]]] = defaultdict(set)
    too_common = 0
    for where in places.values():
        if len(where) > MOST_PLACES:
            too_common += 1
            continue
        for i, (file_a, index_a) in enumerate(where):
            for file_b, index_b in where[i + 1 :]:
                if file_a == file_b and abs(index_a - index_b) < WINDOW:
                    continue  # a window overlapping itself: a repeated line, not a copy
                matches[(file_a, file_b)].add((index_a, index_b))
    pairs = [
        Pair(runs=tuple(_runs(first, second, found, lines)))
        for (first, second), found in matches.items()
    ]
    pairs.sort(key=lambda pair: (-pair.runs[0].length, str(pair)))
    return pairs, too_common


def check_duplicates(sources: Sequence[Source]) -> Check:
    pairs, too_common = duplicate_pairs(sources)
    details = [str(pair) for pair in pairs]
    if too_common:
        details.append(f"left out: {too_common} windows standing in over {MOST_PLACES} places")
    return Check(
        name=f"duplicated runs of {WINDOW}+ lines (pairs)",
        value=len(pairs),
        limit=MAX_DUPLICATE_PAIRS,
        where=str(pairs[0]) if pairs else "-",
        details=tuple(details),
    )


# -- Any -----------------------------------------------------------------------------------


def _is_dict_str_any(tokens: Sequence[tokenize.TokenInfo], start: int) -> bool:
    """Whether ``dict[str, Any]`` (or ``Dict[...]``) begins at ``tokens[start]``."""
    wanted = (("dict", "Dict"), ("[",), ("str",), (",",), ("Any",), ("]",))
    code = [token for token in tokens[start : start + 12] if token.type not in _SILENT]
    return len(code) >= len(wanted) and all(
        token.string in options for token, options in zip(code, wanted, strict=False)
    )


def check_any(sources: Sequence[Source]) -> tuple[Check, Check]:
    """Uses of the name ``Any`` in code (comments and strings do not count)."""
    uses: Counter[str] = Counter()
    dict_uses: Counter[str] = Counter()
    for source in sources:
        for index, token in enumerate(source.tokens):
            if token.type != tokenize.NAME:
                continue
            if token.string == "Any":
                uses[source.shown] += 1
            elif token.string in ("dict", "Dict") and _is_dict_str_any(source.tokens, index):
                dict_uses[source.shown] += 1
    return _counted("uses of Any", MAX_ANY, uses), _counted(
        "uses of dict[str, Any]", MAX_DICT_STR_ANY, dict_uses
    )


def _counted(name: str, limit: int, counts: Counter[str]) -> Check:
    """A total over the files, the three with most named, every file in the details."""
    return Check(
        name=name,
        value=sum(counts.values()),
        limit=limit,
        where=_most(counts),
        details=tuple(f"{place}: {count}" for place, count in counts.most_common()),
    )


def _most(counts: Counter[str]) -> str:
    return ", ".join(f"{name} ({count})" for name, count in counts.most_common(3)) or "-"


# -- sizes ---------------------------------------------------------------------------------


def _largest(name: str, limit: int, sizes: Iterable[tuple[int, str]]) -> Check:
    """The largest of ``(size, where)``, and every one over the limit, largest first."""
    ordered = sorted(sizes, key=lambda size: (-size[0], size[1]))
    value, where = ordered[0] if ordered else (0, "-")
    over = tuple(f"{place}: {size}" for size, place in ordered if size > limit)
    return Check(name=name, value=value, limit=limit, where=where, details=over)


def _functions(
    body: Iterable[ast.stmt], prefix: str
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method, with its qualified name (``Class.method.inner``)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node.body, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, f"{prefix}{node.name}.")
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from _functions([child], prefix)


def check_function_size(sources: Sequence[Source]) -> Check:
    """The longest function, from its ``def`` line to its last line."""
    sizes = (
        ((node.end_lineno or node.lineno) - node.lineno + 1, f"{source.shown}:{node.lineno} {name}")
        for source in sources
        for name, node in _functions(source.tree.body, "")
    )
    return _largest("longest function (lines)", MAX_FUNCTION_LINES, sizes)


# -- imports -------------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(body: Iterable[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: not in functions, not for type checkers."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level_imports(node.body)
            yield from _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for handler in node.handlers:
                yield from _module_level_imports(handler.body)
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level_imports(block)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _module_level_imports(node.body)


def _targets(source: Source, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement reaches, relative imports made absolute."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = source.module.split(".")
        if not source.is_package:
            package.pop()
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _known(name: str, modules: set[str]) -> str | None:
    """The module of the tree that importing ``name`` runs: itself, or its nearest parent."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _every_import(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement: module level, type-only and inside functions alike."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def import_graph(sources: Sequence[Source], *, every: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports: at module level, or with ``every``
    any import at all (type-only and in-function ones too, which still tie two modules)."""
    modules = {source.module for source in sources}
    graph: dict[str, set[str]] = {source.module: set() for source in sources}
    for source in sources:
        nodes = _every_import(source.tree) if every else _module_level_imports(source.tree.body)
        for node in nodes:
            targets = _targets(source, node)
            if isinstance(node, ast.ImportFrom):
                # ``from a import b``: the module a.b when it is one, else the module a.
                names = [t for t in targets[1:] if t in modules] or targets[:1]
            else:
                names = targets
            for name in names:
                target = _known(name, modules)
                if target is not None and target != source.module:
                    graph[source.module].add(target)
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components; each one larger than a module is a cycle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [component for component in found if len(component) > 1]


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One shortest cycle through the first module of a component, for the report."""
    start = component[0]
    members = set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node] & members):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    return component  # unreachable for a real component


def check_import_cycles(sources: Sequence[Source]) -> Check:
    """No circle, not even through a type-only or in-function import (issue 29): a
    circle that only type checkers or one late call see still ties two rooms together."""
    graph = import_graph(sources, every=True)
    cycles = [" -> ".join(_cycle_in(c, graph)) for c in _strongly_connected(graph)]
    return _none_allowed("import cycles (every import)", cycles)


def _longest_from(node: str, graph: dict[str, set[str]], memo: dict[str, list[str]]) -> list[str]:
    """The longest chain of imports starting at ``node`` (the graph has no cycles)."""
    if node not in memo:
        memo[node] = [node]  # a cycle, if there were one, ends here instead of recursing
        below = (_longest_from(target, graph, memo) for target in sorted(graph[node]))
        best = max(below, key=len, default=[])
        memo[node] = [node, *best]
    return memo[node]


def check_import_chain(sources: Sequence[Source]) -> Check:
    """How many modules deep the longest chain of module-level imports goes.

    Each link is a module that cannot be read without the next; a deep chain is a hallway a
    newcomer walks for one step's data. Lazy in-function imports (a command loading its
    backend when it runs) are not links of that hallway, so they are not counted here."""
    graph = import_graph(sources)
    memo: dict[str, list[str]] = {}
    chains = [_longest_from(node, graph, memo) for node in sorted(graph)]
    longest = max(chains, key=len, default=[])
    return Check(
        name="longest import chain (modules)",
        value=len(longest),
        limit=MAX_IMPORT_CHAIN,
        where=" -> ".join(longest) if longest else "-",
        details=(" -> ".join(longest),) if longest else (),
    )


def check_top_level(sources: Sequence[Source]) -> Check:
    """Modules at the top of the package: only its public surface (issue 29)."""
    top = sorted(s.shown for s in sources if "/" not in s.shown and s.shown != "__init__.py")
    return Check(
        name="modules at the top level",
        value=len(top),
        limit=MAX_TOP_LEVEL_MODULES,
        where=", ".join(top) if top else "-",
        details=tuple(top),
    )


def check_private_imports(sources: Sequence[Source]) -> Check:
    """Private names (``_name``) imported from another module: a room reaching into another."""
    modules = {source.module for source in sources}
    found = []
    for source in sources:
        for node in _every_import(source.tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _targets(source, node)[0]
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{base}.{alias.name}" not in modules and _known(base, modules):
                    found.append(f"{source.shown}:{node.lineno} imports {alias.name} from {base}")
    return Check(
        name="private names imported across modules",
        value=len(found),
        limit=MAX_PRIVATE_IMPORTS,
        where=found[0] if found else "-",
        details=tuple(found),
    )


def _none_allowed(name: str, found: Sequence[str]) -> Check:
    """A check whose every finding is a failure; the first one named."""
    return Check(
        name=name,
        value=len(found),
        limit=0,
        where=found[0] if found else "-",
        details=tuple(found),
    )


def check_no_cli_imports(sources: Sequence[Source]) -> Check:
    """The web page and the servers never import the CLI, not even inside a function."""
    top = sources[0].module.split(".")[0] if sources else ""
    guarded = tuple(f"{top}.{name}" for name in NO_CLI_PACKAGES)
    cli = f"{top}.cli"
    found = []
    for source in sources:
        if not any(source.module == g or source.module.startswith(f"{g}.") for g in guarded):
            continue
        for node in ast.walk(source.tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if any(t == cli or t.startswith(f"{cli}.") for t in _targets(source, node)):
                found.append(f"{source.shown}:{node.lineno} imports {cli}")
    return _none_allowed("ui/server imports of the CLI", found)


# -- Agent ---------------------------------------------------------------------------------


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller can pass: ``self`` left out, ``*args`` and ``**kwargs`` one each."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args][1:]
    starred = [arguments.vararg, arguments.kwarg]
    return len(positional) + len(arguments.kwonlyargs) + sum(a is not None for a in starred)


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name | ast.Attribute) and ast.unparse(target).endswith(
            "dataclass"
        ):
            return True
    return False


def _init_parameters(cls: ast.ClassDef) -> tuple[int, int]:
    """The parameters of a class's ``__init__`` and its line; a ``@dataclass`` without one
    takes its annotated fields (``ClassVar`` left out)."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "__init__":
            return _parameters(node), node.lineno
    if not _is_dataclass(cls):
        return 0, cls.lineno
    fields = [
        node
        for node in cls.body
        if isinstance(node, ast.AnnAssign) and "ClassVar" not in ast.unparse(node.annotation)
    ]
    return len(fields), cls.lineno


def check_agent_init(sources: Sequence[Source]) -> Check:
    """``Agent.__init__`` takes at most ten parameters; settings belong in ``RunConfig``.

    The class is looked for in every module, ``agent.py`` first; none at all fails the check
    (a renamed class must not pass unmeasured)."""
    name = "Agent.__init__ parameters"
    for source in sorted(sources, key=lambda s: (not s.module.endswith(".agent"), s.shown)):
        for node in ast.walk(source.tree):
            if isinstance(node, ast.ClassDef) and node.name == "Agent":
                count, line = _init_parameters(node)
                return Check(
                    name=name,
                    value=count,
                    limit=MAX_AGENT_PARAMETERS,
                    where=f"{source.shown}:{line} Agent.__init__",
                )
    return Check(
        name=name, value=0, limit=MAX_AGENT_PARAMETERS, where="no class Agent", found=False
    )


def _untyped_kwargs(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``**kwargs`` that is not ``**kwargs: Unpack[SomeTypedDict]`` (PEP 692): one a type
    checker cannot check and that takes a misspelled name without a word."""
    kwarg = function.args.kwarg
    if kwarg is None:
        return False
    annotation = kwarg.annotation
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body  # a quoted annotation
    if not isinstance(annotation, ast.Subscript):
        return True
    return ast.unparse(annotation.value).rsplit(".", 1)[-1] != "Unpack"


def check_agent_settings(sources: Sequence[Source]) -> Check:
    """``Agent`` takes no untyped ``**settings`` (issue 29): its settings are keywords a type
    checker knows, ``**settings: Unpack[Settings]`` with a TypedDict or named parameters, so
    ``Agent(max_step=5)`` is an error before it runs. A missing ``Agent`` fails."""
    name = "untyped **kwargs of Agent.__init__"
    for source in sorted(sources, key=lambda s: (not s.module.endswith(".agent"), s.shown)):
        for node in ast.walk(source.tree):
            if isinstance(node, ast.ClassDef) and node.name == "Agent":
                inits = [n for n in node.body if isinstance(n, ast.FunctionDef)]
                init = next((n for n in inits if n.name == "__init__"), None)
                untyped = init is not None and _untyped_kwargs(init)
                line = (init or node).lineno
                where = f"{source.shown}:{line} Agent.__init__"
                return Check(name=name, value=int(untyped), limit=0, where=where)
    return Check(name=name, value=0, limit=0, where="no class Agent", found=False)


# -- report --------------------------------------------------------------------------------


def measure(root: Path) -> list[Check]:
    """Every check of the report, in the order it prints."""
    sources = load_tree(root)
    any_check, dict_check = check_any(sources)
    return [
        check_duplicates(sources),
        any_check,
        dict_check,
        check_function_size(sources),
        check_top_level(sources),
        check_import_cycles(sources),
        check_import_chain(sources),
        check_private_imports(sources),
        check_agent_init(sources),
        check_agent_settings(sources),
        check_no_cli_imports(sources),
    ]


def render(checks: Sequence[Check]) -> str:
    """The table, then what failed in detail."""
    name_width = max(len(check.name) for check in checks)
    rows = [f"{'check':<{name_width}}  {'value':>5}  {'limit':>5}  result  where"]
    for check in checks:
        result = "PASS" if check.passed else "FAIL"
        value = str(check.value) if check.found else "-"
        rows.append(
            f"{check.name:<{name_width}}  {value:>5}  {check.limit:>5}  {result:<6}  {check.where}"
        )
    for check in checks:
        if not check.passed and check.details:
            rows.append("")
            rows.append(f"{check.name}:")
            rows.extend(f"  {line}" for line in check.details)
    failed = sum(not check.passed for check in checks)
    rows.append("")
    rows.append(f"shape: {len(checks) - failed} passed, {failed} failed")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="shape.py", description="Measure the shape of the tao sources (issue 11)."
    )
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the package folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    arguments = parser.parse_args(argv)
    try:
        checks = measure(arguments.root)
    except UsageError as error:
        print(f"shape.py: {error}", file=sys.stderr)
        return 2
    if arguments.json:
        passed = all(check.passed for check in checks)
        report = {
            "root": str(arguments.root),
            "passed": passed,
            "checks": [check.to_json() for check in checks],
        }
        print(json.dumps(report, indent=2))
    else:
        print(render(checks))
    return 0 if all(check.passed for check in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
