"""Reading a model's reply in the text protocol (SPEC L2, L4, L7, L9, L10, L11, L14).

``parse_reply`` is total: for *any* string it returns an :class:`Action`, a
:class:`FinalAnswer` or a :class:`ParseFailure`, never an exception. The loop
only ever sees those three shapes, whichever dialect the model wrote (see
:mod:`tao.protocol.dialects`), and it reads a megabyte in milliseconds: labels are
found by :class:`~tao.protocol.scan.Scanner`, never by a backtracking search.

    >>> reply = "Thought: easy.\\nAction: calculator[2 + 2]\\nObservation: 4"
    >>> parse_reply(reply, LABELS["en"]).argument
    '2 + 2'
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from tao.protocol import dialects
from tao.protocol.dialects import Call, decode_object, finish_names, json_text
from tao.protocol.labels import LABELS, Labels
from tao.protocol.scan import (
    Exhausted,
    Found,
    Scanner,
    action_input_words,
    lower_same_length,
    strip_thinking,
)
from tao.state.frozen import frozen
from tao.state.jsontypes import JSONObject

__all__ = [
    "FINISH",
    "Action",
    "Dialect",
    "FinalAnswer",
    "ParseFailure",
    "Parsed",
    "cut_at_stop",
    "parse_reply",
    "strip_thinking",
]

FINISH = "finish"
#: Which way of writing a call the model used (tao's own is "react").
Dialect = Literal["react", "langchain", "json", "hermes", "llama"]
#: Longer ``finish(...)`` arguments are taken as text, not parsed as Python.
MAX_LITERAL_CHARS = 10_000


@frozen
class Action:
    """One tool call; ``text`` is the reply cut right after it, as the transcript keeps it.

    ``arguments`` is the call's JSON object when the model wrote one (any dialect, or
    ``tool[{"key": …}]``): it binds by parameter name. ``None`` means bind ``argument``.
    """

    thought: str | None
    tool: str
    argument: str
    form: Literal["bracket", "call"]
    text: str
    arguments: JSONObject | None = None
    dialect: Dialect = "react"


@frozen
class FinalAnswer:
    """The run's answer, from ``finish[...]`` or a final-answer label line."""

    thought: str | None
    answer: str
    text: str


@frozen
class ParseFailure:
    """No action and no answer could be read; ``reason`` says what was wrong."""

    thought: str | None
    reason: str
    text: str


Parsed = Action | FinalAnswer | ParseFailure

_EMPHASIS = re.compile(r"[`*_]*+")
# name[argument] or name(argument), right after the label and its marks.
# Letters, spaces and prose punctuation: what a description is made of (disjoint, linear).
_PROSE = re.compile(r"[^\W\d_](?:[^\W\d_]|[\s,.;:!?'’\-])*+")
_HEAD = re.compile(r"(?P<tool>[^\W\d][\w.\-]*+)(?P<gap>\s*+)(?P<open>[\[(])")


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """Cut ``text`` at the first stop sequence, for backends that ignore ``stop`` (L3)."""
    cut = len(text)
    for stop in stops:
        if stop and (at := text.find(stop, 0, cut + len(stop) - 1)) != -1:
            cut = min(cut, at)
    return text[:cut]


def parse_reply(text: str, labels: Labels = LABELS["en"]) -> Parsed:
    """Read the first Action or final answer in ``text``; never raises (L4)."""
    try:
        return _parse(text, labels)
    except Exhausted:
        reason = (
            f"the reply holds too many malformed labels to read; write one {labels.thought} "
            f"line and one {labels.action} line, like {labels.action}: tool[argument]"
        )
        return ParseFailure(None, reason, "")
    except RecursionError:  # pathological input; still an answer, not a crash
        return ParseFailure(None, "the reply could not be read", "")


def _parse(raw: str, labels: Labels) -> Parsed:
    plain = _plain(raw, labels)
    return plain if plain is not None else _read(raw, labels)


def _read(raw: str, labels: Labels) -> Parsed:
    """The full reader: every dialect, labels anywhere, in linear time."""
    scan = Scanner(strip_thinking(raw.replace("\r\n", "\n")).strip(), labels)
    answer = scan.line_label(labels.answer_words, 0)
    limit = answer.start if answer is not None else len(scan.text)
    found = _first_labelled(scan, limit)
    if found is not None:
        limit = found[0]
    problem: str | None = None
    tag = dialects.tool_call_tag(scan, limit)
    if isinstance(tag, Call):
        found, limit = (tag.start, _from_call(scan, tag, "hermes")), tag.start
    elif isinstance(tag, str):  # a broken <tool_call>: no JSON inside it is read as a call
        problem, limit = tag, scan.low.find("<tool_call>")
    function = dialects.function_tag(scan, limit)
    if isinstance(function, Call):
        found, limit = (function.start, _from_call(scan, function, "llama")), function.start
    elif isinstance(function, str):  # as a broken <tool_call>
        problem, limit = function, scan.low.find("<function=")
    blob = dialects.json_blob(scan, limit)
    if blob is not None and blob.start < limit:
        found = (blob.start, _from_call(scan, blob, "json"))
    if found is not None:
        return found[1]
    if answer is not None and (final := _answer(scan, answer)) is not None:
        return final
    return _failure(scan, problem)


