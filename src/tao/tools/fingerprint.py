"""What a person approved of the project's code, and what changed since (SPEC S11, S3, S7).

``run_tests`` reads nothing and writes nothing itself, yet pytest executes whatever the
project provides: test files, ``conftest.py``, plugins and options named in
``pytest.ini``/``pyproject.toml``/``tox.ini``/``setup.cfg``, ``.pth`` files, any module a
test imports, any script a test starts. So a write a policy allows, or one approved edit,
would become code that runs with nobody's yes. :class:`CodeGate` makes such a call an
effect *when* the code changed: the project's executable files are fingerprinted when
the run starts and whenever a person approves a test run; a call while the fingerprint
differs from the approved one waits for a person, who is shown which files changed.

The fingerprint is bounded and cheap: one ``lstat`` per file, a sha256 of the content of
files up to :data:`HASH_LIMIT` bytes, at most :data:`MAX_ENTRIES` entries and
:data:`MAX_SECONDS` seconds; past a bound it is *incomplete*, and an incomplete
fingerprint never matches (every test run then asks). Each file's signature holds its
kind, mode, size, inode, mtime and ctime (which no user can set back), a symlink's
target and what the target is, and the content's hash: a file swapped for a symlink, a
rename over it, an edit undone by ``touch -d``, or an edit changed back are all changes.

What counts as executable (:func:`executable`): Python sources and compiled modules
(``.py``, ``.pyc``, ``.pth``, ``.so``…), pytest's and setuptools' configuration files
wherever they are (pytest finds an ini file in any folder above a test), entry points,
shell scripts, anything with an execute bit, and every symlink. Data files are not:
changing a fixture does not make the next test run ask.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path

from tao.sandbox import availability
from tao.state import codec
from tao.state.frozen import frozen
from tao.state.jsontypes import JSON, JSONObject, canonical_json

#: Entries (files and folders) visited at most; past it the fingerprint is incomplete.
MAX_ENTRIES = 50_000
#: Seconds one fingerprint may take; past it the fingerprint is incomplete.
MAX_SECONDS = 3.0
#: Files up to this size have their content hashed too; bigger ones by their metadata.
HASH_LIMIT = 1_000_000
#: Changed files named in one reason or preview; the rest are counted.
SHOWN = 20

#: Suffixes of files Python or pytest executes or loads code from.
CODE_SUFFIXES = frozenset(
    {".py", ".pyw", ".pyc", ".pyo", ".pyi", ".pth", ".so", ".pyd", ".dylib", ".dll", ".egg",
     ".whl", ".zip", ".ini", ".cfg", ".toml", ".sh", ".bash", ".zsh", ".fish", ".ps1",
     ".bat", ".cmd", ".pl", ".rb", ".js", ".mjs", ".cjs"}
)  # fmt: skip
#: Names that are code or name code to run, whatever their suffix.
CODE_NAMES = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg",
     "setup.py", "sitecustomize.py", "usercustomize.py", "entry_points.txt", "makefile",
     "gnumakefile", "justfile", "noxfile.py", ".pdbrc", "pyvenv.cfg", "direct_url.json",
     "record", "top_level.txt"}
)  # fmt: skip


def executable(name: str, mode: int) -> bool:
    """Whether a file named ``name`` with ``mode`` (from ``lstat``) can run under pytest."""
    if stat.S_ISLNK(mode) or (stat.S_ISREG(mode) and mode & 0o111):
        return True
    folded = name.casefold()
    return folded in CODE_NAMES or os.path.splitext(folded)[1] in CODE_SUFFIXES


@frozen(kw_only=True)
class Fingerprint:
    """The executable files of a project: project-relative POSIX path -> signature."""

    files: Mapping[str, str]
    #: False when a bound was reached: then the fingerprint matches nothing.
    complete: bool = True
    #: sha256 of ``files`` (and ``complete``): what an approval is bound to.
    digest: str = ""

    @classmethod
    def of(cls, files: Mapping[str, str], complete: bool) -> Fingerprint:
        text = canonical_json({"files": dict(files), "complete": complete})
        return cls(files=files, complete=complete, digest=hashlib.sha256(text.encode()).hexdigest())

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: JSON) -> Fingerprint | None:
        """A recorded fingerprint; ``None`` for anything malformed (then nothing matches it)."""
        try:
            return codec.decode(cls, data)
        except codec.ShapeError:
            return None

    def changes(self, before: Fingerprint) -> tuple[list[str], list[str], list[str]]:
        """The files changed, added and removed since ``before``, sorted."""
        old = before.files
        changed = sorted(p for p, s in self.files.items() if p in old and old[p] != s)
        added = sorted(p for p in self.files if p not in before.files)
        removed = sorted(p for p in before.files if p not in self.files)
        return changed, added, removed


#: A record without its digest is malformed (``null`` is no string), not one with digest "".
codec.shape(Fingerprint, keys=("digest", "complete", "files"), missing={"digest": None})


def take(
    root: Path, *, max_entries: int = MAX_ENTRIES, max_seconds: float = MAX_SECONDS
) -> Fingerprint:
    """Fingerprint the executable files under ``root`` (symlinked folders are not entered:
    the link itself is a file of the fingerprint)."""
    deadline = time.monotonic() + max_seconds
    files: dict[str, str] = {}
    stack: list[tuple[str, str]] = [(str(root), "")]
    visited = 0
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError as error:
            files[prefix or "."] = f"unreadable:{type(error).__name__}"
            continue
        for entry in listed:
            visited += 1
            if visited > max_entries or time.monotonic() > deadline:
                return Fingerprint.of(files, complete=False)
            relative = f"{prefix}{entry.name}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                files[relative] = "vanished"
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append((entry.path, relative + "/"))
            elif executable(entry.name, info.st_mode):
                files[relative] = _signature(entry.path, info)
    return Fingerprint.of(files, complete=True)


def _signature(path: str, info: os.stat_result) -> str:
    """A short hash of everything that makes this file what it is."""
    parts: list[object] = [info.st_mode, info.st_size, info.st_ino, info.st_dev,
                           info.st_mtime_ns, info.st_ctime_ns, info.st_nlink]  # fmt: skip
    if stat.S_ISLNK(info.st_mode):
        try:
            parts.append(os.readlink(path))
            target = os.stat(path)
            parts += [target.st_mode, target.st_size, target.st_ino, target.st_mtime_ns,
                      target.st_ctime_ns]  # fmt: skip
        except OSError:
            parts.append("dangling")
    elif stat.S_ISREG(info.st_mode) and info.st_size <= HASH_LIMIT:
        parts.append(_content(path))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _content(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        return f"unreadable:{type(error).__name__}"
    try:
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def describe(now: Fingerprint, before: Fingerprint | None) -> str:
    """What changed between ``before`` (the approved fingerprint) and ``now``, for a person."""
    if before is None:
        return "no approved state of the project's code is recorded for this run"
    if not now.complete:
        return (
            f"the project has too many files to check in {MAX_SECONDS:g} s "
            f"(over {MAX_ENTRIES:,} entries), so every test run needs approval"
        )
    changed, added, removed = now.changes(before)
    parts = [
        f"{label}: {_names(names)}"
        for label, names in (("changed", changed), ("added", added), ("removed", removed))
        if names
    ]
    return "; ".join(parts) or "the approved fingerprint could not be checked"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


class CodeGate:
    """Makes a call of a tool that runs the project's code an effect when that code changed
    since the last approval (:class:`tao.tools.base.Gate`)."""

    def __init__(self, root: Path, what: str = "run_tests") -> None:
        self.root = root
        self.what = what

    def snapshot(self) -> JSONObject:
        """The state of the project's code now, as the run records it."""
        return take(self.root).to_json()

    def reason(self, arguments: JSONObject, approved: JSON | None) -> str | None:
        """Why this call needs a person: the code it would run is not the code approved."""
        before = Fingerprint.from_json(approved) if approved is not None else None
        now = take(self.root)
        sandbox = availability()
        unconfined = None if sandbox.available else (
            f"{self.what} would execute the project's code unconfined ({sandbox.reason}), so "
            "every test run needs approval (SPEC S10)"
        )  # fmt: skip
        if before is not None and now.complete and before.complete and now.digest == before.digest:
            return unconfined
        changed = (
            f"{self.what} executes the project's code, and it is not what was approved "
            f"when the run started or at the last approved test run: {describe(now, before)}"
        )
        return changed if unconfined is None else f"{unconfined}; {changed}"

    def preview(self, arguments: JSONObject) -> str:
        """What the call runs, bound to the code as it is now (checked again right before it
        runs: an edit after the approval refuses the call, SPEC S7)."""
        now = take(self.root)
        path = arguments.get("path")
        target = f"pytest on {path}" if isinstance(path, str) else "pytest"
        return (
            f"{self.what}: {target}, executing the project's code as it is now "
            f"({len(now.files)} executable files, fingerprint {now.digest[:16]}"
            f"{'' if now.complete else ', incomplete'})"
        )

    def approved(self, shown: str | None) -> JSONObject | None:
        """The fingerprint a person approved by approving a call whose preview was ``shown``:
        taken now, and only if it is still the one the preview named."""
        if shown is None:
            return None
        now = take(self.root)
        if not now.complete or f"fingerprint {now.digest[:16]})" not in shown:
            return None
        return now.to_json()
