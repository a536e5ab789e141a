"""Pre-approved calls (SPEC S3): rules a person wrote, never the model or a tool.

A policy is a TOML file *outside* the project the agent works in — by default
``$TAO_HOME/policy.toml``, or the file ``$TAO_POLICY`` names — so no tool the
agent can call may write it. A policy file inside a project the tools work in
is refused (:class:`ProjectPolicyError`) unless the person says they wrote it
(``tao run --trust-project-policy``, ``TAO_TRUST_PROJECT_POLICY=1``,
``Agent(trust_project_policy=True)``): a repository must not grant itself
permissions. Each rule names a tool and, optionally, a glob per argument:

    [[allow]]
    tool = "write_file"
    path = "out/**"          # a glob on the *resolved*, project-relative path

A call that matches a rule runs without asking; anything else with side effects
still needs a person's yes.

Rules match what the call acts on, never the text the model wrote (SPEC S6):
for an argument the tool declares a path (``Tool.path_params``), the value is
resolved against the tool's project (symlinks, ``..``) and the glob is matched
on the project-relative POSIX path, so ``out/../tests/test_x.py`` and, with
``out`` a symlink to the project, ``out/test_x.py`` are *not* covered by
``out/**``. Path globs (see :func:`path_covered`):

- ``src``, ``src/`` and ``src/**`` all mean the folder ``src`` and everything
  under it (a rule naming a file names that file); ``src_evil/x`` is not under ``src``;
- ``*`` and ``?`` stay inside one folder and ``**`` spans folders; a pattern
  whose last part holds a wildcard (``*.py``, ``src/*``) covers only the paths
  it spells, not what is inside a folder it happens to match;
- matching is case-sensitive, on the resolved path; a pattern that leaves the
  project (``..``, absolute, ``~``, backslashes) is an error in the policy file.

Other arguments are matched as text (``fnmatch``), except values that look like
a path escape (``..``, absolute, ``~``, backslashes), which never match.

An MCP tool is an effect whatever its server says, unless the ``[mcp]`` table calls it
read-only (``read_only = ["notes:search"]``, :mod:`tao.approval.mcp_rules`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from tao.approval.globs import (
    PATH_ESCAPE,
    PolicyError,
    hard_links_of,
    path_covered,
    pattern_problem,
)
from tao.approval.mcp_rules import McpRules, rules_of
from tao.errors import ToolError
from tao.paths import TRUST_PROJECT_POLICY_ENV, default_policy_path
from tao.state.jsontypes import JSONObject
from tao.tools.base import Tool, normal_name
from tao.tools.paths import resolve_path


class ProjectPolicyError(PolicyError):
    """The policy file lies inside the project: the project could have written it."""


@dataclass(frozen=True)
class Rule:
    """One ``[[allow]]`` entry: a tool name and a glob per argument."""

    tool: str
    arguments: dict[str, str] = field(default_factory=dict)

    def allows(self, tool: Tool, arguments: JSONObject) -> bool:
        """Whether this rule covers the call (the tool and its validated arguments)."""
        if normal_name(tool.name) != normal_name(self.tool):
            return False
        return all(
            name in arguments and _matches(tool, name, arguments[name], pattern)
            for name, pattern in self.arguments.items()
        )


def _matches(tool: Tool, name: str, value: object, pattern: str) -> bool:
    if name in tool.path_params:
        if tool.root is None or not isinstance(value, str):
            return False
        try:
            resolved = resolve_path(tool.root, value)
        except ToolError:  # outside the project: no rule covers it
            return False
        return path_covered(pattern, resolved.relative)
    text = str(value)
    if PATH_ESCAPE.search(text):
        return False
    return fnmatchcase(text, pattern)


#: Values no text rule may cover: they could name something outside what the rule meant.
@dataclass(frozen=True)
class Policy:
    """The rules in force for a run; an empty policy pre-approves nothing."""

    rules: tuple[Rule, ...] = ()
    source: Path | None = None
    #: Path globs of multiply-linked files the file tools may open (``hard_links = [...]``).
    hard_links: tuple[str, ...] = ()
    #: The ``[mcp]`` table: which MCP tools a person calls read-only (:mod:`.mcp_rules`).
    mcp: McpRules = field(default_factory=McpRules)

    def hard_link_allowed(self, relative: str) -> bool:
        """Whether a person allowed the file tools to open this multiply-linked file."""
        return any(path_covered(pattern, relative) for pattern in self.hard_links)

    def allows(self, tool: Tool, arguments: JSONObject) -> Rule | None:
        """The first rule that pre-approves this exact call, if any.

        ``tool`` is the :class:`Tool` itself, so the policy knows which arguments
        are paths and the project they resolve in; ``arguments`` are the validated
        ones (``Ready.arguments``).
        """
        return next((rule for rule in self.rules if rule.allows(tool, arguments)), None)

    def may_pause(self, tool: Tool) -> bool:
        """Whether a call of ``tool`` may wait for a person: it has side effects and no
        rule pre-approves every call of it (a rule with no argument globs). A read-only
        tool with a gate (``run_tests``) may pause too (SPEC S11)."""
        if tool.read_only and tool.gate is None:
            return False
        name = normal_name(tool.name)
        return not any(normal_name(r.tool) == name and not r.arguments for r in self.rules)

    @classmethod
    def load(cls, path: Path) -> Policy:
        """Read a policy file; a malformed one is an error, never silently "allow nothing"."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PolicyError(f"policy file not found: {path}") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise PolicyError(f"cannot read policy file {path}: {error}") from None
        unknown = set(data) - {"allow", "hard_links", "mcp"}
        if unknown:
            raise PolicyError(
                f"policy file {path}: unknown section(s) {', '.join(sorted(unknown))}"
            )
        rules = []
        for number, entry in enumerate(data.get("allow", []), 1):
            if not isinstance(entry, dict) or not isinstance(entry.get("tool"), str):
                raise PolicyError(f'policy file {path}: rule {number} needs tool = "name"')
            patterns = {k: v for k, v in entry.items() if k != "tool"}
            if not all(isinstance(v, str) for v in patterns.values()):
                raise PolicyError(
                    f"policy file {path}: rule {number}: argument patterns are strings"
                )
            for name, pattern in patterns.items():
                problem = pattern_problem(pattern)
                if problem is not None:
                    raise PolicyError(
                        f"policy file {path}: rule {number}: {name} = {pattern!r} {problem}"
                    )
            rules.append(Rule(entry["tool"], patterns))
        return cls(tuple(rules), path, hard_links_of(data, path), rules_of(data, path))

    @classmethod
    def default(cls) -> Policy:
        """``$TAO_POLICY`` or ``$TAO_HOME/policy.toml`` when it exists, else no pre-approvals."""
        path = default_policy_path()
        return cls.load(path) if path.is_file() else cls()

    def outside(self, projects: Iterable[Path], *, trust: bool | None = None) -> Policy:
        """This policy, if its file lies outside every project folder the tools work in.

        A file inside a project could have been written by the project's authors (or
        by an earlier run's approved write), so it would let a repository grant
        itself permissions: :class:`ProjectPolicyError` names the file and the way
        to say a person wrote it. ``trust`` (default: ``$TAO_TRUST_PROJECT_POLICY``)
        accepts it.
        """
        if self.source is None:
            return self
        if trust is None:
            trust = os.environ.get(TRUST_PROJECT_POLICY_ENV, "").strip().lower() in _YES
        if trust:
            return self
        for project in projects:
            if _inside(self.source, project):
                raise ProjectPolicyError(
                    f"the policy file {self.source} is inside the project {project}: a project "
                    "must not pre-approve its own calls. Move it outside the project "
                    "(e.g. $TAO_HOME/policy.toml), or, if you wrote it yourself, pass "
                    f"--trust-project-policy (or set {TRUST_PROJECT_POLICY_ENV}=1)"
                )
        return self


_YES = frozenset({"1", "true", "yes", "on"})


def _inside(file: Path, folder: Path) -> bool:
    """Whether ``file`` lies in ``folder``: links followed, and folders compared as
    objects (device, inode), so another spelling (case, a link to the project) is caught."""
    try:
        target = os.stat(folder)
        real = Path(os.path.realpath(file.expanduser().absolute()))
    except (OSError, ValueError):
        return False
    for parent in real.parents:
        try:
            if os.path.samestat(os.stat(parent), target):
                return True
        except OSError:
            continue
    return False
