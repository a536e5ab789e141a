"""An MCP server's tool as a tao :class:`~tao.tools.base.Tool` (SPEC T3, S1, S3).

Its effects are the person's call, not the server's: every MCP tool asks before each call
unless the policy's ``[mcp]`` table calls it read-only (:meth:`McpTool.judged`,
:mod:`tao.approval.mcp_rules`); the server's hints only ever make it more careful.

The server's JSON schema is the single source of truth, as a Python signature
is for local tools: native tool calling receives it unchanged, the text protocol
shows its property names, and every argument is checked against it *before*
anything is sent to the server (S1). The call itself goes through ``fn``, which
:class:`tao.tools.mcp.McpServer` binds to its connection.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from tao.approval.mcp_rules import McpRules
from tao.lookalikes import visible
from tao.state.jsontypes import JSON, JSONObject
from tao.tools.base import Effect, Tool

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as WireTool

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


class AnyArgs(BaseModel):
    """Placeholder ``params``: MCP tools validate against the server's JSON schema instead."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class Hints:
    """What the server says of a tool (MCP annotations): its word, never a permission."""

    #: ``readOnlyHint: true``: the server calls the tool read-only.
    read_only: bool = False
    #: ``destructiveHint: true``: the server says it may destroy something.
    destructive: bool = False


@dataclass(frozen=True)
class McpTool(Tool):
    """One tool of an MCP server; ``remote_name`` is its real name, ``name`` a safe one."""

    input_schema: JSONObject = field(default_factory=dict)
    remote_name: str = ""
    server_label: str = ""
    #: The server's name in a policy (``notes`` in ``read_only = ["notes:search"]``).
    server_name: str = ""
    hints: Hints = field(default_factory=Hints)
    #: Why a call asks though the server says otherwise, for the person deciding.
    note: str | None = None

    @property
    def policy_name(self) -> str:
        """How a policy names this tool: ``SERVER:TOOL``, the tool as the server lists it."""
        return f"{self.server_name}:{self.remote_name}"

    @property
    def approval_note(self) -> str | None:
        return self.note

    def judged(self, rules: McpRules) -> McpTool:
        """This tool with the effects a person's ``[mcp]`` rules give it (SPEC S3).

        Read-only only when an entry of ``read_only`` names it, or its server is in
        ``trust_hints`` and calls it read-only; a tool its server calls destructive is
        ``deletes`` whatever the rules say; anything else ``sends`` (a person approves each
        call). ``note`` says why a call asks when the server claimed less."""
        marked = rules.marks_read_only(self.server_name, self.remote_name)
        trusted = self.hints.read_only and rules.trusts_hints_of(self.server_name)
        note = None
        if self.hints.destructive:
            effects: tuple[Effect, ...] = ("deletes",)
            if marked or trusted:
                whose = "your policy calls" if marked else "the server calls"
                note = (
                    f"MCP tool: {whose} {self.policy_name} read-only, but the server says it "
                    "is destructive, so each call asks"
                )
        elif marked or trusted:
            effects = ("read",)
        else:
            effects = ("sends",)
            if self.hints.read_only:
                note = (
                    f"MCP tool: the server calls {self.policy_name} read-only; your policy "
                    f'does not (add "{self.policy_name}" to [mcp] read_only in your policy '
                    "file to let it run unasked)"
                )
        return replace(self, effects=effects, note=note)

    @property
    def schema(self) -> JSONObject:
        """The server's ``inputSchema`` (its texts cleaned, :func:`clean_schema`), as native
        tool calling sends it."""
        return self.input_schema

    @property
    def description_source(self) -> str:
        """The server wrote the description: the prompt fences it as data (SPEC S4)."""
        return f"mcp:{self.name}"

    def _properties(self) -> JSONObject:
        props = self.input_schema.get("properties")
        return props if isinstance(props, dict) else {}

    def _allows_extra(self) -> bool:
        return bool(self.input_schema.get("additionalProperties", not self._properties()))

    def bind(self, text: str, form: Literal["bracket", "call"] = "bracket") -> dict[str, object]:
        """Also accept a JSON object, ``tool[{"a": 1}]``, besides the bracket and call forms."""
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError:
                value = None
            if isinstance(value, dict) and (
                self._allows_extra() or set(value) <= set(self._properties())
            ):
                return value
        return super().bind(text, form)

    def validate(self, arguments: Mapping[str, object]) -> JSONObject:
        """Check arguments against the server's JSON schema before anything is sent.

        Strings are read as JSON where the schema wants a number, boolean, list or
        object, because ``add[5]`` arrives as text; unknown names are refused
        unless the schema allows extra properties, so a typo is not silently dropped.
        """
        import jsonschema  # no stubs: see pyproject's mypy overrides

        props = self._properties()
        unknown = sorted(set(arguments) - set(props))
        if unknown and not self._allows_extra():
            raise self.invalid(f"unknown argument(s) {', '.join(unknown)}")
        coerced = {key: _coerce(value, props.get(key)) for key, value in arguments.items()}
        validator_cls = jsonschema.validators.validator_for(self.input_schema)
        errors = sorted(
            validator_cls(self.input_schema).iter_errors(coerced), key=lambda e: list(e.path)
        )
        if errors:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors
            )
            raise self.invalid(problems)
        return self._json_object(coerced)

    def _json_object(self, values: Mapping[str, object]) -> JSONObject:
        """The checked arguments as JSON, what the wire carries; a non-JSON value is refused."""
        try:
            return {key: _json(value) for key, value in values.items()}
        except TypeError as error:
            raise self.invalid(str(error)) from None


def _json(value: object) -> JSON:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _json(item) for key, item in value.items()}
    raise TypeError(f"{value!r} is not a JSON value")


