"""Which MCP tools a person calls read-only: the ``[mcp]`` table of the policy file (SPEC S3).

An MCP server describes its own tools, and its ``readOnlyHint`` is only its word: a hostile
or careless server can call ``delete_everything`` read-only. So every MCP tool is an effect
(a person approves each call) unless the *user's* policy says otherwise:

    [mcp]
    read_only = ["notes:search", "notes:get_*", "wiki:*"]   # SERVER:TOOL, globs * and ?
    trust_hints = ["notes"]      # believe these servers' readOnlyHint (never the default)

``SERVER`` is the name the user gave the server (``tao run --mcp 'notes=python server.py'``,
``McpServer.stdio(..., name="notes")``) or the one tao made from its command; ``TOOL`` is the
tool's name as the server lists it. Matching is case-sensitive. A server's hints can still
make a tool *more* careful: one it calls destructive (``destructiveHint``) is never
read-only, whatever the entries say. A malformed entry or an unknown key is an error when
the file is read, never a silently ignored line.

This module reads names only; it knows no tool, so the MCP tools (below the policy) can
use its name pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from tao.approval.globs import PolicyError

#: What a server may be called in a policy: letters, digits, ``_``, ``.``, ``-``.
SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: A server part of an entry: a name, or a glob of one (``*``, ``?``).
_SERVER_GLOB = re.compile(r"[A-Za-z0-9_.*?-]{1,64}")
#: A tool part: what MCP tool names are made of (``/`` too), or a glob of one.
_TOOL_GLOB = re.compile(r"[A-Za-z0-9_./*?-]{1,128}")
#: The keys of the ``[mcp]`` table.
KEYS = ("read_only", "trust_hints")


@dataclass(frozen=True)
class McpRules:
    """The ``[mcp]`` table: the tools a person calls read-only, and the servers whose
    hints they believe. Empty (the default): every MCP tool asks."""

    #: ``(server glob, tool glob)`` pairs of ``read_only``.
    read_only: tuple[tuple[str, str], ...] = ()
    #: Server globs of ``trust_hints``.
    trust_hints: tuple[str, ...] = ()

    @classmethod
    def of(cls, read_only: Iterable[str] = (), trust_hints: Iterable[str] = ()) -> McpRules:
        """The rules written as in the file, from Python: ``McpRules.of(["notes:search"])``;
        an entry the file would refuse is a :class:`PolicyError` here too."""
        return _checked(
            {"read_only": list(read_only), "trust_hints": list(trust_hints)}, "McpRules"
        )

    def marks_read_only(self, server: str, tool: str) -> bool:
        """Whether an entry of ``read_only`` names tool ``tool`` of server ``server``."""
        return any(fnmatchcase(server, s) and fnmatchcase(tool, t) for s, t in self.read_only)

    def unmatched(self, names: Iterable[tuple[str, str]]) -> list[str]:
        """The ``read_only`` entries that name a server among ``names`` (``(server, tool)``
        pairs of a run) but none of its tools: a typo, or a tool's tao name written for
        the one its server lists."""
        pairs = list(names)
        return [
            f"{server}:{tool}"
            for server, tool in self.read_only
            if any(fnmatchcase(name, server) for name, _ in pairs)
            and not any(fnmatchcase(s, server) and fnmatchcase(t, tool) for s, t in pairs)
        ]

    def trusts_hints_of(self, server: str) -> bool:
        """Whether the person believes this server's ``readOnlyHint``."""
        return any(fnmatchcase(server, glob) for glob in self.trust_hints)


def rules_of(data: Mapping[str, object], path: Path) -> McpRules:
    """The ``[mcp]`` table of a parsed policy file, each entry checked (:class:`PolicyError`
    names the file, the entry and what it should look like)."""
    table = data.get("mcp", {})
    where = f"policy file {path}: [mcp]"
    if not isinstance(table, dict):
        raise PolicyError(f"{where} is a table (read_only = [...], trust_hints = [...])")
    return _checked(table, where)


def _checked(table: Mapping[str, object], where: str) -> McpRules:
    """The rules of an ``[mcp]`` table, or a :class:`PolicyError` that starts with ``where``."""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise PolicyError(
            f"{where} has unknown key(s) {', '.join(unknown)}; it takes {', '.join(KEYS)}"
        )
    read_only = tuple(_tool_entry(entry, where) for entry in _strings(table, "read_only", where))
    hints = _strings(table, "trust_hints", where)
    for entry in hints:
        if not _SERVER_GLOB.fullmatch(entry):
            raise PolicyError(
                f"{where} trust_hints entry {entry!r} is not a server name (letters, digits, "
                "'_', '.', '-', globs '*' and '?'; no ':', it names a whole server), "
                'e.g. trust_hints = ["notes"]'
            )
    return McpRules(read_only, hints)


def _strings(table: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PolicyError(f"{where} {key} is a list of strings")
    return tuple(value)


def _tool_entry(entry: str, where: str) -> tuple[str, str]:
    server, colon, tool = entry.partition(":")
    if colon and _SERVER_GLOB.fullmatch(server) and _TOOL_GLOB.fullmatch(tool):
        return server, tool
    raise PolicyError(
        f"{where} read_only entry {entry!r} is not SERVER:TOOL (a server name and a tool name, "
        "each letters, digits, '_', '.', '-', globs '*' and '?'; the tool may hold '/'), "
        'e.g. "notes:search" or "notes:get_*"'
    )