def _plain(raw: str, labels: Labels) -> Parsed | None:
    """The reply most models write most of the time, ``Thought: …`` then ``Action: tool[x]``
    and nothing else, read by one match; anything else (``None``) goes to the full reader.

    Only text the full reader reads the same way is taken: no colon in the thought (so
    no other label), no brackets in the argument, no ``<`` (tags), ``{`` (JSON) or
    ``\r``, no marks around the labels (``tests/protocol/test_plain.py`` checks the two
    agree).
    """
    known = _PLAIN_PATTERNS.get(id(labels))
    pattern = _plain_pattern(labels) if known is None or known[0] is not labels else known[1]
    if pattern is None or "<" in raw or "{" in raw or "\r" in raw:
        return None
    text = raw.strip()
    found = pattern.fullmatch(text)
    if found is None:
        return None
    thought: str | None = found["thought"]
    if thought is not None:
        body = thought.strip()
        if body[:1] in _MARKS:
            return None
        thought = body.strip("*_").strip() or None
    tool, argument = found["tool"], found["argument"]
    if tool.lower() == FINISH:
        return _finish(thought, argument, None, "bracket", text)
    return Action(thought, tool, argument.strip(), "bracket", text)


_MARKS = tuple("*_#>`~")


#: ``_plain``'s expressions by the ``id`` of their labels (kept alive beside them): a label
#: set's hash reads all its fields, which cost more than the match.
_PLAIN_PATTERNS: dict[int, tuple[Labels, re.Pattern[str] | None]] = {}


def _plain_pattern(labels: Labels) -> re.Pattern[str] | None:
    """``_plain``'s expression for ``labels``; ``None`` where one label word could hide
    another (a thought word holding the action word, an answer word starting either)."""
    thought, action = lower_same_length(labels.thought), lower_same_length(labels.action)
    answers = [lower_same_length(word) for word in labels.answer_words]
    pattern = None
    if not (action in thought or any(t.startswith(a) for a in answers for t in (thought, action))):
        pattern = re.compile(
            rf"(?:{re.escape(labels.thought)}:[ \t]*+(?P<thought>[^\n:：]*+)\n)?"
            rf"{re.escape(labels.action)}:[ \t]*+(?P<tool>[^\W\d_][\w.\-]*+)"
            r"\[(?P<argument>[^\[\]\n]*+)\]"
        )
    if len(_PLAIN_PATTERNS) < 64:  # label sets are few; made-up ones are not all kept
        _PLAIN_PATTERNS[id(labels)] = (labels, pattern)
    return pattern


@dataclass
class _Closers:
    """Memory of closing brackets already looked for, so no line is read twice."""

    scan: Scanner
    failed: set[tuple[int, str]] = field(default_factory=set)
    next_at: dict[str, tuple[int, int]] = field(default_factory=dict)

    def next(self, closer: str, pos: int) -> int:
        first, at = self.next_at.get(closer, (-1, -2))
        if first != -1 and first <= pos and (at == -1 or pos <= at):
            return at
        at = self.scan.text.find(closer, pos)
        self.next_at[closer] = (pos, at)
        return at

    def closing(self, start: int, closer: str) -> int | None:
        """The argument runs to the last ``closer`` on the Action line (answers hold brackets).

        When the line has none, it may continue on the next lines, up to the first line
        that closes it, but never past a line with a label.
        """
        text = self.scan.text
        line_end = self.scan.line_end(start)
        if (line_end, closer) in self.failed:
            return None
        if (at := text.rfind(closer, start, line_end)) != -1:
            return at
        after = self.next(closer, line_end + 1) if line_end < len(text) else -1
        if after != -1:
            end = text.find("\n", after)
            end = len(text) if end == -1 else end
            if not self.scan.labelled_line(line_end + 1, end):
                return text.rfind(closer, text.rfind("\n", line_end, after) + 1, end)
        self.failed.add((line_end, closer))
        return None


def _first_labelled(scan: Scanner, limit: int) -> tuple[int, Parsed] | None:
    """The first Action label that carries a call (either form, or LangChain's)."""
    closers = _Closers(scan)
    pos = 0
    while (label := scan.inline_label(scan.action_words, pos, limit)) is not None:
        call = dialects.langchain_call(scan, label)
        if call is not None:
            return label.start, _from_call(scan, call, "langchain")
        result = _bracket_or_call(scan, label, closers)
        if result is not None:
            return label.start, result
        scan.spend()
        pos = label.end
    return None


