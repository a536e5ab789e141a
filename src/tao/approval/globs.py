"""Path globs of a policy file, and what the file tools need of it (SPEC S3, S6).

The matching rules of :mod:`tao.approval.policy` live here, below the tools, because the
file tools ask one question of the policy themselves: may this multiply-linked file be
opened (``hard_links = ["vendor/**"]``)? Everything here reads a person's file or a
project-relative path; nothing here knows a tool.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from tao.errors import ConfigError
from tao.paths import default_policy_path


class PolicyError(ConfigError):
    """The policy file cannot be read or holds a rule that makes no sense (a person's file)."""


PATH_ESCAPE = re.compile(r"(?:^|[/\\])\.\.(?:[/\\]|$)|^[/\\~]|\\|^[A-Za-z]:")


def path_covered(pattern: str, relative: str) -> bool:
    """Whether the path glob ``pattern`` covers the project-relative path ``relative``.

    A folder rule covers what is inside the folder: ``src`` (or ``src/``,
    ``src/**``) covers ``src`` and ``src/a/b.py``, never ``src_evil/x``. Only a
    pattern whose last part is plain text extends to what lies under it, so
    ``*.py`` does not reach into a folder named ``x.py/``.
    """
    glob = normal_pattern(pattern)
    regex = _glob(glob)
    if regex.fullmatch(relative) is not None:
        return True
    last = glob.rsplit("/", 1)[-1]
    if _WILDCARD.search(last):
        return False
    # the literal last part names a folder: any path below it is covered
    parts = relative.split("/")
    return any(regex.fullmatch("/".join(parts[:i])) for i in range(1, len(parts)))


_WILDCARD = re.compile(r"[*?]")


def normal_pattern(pattern: str) -> str:
    """``./src//a/`` as ``src/a``: the form rules match in; ``""`` is the whole project."""
    parts = [part for part in pattern.strip().split("/") if part not in ("", ".")]
    return "/".join(parts) or "**"


def pattern_problem(pattern: str) -> str | None:
    """Why a path glob can never name something inside the project, or ``None``."""
    text = pattern.strip()
    if "\x00" in text:
        return "holds a NUL byte"
    if text.startswith(("/", "~")) or PATH_ESCAPE.search(text):
        return "leaves the project (absolute, ~, .. or a backslash); rules match project paths"
    return None


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """A path glob: ``**`` any folders (``out/**`` also covers ``out``), ``*`` within one."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            char = pattern[i]
            out.append({"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char)))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def hard_links_of(data: Mapping[str, object], path: Path) -> tuple[str, ...]:
    """The ``hard_links`` globs of a parsed policy file, each checked like a rule's path."""
    links = data.get("hard_links", [])
    if not isinstance(links, list) or not all(isinstance(g, str) for g in links):
        raise PolicyError(f"policy file {path}: hard_links is a list of path globs")
    for glob in links:
        problem = pattern_problem(glob)
        if problem is not None:
            raise PolicyError(f"policy file {path}: hard_links {glob!r} {problem}")
    return tuple(links)


def hard_link_allowed(relative: str) -> bool:
    """Whether the person's policy file lets the file tools open this multiply-linked file.

    Read from ``$TAO_POLICY`` or ``$TAO_HOME/policy.toml`` at the moment it is asked (a
    linked file is rare); a missing file allows nothing, an unreadable one too."""
    path = default_policy_path()
    if not path.is_file():
        return False
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
        globs = hard_links_of(data, path)
    except (OSError, tomllib.TOMLDecodeError, PolicyError):
        return False
    return any(path_covered(pattern, relative) for pattern in globs)
