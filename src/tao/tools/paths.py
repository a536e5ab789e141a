"""The path guard the file and test tools share (SPEC S1, S2).

The model chooses every path argument, so each one is untrusted: it is resolved
(symlinks included) against the project folder and refused unless the *resolved*
target is still inside it. Names that carry secrets (``.env``, private keys,
credential files) are recognised here too, whatever their case or suffix tricks,
so that ``read_file`` and ``list_files`` agree on what is off limits.

    root = project_root(Path("."))
    target = resolve_path(root, "src/../app.py")    # ProjectPath(relative="app.py", ...)
    resolve_path(root, "../etc/passwd")             # raises ToolError

A path is resolved *once*, when a call's arguments are validated
(:meth:`tao.tools.base.Tool.validate` replaces it by its project-relative form).
When the tool acts, :func:`act_path` refuses a path that no longer names itself
(a folder swapped for a symlink since the check), and :func:`open_in_project`
walks from the project folder one component at a time with ``O_NOFOLLOW``, so
the object opened is the object that was checked (SPEC S6).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import unicodedata
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePath

from tao.errors import ConfigError, ToolError


class ProjectError(ConfigError):
    """The project folder given to a tool set does not exist or is not a folder."""


#: Lower-cased file-name patterns that carry secrets; never read, never listed.
SECRET_NAME_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.gpg",
    "*.asc",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.ppk",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    ".dockercfg",
    "*credential*",
    "*secret*",
    "*passw*",
    "service-account*.json",
)

#: Folders whose whole content is secret (SSH keys, cloud and package-manager logins).
#: A folder whose *name* matches :data:`SECRET_NAME_PATTERNS` (``secrets/``,
#: ``credentials/``, ``.env/``) is secret as well: one list for files and folders.
SECRET_DIRS: frozenset[str] = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".gcloud", "gcloud", ".kube", ".docker", ".git",
     ".password-store", ".vault", ".terraform.d"}
)  # fmt: skip


def project_root(project: Path | str) -> Path:
    """Resolve the project folder once, at tool construction; raise if it is not a folder."""
    root = Path(project).expanduser().resolve()
    if not root.is_dir():
        raise ProjectError(f"project folder {str(project)!r} does not exist or is not a folder")
    return root


def _normal(name: str) -> str:
    """Fold case and look-alike characters; drop the trailing dots and spaces Windows ignores."""
    return unicodedata.normalize("NFKC", name).casefold().rstrip(". ")


def is_secret_name(name: str) -> bool:
    """True for a file name that conventionally holds secrets (``.ENV``, ``id_rsa.pub``, ...)."""
    folded = _normal(name)
    return any(fnmatchcase(folded, pattern) for pattern in SECRET_NAME_PATTERNS)


def is_secret_dir(name: str) -> bool:
    """True for a folder whose content is secret: a key store (``.ssh``) or a secret name."""
    return _normal(name) in SECRET_DIRS or is_secret_name(name)


def is_secret_path(path: PurePath) -> bool:
    """True if the file name or any folder on the way is secret-bearing
    (``.ssh/config``, ``secrets/db.txt``, ``deploy/credentials/x``)."""
    parts = path.parts
    if any(is_secret_dir(part) for part in parts[:-1]):
        return True
    return bool(parts) and is_secret_name(parts[-1])


@dataclass(frozen=True, slots=True)
class ProjectPath:
    """A path inside the project, resolved once: what policies match and tools act on."""

    #: The resolved project folder.
    root: Path
    #: The resolved absolute path (symlinks followed, ``..`` gone); inside ``root``.
    absolute: Path
    #: The project-relative POSIX form, ``.`` for the project itself; what rules match.
    relative: str

    @property
    def parts(self) -> tuple[str, ...]:
        return () if self.relative == "." else tuple(self.relative.split("/"))


def resolve_path(root: Path, raw: str) -> ProjectPath:
    """Resolve ``raw`` against ``root``, or raise :class:`ToolError` saying why.

    ``root`` must already be resolved (see :func:`project_root`). Absolute paths,
    ``~`` paths, NUL bytes and anything whose resolved target leaves ``root``
    (``../``, or a symlinked file or folder pointing out) are refused.
    """
    resolved = inside_project(root, raw)
    return ProjectPath(root, resolved, relative(root, resolved))


def act_path(root: Path, raw: str) -> ProjectPath:
    """The path a tool acts on: ``raw`` must name itself, with no symlink on the way.

    Validation already replaced the model's path by its resolved form; if it
    resolves elsewhere now, something was swapped for a link since the check.
    """
    checked = resolve_path(root, raw)
    lexical = posixpath.normpath(raw.strip())
    if checked.relative != lexical:
        raise ToolError(
            f"{raw.strip()!r} passes through a symbolic link (to {checked.relative!r}); "
            "it is not acted on: the path checked must be the path used"
        )
    return checked


def open_in_project(
    path: ProjectPath, flags: int = os.O_RDONLY, *, create_dirs: bool = False
) -> int:
    """Open ``path`` by walking from the project folder, never following a symlink.

    Every folder on the way is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to
    the one before, so a component swapped for a link after the check is refused
    (``ELOOP``/``ENOTDIR``) instead of followed out of the project.
    ``create_dirs`` makes missing folders on the way (for ``write_file``).
    """
    folder = open_folder(path.root, path.parts[:-1], create=create_dirs)
    if not path.parts:
        return folder if flags == os.O_RDONLY else _refuse_root(folder)
    try:
        fd = os.open(path.parts[-1], flags | _NOFOLLOW, 0o666, dir_fd=folder)
    except OSError as error:
        raise _explain(path.relative, error) from None
    finally:
        os.close(folder)
    try:
        refuse_hard_link(os.fstat(fd), path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_hard_link(info: os.stat_result, path: ProjectPath) -> None:
    """Refuse a regular file with more than one name, unless the policy allows it.

    A hard link inside the project can name a file anywhere on the same file
    system (``/etc/shadow``-like files, another project's ``.env``): the path
    checks see only the name inside the project, so the object is judged here,
    by its link count. A person allows chosen paths in the policy file
    (``hard_links = ["vendor/**"]``, see :func:`tao.approval.globs.hard_link_allowed`).
    """
    if not stat.S_ISREG(info.st_mode) or info.st_nlink <= 1:
        return
    # The person's policy file is read only for such a rare file, at that moment.
    from tao.approval.globs import hard_link_allowed

    if hard_link_allowed(path.relative):
        return
    raise ToolError(
        f"{path.relative!r} has {info.st_nlink} names (a hard link): it may be a file outside "
        "the project, so it is not opened; a person can allow it with hard_links = [...] "
        "in the policy file"
    )


def open_folder(root: Path, parts: tuple[str, ...], *, create: bool = False) -> int:
    """A descriptor of ``root/parts...`` reached one component at a time, links refused."""
    fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    try:
        for index, part in enumerate(parts):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError as error:
                raise _explain("/".join(parts[: index + 1]), error) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _refuse_root(folder: int) -> int:
    os.close(folder)
    raise ToolError("give a file path, not the project folder")


class MissingPathError(ToolError):
    """A checked path inside the project names nothing (``ENOENT`` on the walk): the one
    refusal a file tool may answer with the paths that were probably meant
    (:mod:`tao.tools.nearby`); every other refusal stands as it is."""


def _explain(shown: str, error: OSError) -> ToolError:
    """A clear refusal for what walking a checked path can meet."""
    if error.errno in (errno.ELOOP, errno.EMLINK):
        return ToolError(f"{shown!r} is a symbolic link now; it is not followed (S6)")
    if error.errno == errno.ENOTDIR:
        return ToolError(f"{shown!r}: a folder on the way is not a folder (or is a link)")
    if error.errno == errno.ENOENT:
        return MissingPathError(f"{shown!r} does not exist; use list_files to see what does")
    if error.errno == errno.EISDIR:
        return ToolError(f"{shown!r} is a folder")
    return ToolError(f"{shown!r} cannot be opened: {error.strerror}")


def inside_project(root: Path, raw: str) -> Path:
    """Resolve ``raw`` against ``root`` and return the resolved path (see :func:`resolve_path`)."""
    text = raw.strip()
    if "\x00" in text:
        raise ToolError("the path contains a NUL byte")
    if not text:
        raise ToolError("the path is empty; give a path relative to the project, e.g. 'src'")
    if text.startswith("~"):
        raise ToolError(f"{text!r}: home-relative paths are not allowed; use a project path")
    pure = PurePath(text)
    if pure.is_absolute() or text.startswith(("/", "\\")) or pure.drive:
        inside = text.lstrip("/\\") or "."
        raise ToolError(
            f"{text!r} is an absolute path; give a path relative to the project, "
            f"such as {inside!r} ('.' is the project folder itself)"
        )
    try:
        resolved = (root / pure).resolve()
    except (OSError, RuntimeError, ValueError) as error:
        raise ToolError(f"{text!r} cannot be resolved: {error}") from None
    if not resolved.is_relative_to(root):
        raise ToolError(f"{text!r} is outside the project")
    return resolved


def relative(root: Path, path: Path) -> str:
    """How a path inside the project is shown to the model: POSIX, relative, ``.`` for the root."""
    rel = path.relative_to(root).as_posix()
    return rel or "."
