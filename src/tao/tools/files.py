"""The ``files`` tool set: ``read_file`` and ``list_files`` inside one project (SPEC S1, S2).

Both tools declare ``path`` a project path: validation resolves it once
(:func:`tao.tools.paths.resolve_path`), so ``../``, absolute paths and symlinks
pointing out are refused, and the tool opens exactly the checked path with
``O_NOFOLLOW`` on every component. ``read_file`` opens only an allow-list of
text types and never a secret-bearing file, judged on the resolved target (a
``notes.txt`` that links to ``.env`` is refused). The loop cuts its output to the first 20,000
characters (SPEC L6).

    read_file, list_files = file_tools(Path("."))
    read_file.invoke({"path": "README.md"})
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePath

from tao.errors import ToolError
from tao.tools.base import Tool, make_tool
from tao.tools.nearby import nearby
from tao.tools.paths import (
    SECRET_DIRS,
    MissingPathError,
    act_path,
    is_secret_name,
    is_secret_path,
    open_folder,
    open_in_project,
    project_root,
    relative,
)

#: File types ``read_file`` opens: source code, docs and configuration, all plain text.
READABLE_SUFFIXES: frozenset[str] = frozenset(
    {
        ".py", ".pyi", ".md", ".txt", ".toml", ".cfg", ".ini", ".rst", ".json", ".yaml",
        ".yml", ".csv", ".tsv", ".js", ".mjs", ".ts", ".jsx", ".tsx", ".html", ".css",
        ".sql", ".sh", ".c", ".h", ".cpp", ".hpp", ".rs", ".go", ".java", ".rb", ".xml",
    }
)  # fmt: skip
#: Well-known text files without a suffix (compared lower-cased).
READABLE_NAMES: frozenset[str] = frozenset(
    {"readme", "license", "licence", "changelog", "makefile", "dockerfile", ".gitignore"}
)
#: Folders ``list_files`` does not show: tooling noise, never the project's own content.
SKIPPED_DIRS: frozenset[str] = frozenset(
    {"__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".hypothesis"} | SECRET_DIRS
)  # fmt: skip

READ_MAX_CHARS = 20_000
#: Bytes read from one file; far above what the model sees, it only bounds memory.
READ_MAX_BYTES = 2_000_000
LIST_MAX_ENTRIES = 500

_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")


def _readable_type(name: str) -> bool:
    path = PurePath(name.lower())
    return path.suffix in READABLE_SUFFIXES or path.name in READABLE_NAMES


def _read_text(root: Path, raw: str) -> str:
    path = act_path(root, raw)
    shown = path.relative
    if is_secret_path(PurePath(shown)):
        raise ToolError(f"{shown!r} holds secrets (keys, passwords, .env); it is never read")
    # Opened by walking the checked path with O_NOFOLLOW: the file read is the file checked.
    # O_NONBLOCK: a FIFO planted under a readable name must not hang the run.
    fd = open_in_project(path, os.O_RDONLY | os.O_NONBLOCK)
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ToolError(f"{shown!r} is a folder; use list_files to see what is in it")
    with os.fdopen(fd, "rb") as handle:
        if not _readable_type(path.absolute.name):
            kinds = " ".join(sorted(READABLE_SUFFIXES))
            raise ToolError(f"{shown!r} is not a text type this agent may read ({kinds})")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{shown!r} is not a regular file")
        data = handle.read(READ_MAX_BYTES)
    if b"\x00" in data:
        raise ToolError(f"{shown!r} is binary, not text")
    if _PRIVATE_KEY.search(data):
        raise ToolError(f"{shown!r} contains a private key; it is never read")
    text = data.decode("utf-8", errors="replace")
    if info.st_size > len(data):
        text += f"\n[file is {info.st_size:,} bytes; only the first {len(data):,} were read]"
    return text


def _entry_line(root: Path, entry: Path) -> str | None:
    """One listing line for ``entry``, or ``None`` for what is hidden."""
    shown = relative(root, entry)
    try:
        target = entry.resolve()
    except (OSError, RuntimeError):
        return f"{shown} (broken link)"
    if not target.is_relative_to(root):
        return f"{shown} (link to outside the project, not accessible)"
    if target.is_dir():
        return f"{shown}/"
    if entry.is_symlink() and is_secret_name(target.name):
        return None
    return shown


def _entry_lines(root: Path, entries: list[Path]) -> tuple[list[str], int, int]:
    """The lines a listing shows, and how many entries were hidden (secret) and skipped (noise)."""
    lines: list[str] = []
    hidden = skipped = 0
    for entry in entries:
        if entry.name.casefold() in SKIPPED_DIRS and entry.is_dir():
            skipped += 1
            continue
        line = None if is_secret_name(entry.name) else _entry_line(root, entry)
        if line is None:
            hidden += 1
            continue
        lines.append(line)
    return lines, hidden, skipped


def _list(root: Path, raw: str) -> str:
    path = act_path(root, raw or ".")
    shown = path.relative
    if shown != "." and is_secret_path(PurePath(shown, "x")):
        raise ToolError(f"{shown!r} holds secrets; it is never listed")
    try:  # walked with O_NOFOLLOW: the folder listed is the folder checked
        fd = open_folder(root, path.parts)
    except ToolError:
        if path.absolute.is_file():
            raise ToolError(
                f"{shown!r} is a file, not a folder; use read_file to read it"
            ) from None
        raise
    try:
        names = sorted(os.listdir(fd), key=lambda name: (name.casefold(), name))
    except OSError as error:
        raise ToolError(f"{shown!r} cannot be listed: {error.strerror}") from None
    finally:
        os.close(fd)
    entries = [path.absolute / name for name in names]
    lines, hidden, skipped = _entry_lines(root, entries)
    total = len(lines)
    lines = lines[:LIST_MAX_ENTRIES]
    header = f"{shown}/ ({total} entries)"
    notes = []
    if total > LIST_MAX_ENTRIES:
        notes.append(f"[listing cut: showing the first {LIST_MAX_ENTRIES} of {total} entries]")
    if hidden:
        notes.append(f"[{hidden} secret-bearing file(s) not shown]")
    if skipped:
        notes.append(f"[{skipped} folder(s) not shown: .git, caches, virtualenvs, key stores]")
    if not lines:
        lines = ["(empty)"]
    return "\n".join([header, *lines, *notes])


def _read_missing(root: Path, raw: str, error: ToolError) -> ToolError:
    """``error`` again, or, when ``raw`` names nothing, the paths it probably meant
    (:mod:`tao.tools.nearby`) and the call that reads the first."""
    guesses = nearby(root, raw, SKIPPED_DIRS) if isinstance(error, MissingPathError) else []
    if not guesses:
        return error
    text, first = raw.strip(), guesses[0]
    call = f"list_files[{first.rstrip('/')}]" if first.endswith("/") else f"read_file[{first}]"
    # The found path comes first: a small model that reads "X does not exist" first takes
    # the file it meant for missing, and creates it afresh (seen: an empty poem.txt).
    if text.startswith(first.rstrip("/")):
        return ToolError(f"{first} is there; read_file takes the path alone, not {text!r}: {call}")
    shown = ", ".join(guesses)
    verb = "is" if len(guesses) == 1 else "are"
    return ToolError(f"{shown} {verb} what {text!r} matches (no file is named {text!r}): {call}")


def _list_matches(root: Path, raw: str, error: ToolError) -> str:
    """For a ``raw`` that names nothing, a listing of the paths it matches (``*.csv``,
    ``.csv``, ``sales``, a near spelling): a small model asks ``list_files`` to find
    files, and this answers that question instead of only refusing it."""
    missing = isinstance(error, MissingPathError)
    guesses = nearby(root, raw, SKIPPED_DIRS, limit=LIST_MATCHES) if missing else []
    if not guesses:
        raise error
    return "\n".join([f"Paths that match {raw.strip()!r}:", *guesses])


#: Paths a ``list_files`` of a pattern or fragment shows, at most.
LIST_MATCHES = 20


def file_tools(project: Path | str) -> list[Tool]:
    """Build ``read_file`` and ``list_files`` confined to ``project`` (resolved once, now)."""
    root = project_root(project)

    def read_file(path: str) -> str:
        """Read a text file of the project (code, docs, config); long files show their head.

        Args:
            path: File path relative to the project folder, e.g. "src/app.py".
        """
        try:
            return _read_text(root, path)
        except ToolError as error:
            raise _read_missing(root, path, error) from None

    def list_files(path: str = ".") -> str:
        """List the files and folders in one folder of the project; folders end with "/".

        Args:
            path: Folder path relative to the project folder; "." is the project itself.
        """
        try:
            return _list(root, path)
        except ToolError as error:
            return _list_matches(root, path, error)

    return [
        make_tool(
            read_file, max_chars=READ_MAX_CHARS, keep="head", path_params=("path",), project=root
        ),
        make_tool(
            list_files, max_chars=READ_MAX_CHARS, keep="head", path_params=("path",), project=root
        ),
    ]
