"""The ``write`` tool set: change files inside the project, only with a person's yes (SPEC S3).

``write_file`` and ``delete_file`` declare their effects, so every call waits
for approval (or a policy rule); the approval shows a unified diff of exactly
what would change. Paths go through the same guard as ``read_file``: resolved,
inside the project, never a secret-bearing file.

    tao run "fix the typo in README.md" -t files,write --project .
"""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path, PurePath

from tao.errors import ToolError
from tao.jsontypes import JSONObject
from tao.tools.base import Tool, make_tool
from tao.tools.paths import inside_project, is_secret_path, project_root, relative

#: Largest content write_file accepts, so one call cannot fill the disk.
WRITE_MAX_CHARS = 1_000_000
_DIFF_MAX_LINES = 400


def _target(root: Path, raw: str) -> tuple[Path, str]:
    target = inside_project(root, raw)
    shown = relative(root, target)
    if shown == ".":
        raise ToolError("give a file path, not the project folder")
    if is_secret_path(PurePath(raw.strip())) or is_secret_path(PurePath(shown)):
        raise ToolError(f"{raw.strip()!r} is a secret-bearing file; it is never written or deleted")
    return target, shown


def _current(target: Path) -> str:
    if not target.exists():
        return ""
    if not target.is_file():
        raise ToolError(f"{target.name!r} is not a regular file")
    return target.read_text(encoding="utf-8", errors="replace")


def diff(root: Path, path: str, content: str) -> str:
    """The unified diff write_file would apply; what the person approving reads."""
    target, shown = _target(root, path)
    before = _current(target)
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            content.splitlines(keepends=True),
            fromfile=f"a/{shown}" if target.exists() else "/dev/null",
            tofile=f"b/{shown}",
        )
    )
    if not lines:
        return f"{shown}: no change"
    if len(lines) > _DIFF_MAX_LINES:
        lines = [*lines[:_DIFF_MAX_LINES], f"... ({len(lines) - _DIFF_MAX_LINES} more lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines).rstrip("\n")


def write_tools(project: Path | str) -> list[Tool]:
    """Build ``write_file`` and ``delete_file`` confined to ``project``."""
    root = project_root(project)

    def write_file(path: str, content: str) -> str:
        """Create or replace a text file inside the project with the given content.

        Args:
            path: File path relative to the project, e.g. "src/app.py".
            content: The whole new content of the file.
        """
        if len(content) > WRITE_MAX_CHARS:
            raise ToolError(
                f"content is {len(content):,} characters; the limit is {WRITE_MAX_CHARS:,}"
            )
        target, shown = _target(root, path)
        existed = target.exists()
        _current(target)  # refuses folders and special files
        target.parent.mkdir(parents=True, exist_ok=True)
        # Write beside and rename: a crash never leaves half a file.
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".tao-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(temp, target)
        return f"{'replaced' if existed else 'created'} {shown} ({len(content):,} characters)"

    def delete_file(path: str) -> str:
        """Delete one file inside the project.

        Args:
            path: File path relative to the project, e.g. "build/old.log".
        """
        target, shown = _target(root, path)
        if not target.exists():
            raise ToolError(f"{shown!r} does not exist")
        if not target.is_file():
            raise ToolError(f"{shown!r} is not a file; only files can be deleted")
        target.unlink()
        return f"deleted {shown}"

    def preview_write(arguments: JSONObject) -> str:
        return diff(root, str(arguments["path"]), str(arguments["content"]))

    def preview_delete(arguments: JSONObject) -> str:
        target, shown = _target(root, str(arguments["path"]))
        size = target.stat().st_size if target.is_file() else 0
        return f"delete {shown} ({size:,} bytes)"

    return [
        make_tool(write_file, effects="writes", trusted_output=True, preview=preview_write),
        make_tool(delete_file, effects="deletes", trusted_output=True, preview=preview_delete),
    ]
