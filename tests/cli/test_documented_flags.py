"""No documented flag that does not exist (issue 15): every ``--flag`` the README, docs/ and
the code's own docstrings and messages show for a ``tao`` command is an option of that
command, as click parses it.

What counts as documenting a flag:

- a ``tao SUBCOMMAND ... --flag`` command, in a code block, an inline code span or a
  line of source (``tao runs deny RUN --reason '…'``);
- an inline code span that is a bare flag (```--max-repeats N```): it must be an
  option of some ``tao`` command.

Other programs' flags (``mypy --strict``, ``pip install --no-deps``) are not checked;
the few written bare are listed in :data:`OTHER_PROGRAMS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click

from tao.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "src" / "tao").rglob("*.py")]
)

_FENCE = re.compile(r"^```.*?$(.*?)^```", re.DOTALL | re.MULTILINE)
_SPAN = re.compile(r"``(.+?)``|`([^`\n]+)`")
_TAO = re.compile(r"(?<![\w.-])tao\s+")
#: Bare flags the docs show that belong to another program, with the program.
OTHER_PROGRAMS = {
    "--junitxml": "pytest, which the tests tool runs",
    "--basetemp": "pytest, whose project options run_tests refuses",
    "--pdbcls": "pytest, whose project options run_tests refuses",
    "--pythonwarnings": "pytest, whose warning filters run_tests checks",
    "--log-file": "pytest, whose report paths run_tests judges",
    "--die-with-parent": "bubblewrap, which the sandbox runs",
    "--share-net": "bubblewrap, which the sandbox runs",
    "--disable-userns": "bubblewrap, which the sandbox runs",
    "--ro-bind-try": "bubblewrap, which the sandbox runs",
    "--seccomp": "bubblewrap, whose own filter option the sandbox does not use",
    "--require-hashes": "pip, which installs the embedded model's runtime",
    "--token": "any command line whose secrets redaction hides (``deploy --token X``)",
    "--password": "any command line whose secrets redaction hides (``mysql --password X``)",
}
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _pieces(text: str, markdown: bool) -> Iterator[tuple[str, bool]]:
    """Code a reader may type, and whether it is an inline span: lines of fenced blocks
    (of source, for a .py file) and inline code spans."""
    blocks = _FENCE.findall(text) if markdown else [text]
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            yield line, False
    for double, single in _SPAN.findall(text):
        yield double or single, True


def _commands(piece: str) -> Iterator[str]:
    """Each ``tao ...`` command in a piece of code (what follows ``tao`` up to the next
    ``tao``), comments and chained commands cut off."""
    for part in re.split(r";|&&|\|\|?|\s#\s", piece):
        yield from _TAO.split(part)[1:]


def _resolve(words: list[str]) -> click.Command | None:
    """The command ``words`` name (``runs approve``), or ``None`` when it is prose."""
    command: click.Command = main
    resolved = False
    for word in words:
        if not isinstance(command, click.Group) or word not in command.commands:
            break
        command, resolved = command.commands[word], True
    return command if resolved else None


def _options(command: click.Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(o for o in [*param.opts, *param.secondary_opts] if o.startswith("--"))
    return names


def _all_options(command: click.Command = main) -> set[str]:
    names = _options(command)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            names |= _all_options(sub)
    return names


def documented() -> Iterator[tuple[str, click.Command | None, str, str]]:
    """``(where, command, flag, line)`` for every flag shown as a tao flag; ``command`` is
    ``None`` for a bare flag (it must be some command's)."""
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(REPO))
        for piece, span in _pieces(text, markdown=path.suffix == ".md"):
            bare = _FLAG.match(piece.strip())
            if span and bare and bare.group(1) not in OTHER_PROGRAMS:
                yield where, None, bare.group(1), piece
                continue
            for rest in _commands(piece):
                command = _resolve(rest.split())
                if command is None:
                    continue
                for flag in _FLAG.findall(rest):
                    yield where, command, flag, piece


def test_the_scan_finds_the_flags_the_readme_shows() -> None:
    """The extraction itself works: it sees flags in README commands and spans."""
    found = {(command.name if command else "", flag) for _, command, flag, _ in documented()}
    assert ("run", "--tools") in found and ("run", "--json") in found
    assert ("deny", "--reason") in found
    assert len(found) > 30


def test_every_documented_flag_exists() -> None:
    everything = _all_options()
    missing = [
        f"{where}: {flag} (tao {command.name if command else '…'}) in: {line.strip()}"
        for where, command, flag, line in documented()
        if flag not in (_options(command) if command is not None else everything)
    ]
    assert not missing, "\n".join(missing)
