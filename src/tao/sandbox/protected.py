"""What stays read-only inside a folder a sandboxed child may write (SPEC S10, S3; issue 26).

A writable folder (``Sandbox.writable``, opened by a policy that pre-approves writes
there) is bound whole. Some things inside it are not the project's data but code that
runs *later, outside the sandbox, with the person's full authority*:

- version-control metadata: ``.git`` (hooks, ``core.fsmonitor``/``core.pager`` in its
  config, a ``.git`` file redirecting to another git folder), ``.hg`` (``[hooks]`` in
  ``hgrc``), ``.svn``, ``.bzr``, ``.jj``: run by the person's next ``git status``;
- virtual environments (a folder holding ``pyvenv.cfg``): a ``.pth`` in their
  site-packages runs in every Python started from them, ``bin/activate`` is sourced by
  the person's shell; tao's own installation among them.

The file tools never write these (``.git`` is a secret folder for them); the sandbox
must not open more than the policy did. So each one found is bound read-only again on
top of the writable bind, which also makes it a mount point that cannot be renamed or
replaced. The search is bounded like the code fingerprint: past :data:`MAX_ENTRIES`
entries or :data:`MAX_SECONDS`, the whole writable folder is bound read-only instead
(the safe side: the tests see ``Read-only file system``).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

#: Names of version-control metadata (folders, or a ``.git`` file pointing elsewhere).
VCS_NAMES = frozenset({".git", ".hg", ".svn", ".bzr", ".jj"})
#: The file that makes a folder a Python virtual environment.
VENV_MARKER = "pyvenv.cfg"
#: Entries visited at most per search, and its time; past either the folder stays read-only.
MAX_ENTRIES = 50_000
MAX_SECONDS = 2.0


def later_run(
    folder: Path, *, max_entries: int = MAX_ENTRIES, max_seconds: float = MAX_SECONDS
) -> list[Path]:
    """The entries under ``folder`` that run later with the person's authority (see the
    module docstring), outermost first; ``[folder]`` itself when the search ran out of its
    bounds. Symlinks are not followed: a link is only a name inside the writable folder."""
    deadline = time.monotonic() + max_seconds
    found: list[Path] = []
    stack = [folder]
    visited = 0
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                listed = list(entries)
        except OSError:
            continue  # unreadable here is unreadable for the child too
        if any(entry.name == VENV_MARKER for entry in listed) and current != folder:
            found.append(current)
            continue
        for entry in listed:
            visited += 1
            if visited > max_entries or time.monotonic() > deadline:
                return [folder]
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if entry.name in VCS_NAMES and not stat.S_ISLNK(mode):
                found.append(Path(entry.path))
            elif stat.S_ISDIR(mode):
                stack.append(Path(entry.path))
    if (folder / VENV_MARKER).is_file():
        return [folder]  # the writable folder is itself a virtual environment
    return sorted(found, key=lambda path: (len(path.parts), str(path)))


def read_only_again(writable: Iterable[Path], installed: Iterable[Path]) -> list[Path]:
    """Everything to bind read-only on top of the ``writable`` folders: what
    :func:`later_run` finds in each, and the ``installed`` Python paths (tao's own
    interpreter and import path) that lie inside one."""
    folders = list(writable)
    again: list[Path] = []
    for path in installed:
        if any(path == folder or folder in path.parents for folder in folders):
            again.append(path)
    for folder in folders:
        again += later_run(folder)
    unique = sorted(set(again), key=lambda path: (len(path.parts), str(path)))
    return [p for p in unique if not any(o != p and o in p.parents for o in unique)]
