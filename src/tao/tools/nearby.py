"""Paths of the project that a model probably meant, for a path that does not exist (issue 30).

A small model asks for ``read_file[poem.txt, 2]`` (a line number glued to the path),
``list_files[.csv]`` (a pattern where a folder goes) or ``notes.text``. "Does not exist"
alone sends it to list folders one by one, or to repeat itself; naming the paths it
most likely meant, with the call that reads one, lets it go on at the next step. This
is the error observation that shows the right call (issue 30, item 2).

The walk sees what ``list_files`` would show and nothing more: no symlink is followed,
secret-bearing names and folders and tooling noise (``.git``, caches, virtualenvs) are
left out, and it stops after :data:`WALK_LIMIT` entries so a huge project costs a
bounded time.

    nearby(root, "poem.txt, 2")   # ['poem.txt']
    nearby(root, ".csv")          # ['data/sales.csv']
"""

from __future__ import annotations

import difflib
import os
import posixpath
from fnmatch import fnmatchcase
from pathlib import Path, PurePath

from tao.tools.paths import is_secret_dir, is_secret_name

__all__ = ["WALK_LIMIT", "nearby"]

#: Entries looked at, at most: a suggestion is a courtesy, never a crawl of a monorepo.
WALK_LIMIT = 5_000
#: Characters that may follow a real path in what a model wrote (``poem.txt, 2``,
#: ``config.ini:3``, ``notes.txt lines``).
_GLUE = (",", " ", ":", ";", "#", "(", "[", "\t")


def _entries(root: Path, skipped: frozenset[str]) -> list[str]:
    """Project-relative POSIX paths of files and folders (folders end with ``/``), in walk order."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder).relative_to(root).as_posix()
        prefix = "" if base == "." else f"{base}/"
        dirs[:] = sorted(d for d in dirs if d.casefold() not in skipped and not is_secret_dir(d))
        for name in dirs:
            found.append(f"{prefix}{name}/")
        for name in sorted(files):
            if not is_secret_name(name):
                found.append(f"{prefix}{name}")
        if len(found) >= WALK_LIMIT:
            return found[:WALK_LIMIT]
    return found


def nearby(
    root: Path, raw: str, skipped: frozenset[str] = frozenset(), limit: int = 3
) -> list[str]:
    """Up to ``limit`` paths of ``root`` that ``raw`` (which does not exist) likely meant.

    In order of confidence: a real path followed by glued text (``poem.txt, 2``); a
    pattern or a fragment of a name (``*.csv``, ``.csv``, ``sales``); a near spelling
    of a name (``note.txt``). Folders keep their trailing ``/``.
    """
    text = raw.strip().strip("\"'`").strip()
    if not text:
        return []
    entries = _entries(root, skipped)
    plain = [e.rstrip("/") for e in entries]
    picked: dict[str, None] = {}  # ordered, and a membership test in constant time

    def add(entry: str) -> None:
        picked.setdefault(entry)

    normal = posixpath.normpath(text) if text not in (".", "") else text
    glued = [
        e
        for e, p in zip(entries, plain, strict=True)
        if len(normal) > len(p) and normal.startswith(p) and normal[len(p)] in _GLUE
    ]
    for entry in sorted(glued, key=len, reverse=True):
        add(entry)
    folded = text.casefold()
    if any(ch in text for ch in "*?["):
        for entry, path in zip(entries, plain, strict=True):
            if fnmatchcase(path.casefold(), folded) or fnmatchcase(
                PurePath(path).name.casefold(), folded
            ):
                add(entry)
    elif "/" not in text.strip("/") and len(folded) >= 2:
        for entry, path in zip(entries, plain, strict=True):
            if folded in PurePath(path).name.casefold():
                add(entry)
    names = {PurePath(p).name.casefold(): e for e, p in zip(entries, plain, strict=True)}
    want = PurePath(normal).name.casefold()
    for close in difflib.get_close_matches(want, list(names), n=limit, cutoff=0.75):
        add(names[close])
    return list(picked)[:limit]
