"""Pre-approved calls (SPEC S3): rules a person wrote, never the model or a tool.

A policy is a TOML file *outside* the project the agent works in — by default
``$TAO_HOME/policy.toml``, or the file ``$TAO_POLICY`` names — so no tool the
agent can call may write it. Each rule names a tool and, optionally, a glob per argument:

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
``out/**``. In globs ``*`` and ``?`` stay inside one folder and ``**`` spans
folders. Other arguments are matched as text (``fnmatch``), except values that
look like a path escape (``..``, absolute, ``~``, backslashes), which never match.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

from tao.errors import ConfigError, ToolError
from tao.paths import default_policy_path
from tao.state.jsontypes import JSONObject
from tao.tools.base import Tool, normal_name
from tao.tools.paths import resolve_path


class PolicyError(ConfigError):
    """The policy file cannot be read or holds a rule that makes no sense (a person's file)."""


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
        return _glob(pattern).fullmatch(resolved.relative) is not None
    text = str(value)
    if _PATH_ESCAPE.search(text):
        return False
    return fnmatchcase(text, pattern)


#: Values no text rule may cover: they could name something outside what the rule meant.
_PATH_ESCAPE = re.compile(r"(?:^|[/\\])\.\.(?:[/\\]|$)|^[/\\~]|\\|^[A-Za-z]:")


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


@dataclass(frozen=True)
class Policy:
    """The rules in force for a run; an empty policy pre-approves nothing."""

    rules: tuple[Rule, ...] = ()
    source: Path | None = None

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
        unknown = set(data) - {"allow"}
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
            rules.append(Rule(entry["tool"], patterns))
        return cls(tuple(rules), path)

    @classmethod
    def default(cls) -> Policy:
        """``$TAO_POLICY`` or ``$TAO_HOME/policy.toml`` when it exists, else no pre-approvals."""
        path = default_policy_path()
        return cls.load(path) if path.is_file() else cls()
