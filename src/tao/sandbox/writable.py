"""Which project folders a sandboxed child may write: those a person's policy opens (SPEC S3, S10).

The project is read-only for ``run_tests`` unless the policy already lets the model
write somewhere without asking; then the tests may write there too, and nowhere else
(issue 26 item 1). A bind mount opens a whole folder, so only rules that open a whole
folder count:

    [[allow]]
    tool = "write_file"
    path = "out/**"        # out/ becomes writable for the tests ("out/" reads the same)

    [[allow]]
    tool = "write_file"    # no path glob: every write is pre-approved, the whole project

A file glob (``out/*.txt``, ``**/*.md``), a rule that also constrains ``content``, a
folder that does not exist, lies outside the project, or is reached through a symlink
(``out`` -> ``..``; the policy itself matches resolved paths, so it never covered that)
opens nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from tao.approval.policy import Policy
from tao.tools.base import normal_name

#: The tools whose pre-approved writes open a folder to the tests.
WRITE_TOOLS = frozenset({"write_file"})
_WILDCARDS = frozenset("*?[]{}")


def _folder_of(pattern: str) -> str | None:
    """The project-relative folder a whole-folder glob names (``""`` for the project),
    or ``None`` when the glob is narrower than a folder or not project-relative."""
    stripped = pattern.strip()
    for suffix in ("/**", "/"):
        if stripped.endswith(suffix):
            stripped = stripped.removesuffix(suffix)
            break
    else:
        return "" if stripped == "**" else None
    if not stripped or _WILDCARDS & set(stripped) or "\\" in stripped:
        return None
    parts = stripped.split("/")
    if stripped.startswith(("/", "~")) or any(part in ("", ".", "..") for part in parts):
        return None
    return stripped


def writable_folders(policy: Policy, project: Path) -> tuple[Path, ...]:
    """The folders inside ``project`` that ``policy`` lets the model write without asking,
    resolved, each one a real folder reached without a symlink (see the module docstring)."""
    root = Path(os.path.realpath(project))
    found: set[Path] = set()
    for rule in policy.rules:
        if normal_name(rule.tool) not in WRITE_TOOLS or set(rule.arguments) - {"path"}:
            continue
        relative = _folder_of(rule.arguments["path"]) if "path" in rule.arguments else ""
        if relative is None:
            continue
        folder = root / relative if relative else root
        if Path(os.path.realpath(folder)) == folder and folder.is_dir():
            found.add(folder)
    # a folder inside another one already writable adds nothing
    kept = [f for f in found if not any(o != f and o in f.parents for o in found)]
    return tuple(sorted(kept))