def _coerce(value: object, prop: JSON | None) -> object:
    """``"5"`` → ``5`` where the schema wants an integer, as pydantic's lax mode does for tools."""
    if not isinstance(value, str) or not isinstance(prop, dict):
        return value
    wanted = prop.get("type")
    kinds = [str(k) for k in wanted] if isinstance(wanted, list) else [str(wanted)]
    if "string" in kinds or not any(kind in _JSON_TYPES for kind in kinds):
        return value
    try:
        parsed = json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return value
    accepted = tuple(t for kind in kinds for t in _JSON_TYPES.get(kind, ()))
    return parsed if isinstance(parsed, accepted) else value


#: The longest description of one MCP tool the model is shown (the rest is cut, marked ``…``).
MAX_DESCRIPTION_CHARS = 1_000
#: All descriptions of one server's tools together: past it, a tool is described by its name.
MAX_SERVER_DESCRIPTION_CHARS = 16_000
#: The longest ``description`` or ``title`` inside a tool's input schema.
MAX_SCHEMA_TEXT_CHARS = 200
#: The longest input schema (as compact JSON, after its texts are cut) a tool may have.
MAX_SCHEMA_CHARS = 8_000
#: What an MCP tool's parameters may be called: the prompt lists them (``tool(a=..., b=...)``).
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.$-]{0,63}")


def plain_text(text: str, limit: int) -> str:
    """``text`` as one line of visible characters, at most ``limit`` long (SPEC S4).

    An MCP server writes its tools' descriptions, and they reach the system prompt:
    invisible characters (which could hide a fence's closing mark) are dropped, line
    breaks (which could start a fake ``Observation:`` or tool line) become spaces, and a
    long text is cut, so a server cannot fill the prompt."""
    line = " ".join(visible(text).split())
    return line if len(line) <= limit else line[: max(limit - 1, 0)].rstrip() + "…"


def clean_schema(schema: JSON) -> JSON:
    """``schema`` with every ``description`` and ``title`` text made :func:`plain_text`."""
    if isinstance(schema, list):
        return [clean_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: plain_text(value, MAX_SCHEMA_TEXT_CHARS)
        if key in ("description", "title") and isinstance(value, str)
        else clean_schema(value)
        for key, value in schema.items()
    }


def schema_problem(schema: JSONObject) -> str | None:
    """Why a tool's (cleaned) input schema cannot be shown to the model, or ``None``."""
    size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    if size > MAX_SCHEMA_CHARS:
        return f"its input schema is {size} characters long (at most {MAX_SCHEMA_CHARS})"
    props = schema.get("properties")
    for name in props if isinstance(props, dict) else ():
        if not PARAM_NAME.fullmatch(name):
            return (
                f"its parameter {ascii(name)[:80]} is not a plain ASCII name (letters, digits, "
                "'_', '.', '$', '-'; at most 64)"
            )
    return None


def safe_name(name: str) -> str:
    """A name the text protocol can parse: ``get-weather`` → ``get_weather``, ``2x`` → ``t_2x``."""
    cleaned = re.sub(r"\W", "_", name)
    return cleaned if cleaned.isidentifier() else f"t_{cleaned}"


def hints_of(tool: WireTool) -> Hints:
    """The server's annotations of ``tool`` that bear on its effects (only ``true`` counts)."""
    hints = tool.annotations
    if hints is None:
        return Hints()
    return Hints(hints.read_only_hint is True, hints.destructive_hint is True)


#: How many tool names the start-up notice lists before it counts the rest.
_NOTICE_NAMES = 8


def hints_notice(tools: Iterable[Tool], policy_file: str) -> str | None:
    """One line for the start of a run when the person's policy overrules what servers say
    of their tools: those called read-only that will ask at each call (SPEC S3), so the person
    is not surprised, and the entry that would let them run unasked; ``None``: nothing to say.
    A tool its server also calls destructive is left out: no entry makes it read-only."""
    asked = [
        t.policy_name
        for t in tools
        if isinstance(t, McpTool) and t.hints.read_only and not (t.hints.destructive or t.read_only)
    ]
    if not asked:
        return None
    shown = ", ".join(asked[:_NOTICE_NAMES])
    more = f" and {len(asked) - _NOTICE_NAMES} more" if len(asked) > _NOTICE_NAMES else ""
    server = asked[0].split(":", 1)[0]
    return (
        f"tao: MCP servers call {shown}{more} read-only; your policy does not, so each call "
        f'asks. To let them run unasked, add [mcp] read_only = ["{asked[0]}"] (globs: '
        f'"{server}:*") or trust_hints = ["{server}"] to {policy_file}'
    )


def unmatched_notice(tools: Iterable[Tool], rules: McpRules) -> str | None:
    """One line for the start of a run when a ``read_only`` entry names a server of this run
    but none of its tools (``notes:serach``): a typo would otherwise only show as a prompt."""
    names = [(t.server_name, t.remote_name) for t in tools if isinstance(t, McpTool)]
    unmatched = rules.unmatched(names)
    if not unmatched:
        return None
    return (
        f"tao: your policy's [mcp] read_only {', '.join(unmatched[:_NOTICE_NAMES])} "
        "names no tool of this run's servers (a tool is named as its server lists it)"
    )


def volatile_of(tool: WireTool) -> bool:
    """Whether a repeated call may say something new: MCP's ``openWorldHint``, which
    defaults to true (the tool reaches a world that changes on its own)."""
    hints = tool.annotations
    return hints is None or hints.open_world_hint is not False


def result_text(result: CallToolResult) -> str:
    """Join the text content; other content becomes a short placeholder the model can read."""
    from mcp.types import EmbeddedResource, ImageContent, ResourceLink, TextContent

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image: {block.mime_type}, not shown]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            text = getattr(block.resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource: {block.resource.uri}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'content')}: not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)
