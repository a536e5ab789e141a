"""The path guard the file and test tools share (SPEC S1, S2).

The model chooses every path argument, so each one is untrusted: it is resolved
(symlinks included) against the project folder and refused unless the *resolved*
target is still inside it. Names that carry secrets (``.env``, private keys,
credential files) are recognised here too, whatever their case or suffix tricks,
so that ``read_file`` and ``list_files`` agree on what is off limits.

    root = project_root(Path("."))
    target = inside_project(root, "src/app.py")      # a resolved Path inside root
    inside_project(root, "../etc/passwd")            # raises ToolError
"""

from __future__ import annotations

import unicodedata
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
SECRET_DIRS: frozenset[str] = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".gcloud", ".kube", ".docker", ".git"}
)


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


def is_secret_path(path: PurePath) -> bool:
    """True if the file name or any folder on the way is secret-bearing."""
    parts = path.parts
    if any(_normal(part) in SECRET_DIRS for part in parts[:-1]):
        return True
    return bool(parts) and is_secret_name(parts[-1])


def inside_project(root: Path, raw: str) -> Path:
    """Resolve ``raw`` against ``root`` and return it, or raise :class:`ToolError` saying why.

    ``root`` must already be resolved (see :func:`project_root`). Absolute paths,
    ``~`` paths, NUL bytes and anything whose resolved target leaves ``root``
    (``../``, or a symlinked file or folder pointing out) are refused.
    """
    text = raw.strip()
    if "\x00" in text:
        raise ToolError("the path contains a NUL byte")
    if not text:
        raise ToolError("the path is empty; give a path relative to the project, e.g. 'src'")
    if text.startswith("~"):
        raise ToolError(f"{text!r}: home-relative paths are not allowed; use a project path")
    pure = PurePath(text)
    if pure.is_absolute() or text.startswith(("/", "\\")) or pure.drive:
        raise ToolError(f"{text!r} is an absolute path; give a path relative to the project")
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
