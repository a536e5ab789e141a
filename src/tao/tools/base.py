"""Typed tools from plain functions (SPEC T1).

The function's name, docstring and type hints are the single source of truth:
they become the description the model reads, the JSON schema native tool
calling sends, and the pydantic model that validates arguments *before* the
function runs. A validation failure, a refusal (:class:`tao.ToolError`) or any
exception becomes an Observation; the loop never sees a raise.

    @tool
    def sok_arenden(status: str, aldre_an_dagar: int = 0) -> str:
        \"\"\"Search support tickets by status and minimum age in days.\"\"\"
        ...

    sok_arenden.run_text('status="öppen", aldre_an_dagar=7', form="call")
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TypedDict, Unpack, overload

import docstring_parser
from pydantic import BaseModel, ValidationError

from tao.errors import ToolDefinitionError, ToolError
from tao.lookalikes import skeleton
from tao.state.jsontypes import JSON, JSONObject
from tao.tools.limits import run_coroutine
from tao.tools.params import as_given, params_model
from tao.tools.paths import resolve_path

#: The effects a tool may declare; anything but ``read`` needs a person's approval (SPEC S3).
Effect = Literal["read", "writes", "deletes", "sends", "pays"]
Keep = Literal["head", "tail"]
#: Shows a person what a call would do before they approve it (``write_file`` shows a diff).
Preview = Callable[[JSONObject], str]


class Gate(Protocol):
    """Decides per call whether a tool with no declared effect still needs a person (SPEC S11).

    ``run_tests`` reads and writes nothing itself, but it executes the project's code: a
    call is harmless while that code is what a person approved, and an effect once the
    model changed it. The loop records :meth:`snapshot` when a run starts and
    :meth:`approved` whenever a person (or a policy rule) approves a call, in the run's
    checkpoint, so the decision survives a resume in another process.
    """

    def snapshot(self) -> JSONObject:
        """The state a call would act on, now, as the run records it."""
        ...

    def reason(self, arguments: JSONObject, approved: JSON | None) -> str | None:
        """Why this call needs a person given the state ``approved`` last (``None``: none
        recorded); ``None`` when it may run unasked."""
        ...

    def approved(self, shown: str | None) -> JSONObject | None:
        """The state now, if it is the one a person approved on seeing the preview
        ``shown``; ``None`` otherwise (the recorded state is then left as it was)."""
        ...


#: A Python function a tool wraps; its parameters are whatever its type hints say.
ToolFunction = Callable[..., object]

DEFAULT_MAX_CHARS = 8_000
#: Seconds one call may take before the run abandons it (``act.execute``); ``None``: no limit.
DEFAULT_TIMEOUT_S = 30.0

_NAME_SEPARATORS = re.compile(r"[\s_\-]+")


def normal_name(name: str) -> str:
    """The one spelling in which tool names are compared (issue 12, item 9).

    Models write ``Read_File``, ``read-file`` or ``read file`` for ``read_file``;
    an MCP server may offer ``Read_File`` beside the built-in. Comparing every
    name in this one form (NFKC, casefold, runs of whitespace, ``-`` and ``_``
    as one ``_``) lets lookup be exact, and lets the registry refuse two tools
    the model could not tell apart.
    """
    folded = unicodedata.normalize("NFKC", name).strip().casefold()
    return _NAME_SEPARATORS.sub("_", folded)


def name_keys(name: str) -> set[str]:
    """The forms two names are compared in: the normal name, and the UTS #39 skeleton
    taken before and after it (a skeleton keeps case: ``I`` looks like ``l``, ``i`` not)."""
    normal = normal_name(name)
    return {normal, normal_name(skeleton(name)), normal_name(skeleton(normal))}


class ArgumentError(ToolError):
    """The model's argument text does not fit the tool's parameters."""


class ToolOptions(TypedDict, total=False):
    """What :func:`tool` and :func:`make_tool` accept besides the function; all optional."""

    #: The name the model calls; default: the function's name.
    name: str | None
    #: What the model reads; default: the docstring.
    description: str | None
    effects: tuple[Effect, ...] | Effect
    max_chars: int
    keep: Keep
    trusted_output: bool
    #: Two identical calls may return different results (a pager, a job's status, a clock).
    volatile: bool
    preview: Preview | None
    #: Per-call time limit in seconds; ``None`` for none (a person answering, say).
    timeout_s: float | None
    #: Parameters that name a file or folder of the project, resolved once in :meth:`validate`.
    path_params: tuple[str, ...]
    #: The project folder those paths are resolved against (required with ``path_params``).
    project: Path | None
    #: Decides per call whether a read-only tool still needs a person (``run_tests``).
    gate: Gate | None


@dataclass(frozen=True)
class Tool:
    """A callable the model may ask for, with everything needed to describe and guard it."""

    name: str
    description: str
    fn: ToolFunction
    params: type[BaseModel]
    effects: tuple[Effect, ...] = ("read",)
    #: Observations longer than this are cut, and the cut is stated (SPEC L6).
    max_chars: int = DEFAULT_MAX_CHARS
    #: Which end of a long output matters: a test log's tail, a file's head.
    keep: Keep = "head"
    #: Output computed by the tool itself (a calculator), not read from the world: it is
    #: not fenced as untrusted data (SPEC S4). Everything else is fenced.
    trusted_output: bool = False
    #: Calling it again with the same arguments may return something new: a cursor (the
    #: wiki's ``lookup`` gives the next match), a poll (a job's status), a clock. A repeat of
    #: such a call is run again, and counts as a repeat (L12) only when it returns what it
    #: returned the time before; any other read-only repeat is answered from the first call.
    volatile: bool = False
    param_names: tuple[str, ...] = field(default=())
    #: What a call would do, for the person approving it (``write_file`` shows a diff).
    preview: Preview | None = None
    #: How long one call may run before it is abandoned (SPEC S6, issue 12 item 5).
    timeout_s: float | None = DEFAULT_TIMEOUT_S
    #: Arguments that are project paths: validation replaces each by its resolved,
    #: project-relative POSIX form, so policies, previews and the act see one object.
    path_params: tuple[str, ...] = ()
    #: The resolved project folder of ``path_params``.
    root: Path | None = None
    #: Per-call approval for a tool whose calls are harmless or not depending on the world
    #: (``run_tests`` runs the project's code): see :class:`Gate`.
    gate: Gate | None = None

    @property
    def description_source(self) -> str | None:
        """Where an untrusted description came from (an MCP server's tool), or ``None``
        for one the program wrote: the prompt fences the first as data (SPEC S4)."""
        return None

    @property
    def read_only(self) -> bool:
        return self.effects == ("read",)

    @property
    def approval_note(self) -> str | None:
        """What a person deciding on a call should know of the tool's effects beyond the
        list (an MCP tool its server calls read-only and the policy does not); shown as the
        pending call's ``reason``."""
        return None

    @property
    def schema(self) -> JSONObject:
        """JSON schema of the arguments, as native tool calling wants it."""
        schema: JSONObject = self.params.model_json_schema()
        schema.pop("title", None)
        properties = schema.get("properties")
        for prop in properties.values() if isinstance(properties, dict) else ():
            if isinstance(prop, dict):
                prop.pop("title", None)
        return schema

    @property
    def signature(self) -> str:
        """How the prompt shows the tool: ``calculator[expression]`` or ``f(a, b=0)``."""
        return f"{self.name}[{', '.join(self.param_names)}]"

    def bind(self, text: str, form: Literal["bracket", "call"] = "bracket") -> dict[str, object]:
        """Turn the argument text of an Action into keyword arguments (unvalidated).

        The values are Python literals as written (``f((1, 2))`` binds a tuple);
        :meth:`validate` decides whether they fit.
        """
        named = _names_first(text, self.param_names)
        if form == "call" or named or (len(self.param_names) > 1 and _looks_like_kwargs(text)):
            parsed = _parse_call_arguments(text)
            if parsed is not None:
                args, kwargs = parsed
                return self._merge(args, kwargs)
            if named:  # ``path=notes.txt``: values as written, bound by parameter name
                return _split_named(text, self.param_names)
        if not self.param_names:
            if text.strip():
                raise ArgumentError(f"{self.name} takes no argument")
            return {}
        return {self._positional(text): _unquote(text.strip())}

    def _positional(self, text: str = "") -> str:
        """The one parameter plain text binds to; a tool that needs several refuses, showing
        the call to write (with the model's own values where its text splits into as many
        pieces), rather than guess (issue 13: text binds only one parameter)."""
        if len(self.param_names) == 1:
            return self.param_names[0]
        required = self.required
        if len(required) == 1:
            return required[0]
        raise ArgumentError(f"{self.name} needs {_and(required)}; {self.how_to_call(text)}")

    @property
    def required(self) -> list[str]:
        """The parameters without a default, in order."""
        listed = self.schema.get("required")
        return [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []

    def how_to_call(self, text: str = "") -> str:
        """``call it as write_file[path="count.txt", content="3"]``: the form that binds, with
        the values of ``text`` when it holds one per required parameter (``count.txt, 3``)."""
        names = self.required or list(self.param_names)
        pieces = [piece.strip() for piece in text.split(",", len(names) - 1)] if text else []
        if len(pieces) != len(names) or not all(pieces) or "=" in text:
            pieces = ["…"] * len(names)
        shown = ", ".join(
            f"{name}={json.dumps(_unquote(piece), ensure_ascii=False)}"
            for name, piece in zip(names, pieces, strict=True)
        )
        return f"call it as {self.name}[{shown}]"

    def bind_object(self, value: Mapping[str, JSON]) -> dict[str, object]:
        """Bind a JSON object the model wrote (``calculator[{"expression": "6*7"}]``, a JSON
        blob, a ``<tool_call>``): by name when its keys are parameters; as the one argument
        of a one-parameter tool otherwise."""
        if not value and not self.param_names:
            return {}
        if value and set(value) <= set(self.param_names):
            return dict(value)
        if len(self.param_names) == 1:
            return {self.param_names[0]: dict(value)}
        unknown = ", ".join(sorted(set(value) - set(self.param_names))) or "none"
        raise ArgumentError(
            f"unknown argument(s) {unknown} for {self.name}({', '.join(self.param_names)})"
        )

    def _merge(self, args: list[object], kwargs: dict[str, object]) -> dict[str, object]:
        if len(args) > len(self.param_names):
            raise ArgumentError(
                f"{self.name} takes {len(self.param_names)} argument(s), got {len(args)}"
            )
        bound = dict(zip(self.param_names, args, strict=False))
        for key, value in kwargs.items():
            if key in bound:
                raise ArgumentError(f"{self.name} got {key!r} twice")
            bound[key] = value
        return bound

    def validate(self, arguments: Mapping[str, object]) -> JSONObject:
        """Check arguments against the signature; raise :class:`ArgumentError` with why.

        The result holds the values as the parameters' types made them (``"5"`` → ``5``);
        for the JSON-shaped parameters tools declare, that is JSON.
        """
        values = as_given(self.params, arguments)
        if values is None:
            try:
                model = self.params.model_validate(arguments)
            except ValidationError as error:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                    for e in error.errors()
                )
                raise self.invalid(problems) from None
            values = {name: getattr(model, name) for name in self.param_names}
        for name in self.path_params:
            value = values.get(name)
            if isinstance(value, str) and self.root is not None:
                values[name] = resolve_path(self.root, value).relative
        return values

    def confirm(self, arguments: JSONObject, approved_preview: str | None) -> None:
        """Refuse an approved call whose preview changed since the person saw it (SPEC S6, S7).

        A person approves what the preview showed (a diff, a file's size and
        fingerprint). The driver calls this right before running an approved
        call; if the world changed in between, running it would act on
        something nobody approved.
        """
        if self.preview is None or approved_preview is None:
            return
        try:
            now = self.preview(arguments)
        except ToolError as error:
            raise ToolError(f"{self.name} was not run: {error}") from None
        if now != approved_preview:
            raise ToolError(
                f"{self.name} was not run: what it acts on changed since it was approved "
                f"(approved: {_first_line(approved_preview)}; now: {_first_line(now)})"
            )

    def invalid(self, problems: str) -> ArgumentError:
        """The error for arguments that do not fit, naming the tool and its parameters, and
        the call that would bind. A tool of one parameter shows it too: the embedded model
        wrote ``read_file[path="config.ini", content="port"]`` twice in a row when the error
        named only the extra input (issue 30, bench/file_tasks.py ``setting``)."""
        hint = f"; {self.how_to_call()}" if self.param_names else ""
        return ArgumentError(
            f"invalid arguments for {self.name}({', '.join(self.param_names)}): {problems}{hint}"
        )

    def __call__(self, *args: object, **kwargs: object) -> object:
        """Call the underlying function directly, as plain Python."""
        return self.fn(*args, **kwargs)

    def invoke(self, arguments: Mapping[str, object]) -> str:
        """Validate and run; the result is text for the Observation. May raise."""
        return self.call(self.validate(arguments))

    def call(self, validated: JSONObject) -> str:
        """Run with arguments :meth:`validate` already returned (the loop validates first);
        an ``async def`` tool is run to its end on tao's loop thread (``run_coroutine``)."""
        result = self.fn(**validated)
        if not isinstance(result, str) and inspect.isawaitable(result):
            result = run_coroutine(result)
        return result if isinstance(result, str) else to_text(result)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(empty)"
    return line if len(line) <= 120 else line[:117] + "..."


def to_text(value: object) -> str:
    """A tool's return value as the Observation's text."""
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _looks_like_kwargs(text: str) -> bool:
    head = text.split(",", 1)[0]
    return "=" in head and head.split("=", 1)[0].strip().isidentifier()


def _names_first(text: str, names: tuple[str, ...]) -> bool:
    """Whether ``text`` starts ``name=`` (not ``==``) for one of the parameter ``names``: then
    it names its arguments (``read_file[path="notes.txt"]``). Any other ``=`` is a value's
    own (``calculator[x=2+3]``, a search for ``a=b``)."""
    found = _NAME_FIRST.match(text)
    return found is not None and found["name"] in names


def _split_named(text: str, names: tuple[str, ...]) -> dict[str, object]:
    """``a=x, b=y z`` bound by name, values as written (quotes around one taken off): each
    value runs to the next ``, name=`` of a parameter, so it may hold commas and ``=``. One
    pass of one regular expression: linear in the text (SPEC L14)."""
    marks = [m for m in _NAMED.finditer(text) if m["name"] in names]
    bound: dict[str, object] = {}
    for mark, after in zip(marks, [*marks[1:], None], strict=True):
        name = mark["name"]
        if name in bound:
            raise ArgumentError(f"{name!r} given twice")
        end = after.start() if after is not None else len(text)
        bound[name] = _unquote(text[mark.end() : end].strip())
    return bound


_NAME_FIRST = re.compile(r"\s*(?P<name>[^\W\d]\w*)\s*=(?!=)")
_NAMED = re.compile(r"(?:^|,)\s*(?P<name>[^\W\d]\w*)\s*=(?!=)")


def _and(names: list[str]) -> str:
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _parse_call_arguments(text: str) -> tuple[list[object], dict[str, object]] | None:
    """Parse ``a, key=value`` as Python literals; ``None`` if it is not that shape."""
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(call, ast.Call):
        return None
    try:
        args: list[object] = [ast.literal_eval(node) for node in call.args]
        kwargs: dict[str, object] = {
            kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg
        }
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    if any(kw.arg is None for kw in call.keywords):
        return None
    return args, kwargs


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def make_tool(fn: ToolFunction, **options: Unpack[ToolOptions]) -> Tool:
    """Build a :class:`Tool` from a typed function; see :func:`tool` for the decorator."""
    if isinstance(fn, Tool):
        return fn
    tool_name: str = options.get("name") or str(getattr(fn, "__name__", ""))
    if not tool_name.isidentifier():
        raise ToolDefinitionError(f"tool name {tool_name!r} is not an identifier")
    path_params = tuple(options.get("path_params", ()))
    project = options.get("project")
    if path_params and project is None:
        raise ToolDefinitionError(f"{tool_name}: path_params need the project folder")
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    summary = " ".join(p for p in (doc.short_description, doc.long_description) if p)
    params, names = params_model(fn, tool_name, doc)
    if not set(path_params) <= set(names):
        raise ToolDefinitionError(f"{tool_name}: path_params {path_params} are not parameters")
    effects = options.get("effects", ("read",))
    return Tool(
        name=tool_name,
        description=options.get("description") or summary or tool_name,
        fn=fn,
        params=params,
        effects=(effects,) if isinstance(effects, str) else tuple(effects),
        max_chars=options.get("max_chars", DEFAULT_MAX_CHARS),
        keep=options.get("keep", "head"),
        param_names=names,
        trusted_output=options.get("trusted_output", False),
        volatile=options.get("volatile", False),
        preview=options.get("preview"),
        timeout_s=options.get("timeout_s", DEFAULT_TIMEOUT_S),
        path_params=path_params,
        root=None if project is None else Path(project).resolve(),
        gate=options.get("gate"),
    )


@overload
def tool(fn: ToolFunction, /) -> Tool: ...
@overload
def tool(**options: Unpack[ToolOptions]) -> Callable[[ToolFunction], Tool]: ...
def tool(
    fn: ToolFunction | None = None, /, **options: Unpack[ToolOptions]
) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a typed, documented function a tool, bare (``@tool``) or configured.

    @tool(max_chars=2_000, keep="tail")
    def run_checks(path: str) -> str:
        \"\"\"Run the linters on one file.\"\"\"
    """

    def wrap(f: ToolFunction) -> Tool:
        return make_tool(f, **options)

    return wrap(fn) if fn is not None else wrap


def cut(text: str, max_chars: int, keep: Keep, total: int | None = None) -> str:
    """Bound an observation and say so, so the model knows it saw only part (SPEC L6).

    ``total``: the length of the whole output when ``text`` is already only its kept end
    (:func:`tao.redact.kept.redact_kept`), so the note counts what the tool returned."""
    if total is None:
        if len(text) <= max_chars:
            return text
        total = len(text)
    shown = min(max_chars, len(text))
    if keep == "tail":
        return (
            f"[output cut: showing the last {shown:,} of {total:,} characters]\n"
            + text[len(text) - shown :]
        )
    return text[:shown] + f"\n[output cut: showing the first {shown:,} of {total:,} characters]"