def _bracket_or_call(scan: Scanner, label: Found, closers: _Closers) -> Parsed | None:
    text = scan.text
    head = _HEAD.match(text, label.end)
    if head is None:
        return None
    bracket = head.group("open") == "["
    close = closers.closing(head.end(), "]" if bracket else ")")
    if close is None:
        return None
    argument = text[head.end() : close]
    tail = _EMPHASIS.match(text, close + 1)
    kept = text[: tail.end() if tail is not None else close + 1].rstrip()
    thought = _thought(scan, label.start)
    tool = head.group("tool")
    if not bracket and head.group("gap") and _is_description(argument):
        return ParseFailure(thought, _description_reason(scan.labels, tool, argument), kept)
    form: Literal["bracket", "call"] = "bracket" if bracket else "call"
    if tool.lower() == FINISH:
        return _finish(thought, argument, decode_object(argument), form, kept)
    return Action(thought, tool, argument.strip(), form, kept, decode_object(argument))


def _is_description(argument: str) -> bool:
    """``tool (remove a file)``: prose after a space is a description, never input (L11).

    Prose is letters and prose punctuation only; digits, quotes, operators, brackets or
    ``key=value`` make it an argument list, as in ``calculator (2 + 3)``.
    """
    return _PROSE.fullmatch(argument.strip()) is not None


def _description_reason(labels: Labels, tool: str, description: str) -> str:
    inputs = action_input_words(labels)[0]
    return (
        f'"{labels.action}: {tool} ({description.strip()})" names a tool but gives it no '
        f"input: the words in parentheses read as a description. Write "
        f"{labels.action}: {tool}[input], or put the input on an {inputs}: line after it"
    )


def _from_call(scan: Scanner, call: Call, dialect: Dialect) -> Parsed:
    thought = _thought(scan, call.start)
    if dialect == "json" and thought is not None:
        thought = dialects.trailing_action_label(thought, scan.labels) or None
    kept = scan.text[: call.end].rstrip()
    if lower_same_length(call.tool) in finish_names(scan.labels):
        return _finish(thought, call.argument, call.arguments, "bracket", kept)
    return Action(thought, call.tool, call.argument, "bracket", kept, call.arguments, dialect)


def _finish(
    thought: str | None,
    argument: str,
    arguments: JSONObject | None,
    form: Literal["bracket", "call"],
    kept: str,
) -> Parsed:
    """``finish[x]``, ``finish(answer="x")``, ``finish[{"answer": "x"}]`` all answer x."""
    if arguments is not None and set(arguments) == {"answer"}:
        answer = json_text(arguments["answer"])
    elif arguments is not None and not arguments:
        answer = ""
    else:
        answer = _finish_argument(argument, form)
    if answer:
        return FinalAnswer(thought, answer, kept)
    return ParseFailure(thought, f"{FINISH}[...] needs the answer inside the brackets", kept)


def _finish_argument(argument: str, form: str) -> str:
    """``finish(answer="x")`` and ``finish("x")`` mean the same as ``finish[x]``."""
    text = argument.strip()
    if form == "call" and len(text) <= MAX_LITERAL_CHARS:
        try:
            call = ast.parse(f"f({text})", mode="eval").body
            if isinstance(call, ast.Call) and len(call.args) + len(call.keywords) == 1:
                node = call.args[0] if call.args else call.keywords[0].value
                value = ast.literal_eval(node)
                return str(value).strip()
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
            pass
    return text


def _answer(scan: Scanner, answer: Found) -> FinalAnswer | None:
    """A final-answer line: its body runs to the next label line (a made-up one is cut)."""
    following = scan.line_label(scan.all_words, answer.end)
    end = following.start if following is not None else len(scan.text)
    body = scan.text[answer.end : end].strip()
    if not body:
        return None
    kept = scan.text[:end].rstrip()
    return FinalAnswer(_thought(scan, answer.start), body, kept)


def _thought(scan: Scanner, end: int) -> str | None:
    label = scan.line_label((scan.labels.thought,), 0, end)
    body = scan.text[label.end if label is not None else 0 : end]
    body = body.strip().strip("*_").strip()
    return body or None


def _failure(scan: Scanner, problem: str | None) -> ParseFailure:
    """What of an unparseable reply may enter the transcript: nothing from a made-up
    Observation; and a reason the model can act on (L4)."""
    labels = scan.labels
    observation = scan.line_label((labels.observation,), 0)
    end = observation.start if observation is not None else len(scan.text)
    text = scan.text[:end].rstrip()
    bad = scan.inline_label(scan.action_words, 0, len(text))
    thought = _thought(scan, bad.start if bad is not None else len(text))
    if problem is not None:
        reason = problem
    elif bad is not None:
        inputs = action_input_words(labels)[0]
        reason = (
            f"the {labels.action} line must name one tool followed by its argument "
            f"in brackets, like {labels.action}: tool[argument] "
            f"(or {labels.action}: tool, then {inputs}: argument on the next line)"
        )
    elif not text:
        reason = "the reply was empty"
    else:
        reason = f"the reply has no {labels.action} line and no {labels.answer} line"
    return ParseFailure(thought, reason, text)
