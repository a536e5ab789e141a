"""The ``write`` tool set: change files inside the project, only with a person's yes (SPEC S3).

``write_file`` and ``delete_file`` declare their effects, so every call waits
for approval (or a policy rule); the approval shows a unified diff of exactly
what would change, redacted (SPEC S8: the person's screen and the run log never
show the secrets of the file being rewritten), while the approved write writes
the model's real content. Paths are resolved once, at validation (SPEC S6):

- ``write_file`` walks the checked path with ``O_NOFOLLOW`` and writes a temporary
  file inside the checked folder's descriptor, renamed over the target there;
- ``delete_file`` deletes exactly what the person was shown: its preview names the
  file's inode, size and content digest, and the delete moves the file aside
  inside the checked folder, compares it with that fingerprint, and puts it back
  (refusing) if it changed.

    tao run "fix the typo in README.md" -t files,write --project .
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import os
import secrets
import stat
from pathlib import Path, PurePath
from typing import NamedTuple

from tao.errors import ToolError
from tao.redact.kept import redact_kept
from tao.redact.marker import REDACTED
from tao.redact.scan import redact
from tao.state.jsontypes import JSONObject
from tao.tools.base import Tool, make_tool
from tao.tools.paths import (
    ProjectPath,
    act_path,
    is_secret_path,
    open_folder,
    open_in_project,
    project_root,
)

#: Largest content write_file accepts, so one call cannot fill the disk.
WRITE_MAX_CHARS = 1_000_000
_DIFF_MAX_LINES = 400
#: Longest diff line shown: a minified bundle or a JSON dump is one line of megabytes,
#: which no person reads in a terminal and which would cost seconds to redact whole.
_DIFF_LINE_CHARS = 2_000


class Fingerprint(NamedTuple):
    """What identifies one file version: the object (device, inode) and its content."""

    device: int
    inode: int
    size: int
    sha256: str

    def describe(self) -> str:
        return f"{self.size:,} bytes, sha256 {self.sha256[:16]}, inode {self.inode}"


def _target(root: Path, raw: str) -> ProjectPath:
    path = act_path(root, raw)
    if path.relative == ".":
        raise ToolError("give a file path, not the project folder")
    if is_secret_path(PurePath(path.relative)):
        raise ToolError(
            f"{path.relative!r} is a secret-bearing file; it is never written or deleted"
        )
    return path


def _fingerprint_fd(fd: int, shown: str) -> Fingerprint:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown!r} is not a regular file")
    digest = hashlib.sha256()
    while chunk := os.read(fd, 1 << 20):
        digest.update(chunk)
    return Fingerprint(info.st_dev, info.st_ino, info.st_size, digest.hexdigest())


def _read(path: ProjectPath) -> bytes | None:
    """The current content of a checked path, or ``None`` if there is no file yet."""
    try:
        fd = open_in_project(path, os.O_RDONLY | os.O_NONBLOCK)
    except ToolError as error:
        if "does not exist" in str(error):
            return None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ToolError(f"{path.relative!r} is not a regular file")
        return handle.read()


def diff(root: Path, path: str, content: str) -> str:
    """The unified diff write_file would apply, redacted: what the person approving reads."""
    target = _target(root, path)
    data = _read(target)
    before = "" if data is None else data.decode("utf-8", errors="replace")
    shown = target.relative
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            content.splitlines(keepends=True),
            fromfile=f"a/{shown}" if data is not None else "/dev/null",
            tofile=f"b/{shown}",
        )
    )
    if not lines:
        return f"{shown}: no change"
    if len(lines) > _DIFF_MAX_LINES:
        lines = [*lines[:_DIFF_MAX_LINES], f"... ({len(lines) - _DIFF_MAX_LINES} more lines)\n"]
    text = "".join(_shown_line(line) for line in lines)
    return redact(text.rstrip("\n"))


def _shown_line(line: str) -> str:
    """A diff line as the preview shows it: ending in a line break, and past
    :data:`_DIFF_LINE_CHARS` cut, redacted where it is cut first (:mod:`tao.redact.kept`),
    so no secret across the cut shows in part."""
    line = line.rstrip("\n")
    if len(line) > _DIFF_LINE_CHARS:
        region, _ = redact_kept(line, _DIFF_LINE_CHARS, "head")
        more = len(line) - _DIFF_LINE_CHARS
        end = _DIFF_LINE_CHARS
        marker = region.find(REDACTED, max(0, end - len(REDACTED) + 1), end + len(REDACTED))
        if 0 <= marker < end:  # never half a marker
            end = marker + len(REDACTED)
        line = f"{region[:end]} ... ({more:,} more characters on this line)"
    return line + "\n"


def write_through_folder(target: ProjectPath, content: str) -> bool:
    """Write ``content`` to ``target`` via the checked folder's descriptor; ``True`` if replaced.

    The temporary file is created (``O_EXCL | O_NOFOLLOW``) and renamed inside the
    folder reached by the no-follow walk, so the write lands in that folder even
    if a path component is swapped for a link meanwhile; a crash never leaves
    half a file.
    """
    folder = open_folder(target.root, target.parts[:-1], create=True)
    name = target.parts[-1]
    temp = f".tao-{secrets.token_hex(8)}.tmp"
    try:
        existing = _lstat(name, folder)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise ToolError(f"{target.relative!r} is not a regular file (a folder or a link)")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(temp, flags, 0o666, dir_fd=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if existing is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(existing.st_mode))
            handle.write(content)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        return existing is not None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise
    finally:
        os.close(folder)


def _lstat(name: str, folder: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def delete_checked(target: ProjectPath, expected: Fingerprint | None) -> None:
    """Delete ``target`` only if it is still the object that was checked (and shown).

    The file is first renamed aside inside the checked folder (atomic: from then
    on no one else can swap it), then compared with ``expected`` (or with what
    stood there a moment before); a mismatch puts it back and refuses.
    """
    folder = open_folder(target.root, target.parts[:-1])
    name, aside = target.parts[-1], f".tao-delete-{secrets.token_hex(8)}"
    try:
        before = _lstat(name, folder)
        if before is None:
            raise ToolError(f"{target.relative!r} does not exist")
        if not stat.S_ISREG(before.st_mode):
            raise ToolError(f"{target.relative!r} is not a file; only files can be deleted")
        os.rename(name, aside, src_dir_fd=folder, dst_dir_fd=folder)
        fd = os.open(aside, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=folder)
        try:
            now = _fingerprint_fd(fd, target.relative)
        finally:
            os.close(fd)
        want = expected or Fingerprint(before.st_dev, before.st_ino, before.st_size, now.sha256)
        if now != want:
            os.rename(aside, name, src_dir_fd=folder, dst_dir_fd=folder)
            raise ToolError(
                f"{target.relative!r} changed since it was shown ({want.describe()}; now "
                f"{now.describe()}); it was not deleted"
            )
        os.unlink(aside, dir_fd=folder)
    finally:
        os.close(folder)


def fingerprint_of(target: ProjectPath) -> Fingerprint:
    """The fingerprint of the file a delete preview shows, read through the no-follow walk."""
    fd = open_in_project(target, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return _fingerprint_fd(fd, target.relative)
    finally:
        os.close(fd)


def write_tools(project: Path | str) -> list[Tool]:
    """Build ``write_file`` and ``delete_file`` confined to ``project``."""
    root = project_root(project)
    #: What each delete preview showed, by path: the delete acts only on that object.
    shown: dict[str, Fingerprint] = {}

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
        target = _target(root, path)
        replaced = write_through_folder(target, content)
        verb = "replaced" if replaced else "created"
        return f"{verb} {target.relative} ({len(content):,} characters)"

    def delete_file(path: str) -> str:
        """Delete one file inside the project.

        Args:
            path: File path relative to the project, e.g. "build/old.log".
        """
        target = _target(root, path)
        delete_checked(target, shown.pop(target.relative, None))
        return f"deleted {target.relative}"

    def preview_write(arguments: JSONObject) -> str:
        return diff(root, str(arguments["path"]), str(arguments["content"]))

    def preview_delete(arguments: JSONObject) -> str:
        target = _target(root, str(arguments["path"]))
        shown[target.relative] = fingerprint = fingerprint_of(target)
        return f"delete {target.relative} ({fingerprint.describe()})"

    on_paths = functools.partial(
        make_tool, trusted_output=True, path_params=("path",), project=root
    )
    return [
        on_paths(write_file, effects="writes", preview=preview_write),
        on_paths(delete_file, effects="deletes", preview=preview_delete),
    ]
