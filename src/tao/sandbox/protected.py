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

A test may also *create* one where there was none (a ``.git`` with ``core.fsmonitor``
in a folder that had no repository, a new virtual environment): no bind can forbid a
name that does not exist yet, so :func:`planted` compares the search after the child
with the one before, and :func:`remove_planted` deletes what is new (SPEC S10).

The file tools never write these (``.git`` is a secret folder for them); the sandbox
must not open more than the policy did. So each one found is bound read-only again on
top of the writable bind, which also makes it a mount point that cannot be renamed or
replaced. The search is bounded like the code fingerprint: past :data:`MAX_ENTRIES`
entries or :data:`MAX_SECONDS`, the whole writable folder is bound read-only instead
(the safe side: the tests see ``Read-only file system``).
"""

from __future__ import annotations

import math
import os
import shutil
import stat
import time
from collections.abc import Iterable
from pathlib import Path

#: Names of version-control metadata (folders, or a ``.git`` file pointing elsewhere).
VCS_NAMES = frozenset({".git", ".hg", ".svn", ".bzr", ".jj"})
#: Compiled Python: a cache Python regenerates, so one the child wrote is simply removed.
COMPILED_SUFFIXES = (".pyc", ".pyo")
#: Python's compiled-module folder: one that is a symlink sends its reads elsewhere.
PYCACHE = "__pycache__"
#: The file that makes a folder a Python virtual environment.
VENV_MARKER = "pyvenv.cfg"
#: Entries visited at most per search, and its time; past either the folder stays read-only.
MAX_ENTRIES = 50_000
MAX_SECONDS = 2.0


def outermost(writable: Iterable[Path]) -> list[Path]:
    """The writable folders to bind, resolved: those not inside another one, by name or
    by where they lead. A folder inside a writable one can be replaced from within the
    sandbox (renamed away, a symlink to HOME in its place); resolved at the next start,
    it would open that target. The outer bind already covers it, so it is never bound on
    its own, whatever it has become (issue 26)."""
    places = {(Path(os.path.abspath(path)), Path(os.path.realpath(path))) for path in writable}
    kept: set[Path] = set()
    for path, real in places:
        if not any(
            other in path.parents
            or other in real.parents
            or target in path.parents
            or target in real.parents
            for other, target in places
        ):
            kept.add(real)
    return sorted(kept)


def later_run(
    folder: Path, *, max_entries: int = MAX_ENTRIES, max_seconds: float = MAX_SECONDS
) -> list[Path]:
    """The entries under ``folder`` that run later with the person's authority (see the
    module docstring), outermost first; ``[folder]`` itself when the search ran out of its
    bounds. A symlink of a VCS name (``.git`` -> ``../evil``, which git follows) counts by
    its target when that lies inside ``folder`` (one outside is read-only already)."""
    found, links, _compiled = _search(folder, max_entries, max_seconds)
    for link in links:
        target = Path(os.path.realpath(link))
        if folder in target.parents and target.exists():
            found.append(target)
    unique = set(found)
    return sorted(unique, key=lambda path: (len(path.parts), str(path)))


#: A found entry and its signature: ``""`` for metadata, a compiled file's ``lstat``.
Entry = tuple[Path, str]


def _search(
    folder: Path, max_entries: float, max_seconds: float
) -> tuple[list[Path], list[Path], list[Entry]]:
    """VCS metadata and virtual environments under ``folder`` (``[folder]`` past the
    bounds or when it is one itself or lies inside one), symlinks of a VCS name (never
    followed), and compiled Python files with their signatures."""
    if _inside_later_run(folder):
        return [folder], [], []
    deadline = time.monotonic() + max_seconds
    found: list[Path] = []
    links: list[Path] = []
    compiled: list[Entry] = []
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
                return [folder], [], []
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.name in VCS_NAMES:
                (links if stat.S_ISLNK(info.st_mode) else found).append(Path(entry.path))
            elif stat.S_ISDIR(info.st_mode):
                stack.append(Path(entry.path))
            elif entry.name.casefold().endswith(COMPILED_SUFFIXES) or entry.name == PYCACHE:
                signature = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
                compiled.append((Path(entry.path), signature))
    if (folder / VENV_MARKER).is_file():
        return [folder], [], []  # the writable folder is itself a virtual environment
    return found, links, compiled


def _inside_later_run(folder: Path) -> bool:
    """Whether ``folder`` is, or lies inside, version-control metadata or a virtual
    environment: a writable ``.git/hooks`` or ``.venv/lib`` (a policy rule for a folder
    the file tools never write) must not open what the search protects from above."""
    for place in (folder, *folder.parents):
        if place.name in VCS_NAMES or (place / VENV_MARKER).is_file():
            return True
    return False


#: Entries the search before a child may visit: far past :data:`MAX_ENTRIES`, so a
#: folder the mount's search found small enough to bind writable is always snapshotted
#: (a time bound could disagree between the two searches; an entry count cannot).
SNAPSHOT_ENTRIES = 1_000_000


def _entries(folder: Path, max_entries: float) -> list[Entry]:
    """What :func:`_search` finds in ``folder``, each with its signature; no time bound."""
    found, links, compiled = _search(folder, max_entries, math.inf)
    return [*((path, "") for path in (*found, *links)), *compiled]


def snapshot(folders: Iterable[Path]) -> frozenset[Entry]:
    """Every entry :func:`planted` may later call new, found before the child runs."""
    return frozenset(entry for folder in folders for entry in _entries(folder, SNAPSHOT_ENTRIES))


def planted(folders: Iterable[Path], before: frozenset[Entry]) -> list[Path]:
    """The VCS metadata, VCS-named symlinks, virtual environments and compiled Python
    files (``.pyc`` new or changed: Python runs one whose header matches its source's
    size and mtime, which ``git diff`` never shows) in ``folders`` that were not there
    ``before`` (:func:`snapshot`): made by the child, they would run later with the
    person's authority. A symlink counts as itself, never its target (a link to ``src``
    must not make ``src`` look new). A folder that was read-only whole (a virtual
    environment, inside VCS metadata, or past :data:`SNAPSHOT_ENTRIES` before) had nothing
    created in it. The search after the child has no bound: a test that floods its folder
    past the mount's bound (60,000 empty files, then a ``.git``) must not make the search
    give up, and listing what the child made costs far less than the child paid making it."""
    new: list[Path] = []
    for folder in folders:
        if (folder, "") in before:
            continue
        entries = _entries(folder, math.inf)
        if entries == [(folder, "")]:
            continue
        new += [path for path, signature in entries if (path, signature) not in before]
    return sorted(new, key=lambda path: (len(path.parts), str(path)))


def remove_planted(paths: Iterable[Path]) -> list[Path]:
    """Undo what :func:`planted` found; return what is gone now. New VCS metadata goes
    whole, a symlink as a link (never its target); a new virtual environment loses only
    its ``pyvenv.cfg`` (then no interpreter reads its ``.pth`` files), so a marker
    dropped into ``src/`` costs ``src/`` nothing. Called only after the child and all
    it started have ended (its PID namespace dies with it): nothing re-creates them."""
    removed: list[Path] = []
    for path in paths:
        target = path
        try:
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.name in VCS_NAMES:
                shutil.rmtree(path)
            else:
                target = path / VENV_MARKER
                target.unlink()
        except OSError:
            continue
        removed.append(target)
    return removed


#: Removed paths named in a note; the rest are counted.
SHOWN_REMOVED = 10


class Sweep:
    """The writable folders of one sandboxed child, searched when it starts; calling it
    removes what it planted since (:func:`planted`, :func:`remove_planted`) and returns a
    note for the observation, ``""`` when nothing was.

    ``run_tests`` sweeps once, after pytest and all it started have ended. An MCP server
    given writable folders lives for the session, so its tool sweeps after every call (what
    the server made so far cannot wait for the session's end: the person's shell, or the
    next ``run_tests``, which would take it for the project's own) and once more after the
    server has ended, when nothing can make them again."""

    def __init__(self, folders: Iterable[Path], who: str, maker: str) -> None:
        self.folders = outermost(folders)  # never a folder inside one, see there
        self.who, self.maker = who, maker
        self.before = snapshot(self.folders)

    def __call__(self, root: Path | None = None) -> str:
        """Remove what is new; the note names it relative to ``root`` when inside it."""
        removed = remove_planted(planted(self.folders, self.before)) if self.folders else []
        if not removed:
            return ""
        names = ", ".join(_shown(root, path) for path in removed[:SHOWN_REMOVED])
        if len(removed) > SHOWN_REMOVED:
            names += f" and {len(removed) - SHOWN_REMOVED} more"
        return (
            f"[{self.who}: removed {names}: made by {self.maker}, "
            "version-control metadata or a virtual environment or compiled Python would run "
            "later outside the sandbox]"
        )


def _shown(root: Path | None, path: Path) -> str:
    """``path`` relative to ``root`` when inside it, else as it is."""
    if root is None:
        return str(path)
    try:
        return str(path.relative_to(Path(os.path.realpath(root))))
    except ValueError:
        return str(path)


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
