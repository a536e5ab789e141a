"""Pre-approved calls (SPEC S3): rules a person wrote, never the model or a tool.

A policy is a TOML file *outside* the project the agent works in — by default
``$TAO_HOME/policy.toml``, or ``--policy FILE`` — so no tool the agent can call
may write it. Each rule names a tool and, optionally, a glob per argument:

    [[allow]]
    tool = "write_file"
    path = "out/**"          # fnmatch on the "path" argument

A call that matches a rule runs without asking; anything else with side effects
still needs a person's yes.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from tao.errors import ConfigError
from tao.paths import default_policy_path


class PolicyError(ConfigError):
    """The policy file cannot be read or holds a rule that makes no sense (a person's file)."""


@dataclass(frozen=True)
class Rule:
    tool: str
    arguments: dict[str, str] = field(default_factory=dict)

    def allows(self, tool: str, arguments: Mapping[str, object]) -> bool:
        if tool != self.tool:
            return False
        return all(
            name in arguments and fnmatchcase(str(arguments[name]), pattern)
            for name, pattern in self.arguments.items()
        )


@dataclass(frozen=True)
class Policy:
    """The rules in force for a run; an empty policy pre-approves nothing."""

    rules: tuple[Rule, ...] = ()
    source: Path | None = None

    def allows(self, tool: str, arguments: Mapping[str, object]) -> Rule | None:
        """The first rule that pre-approves this exact call, if any."""
        return next((rule for rule in self.rules if rule.allows(tool, arguments)), None)

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
