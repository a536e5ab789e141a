"""The ReAct dialects models write out of habit (SPEC L11), read in linear time (L14).

Besides tao's own ``Action: tool[argument]``, a reply may call a tool as

* LangChain does: ``Action: tool`` then ``Action Input: argument`` (text or JSON);
* a JSON blob ``{"action": ..., "action_input": ...}``, fenced or bare, where the
  action ``Final Answer`` (or ``finish``) ends the run;
* Hermes/Qwen do: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
* Llama 3.1 does in its custom format: ``<function=tool>{...}</function>``.

A JSON blob may also name its keys as LangChain's tool agents do, ``{"tool": ...,
"tool_input": ...}``.

Each reader here looks at one known position and returns the pieces of one call; the
text parser decides which call comes first. A JSON object argument is kept decoded, so
that the binder can match its keys to parameter names instead of guessing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from tao.protocol.labels import Labels
from tao.protocol.scan import Found, Scanner, lower_same_length
from tao.state.jsontypes import JSON, JSONObject

__all__ = [
    "Call",
    "decode_object",
    "finish_names",
    "function_tag",
    "json_blob",
    "json_text",
    "langchain_call",
    "tool_call_tag",
    "trailing_action_label",
]

#: How many JSON candidates one reply may cost; each is decoded at most once.
MAX_JSON_TRIES = 16
_DECODER = json.JSONDecoder(strict=False)  # raw newlines in strings, as models write
# ``Action: tool`` alone on its line (words, so "Final Answer" is a name), an optional
# "(description)", then the line's end: the LangChain form, if an Action Input follows.
_LC_TOOL = re.compile(
    r"(?P<tool>[^\W\d][\w.\-]*+(?:[ \t]++[^\W\d][\w.\-]*+)*+)[*_`]*+[ \t]*+"
    r"(?:\((?P<desc>[^\n()]*+)\))?+[ \t*_`]*+\n"
)
_GAP = re.compile(r"\s*+[*_#>`~]*+")
_SPACE = re.compile(r"\s*+")
_CLOSING_MARKS = re.compile(r"[*_]*+")
_FENCE_OPEN = re.compile(r"```[ \t]*+(?:json[ \t]*+)?\n\s*+\Z", re.I)
_FENCE_CLOSE = re.compile(r"\s*+```")
_TAG_CLOSE = re.compile(r"\s*+</tool_call>", re.I)
_BLOB_KEYS = ('"action"', '"action_input"', '"name"', '"tool_input"')
#: Llama 3.1's custom tool-call format opens with the tool's name in the tag.
_FUNCTION_TAG = re.compile(r"<function=(?P<tool>[^\W\d][\w.\-]*+)>", re.I)
_FUNCTION_CLOSE = re.compile(r"\s*+</function>", re.I)


@dataclass(frozen=True)
class Call:
    """One tool call read from a dialect: where it starts and ends, and its parts."""

    start: int
    end: int
    tool: str
    argument: str
    arguments: JSONObject | None


def json_text(value: JSON) -> str:
    """An answer or argument as text: strings as written, anything else as JSON."""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False)


def decode_object(text: str) -> JSONObject | None:
    """``text`` as a JSON object (inside a Markdown fence or not), or ``None``."""
    body = _unfence(text.strip())
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        value: JSON = _DECODER.decode(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _unfence(text: str) -> str:
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return text
    inner = text[3:-3]
    newline = inner.find("\n")
    if newline != -1 and inner[:newline].strip().isalnum():
        inner = inner[newline + 1 :]  # a language tag: ```json
    return inner.strip()


@lru_cache(maxsize=16)
def finish_names(labels: Labels) -> frozenset[str]:
    """Names that end the run when used as a tool: finish, and every "final answer"."""
    words = {lower_same_length(w) for w in labels.answer_words}
    return frozenset({"finish", "final answer", "final_answer", *words})


def langchain_call(scan: Scanner, label: Found) -> Call | None:
    """``Action: tool`` + ``Action Input: …`` at an Action label, or ``None``.

    The input runs to the next line that starts with a label (or the end), so a
    multi-line JSON object or code block is one input; a partial stop word
    (``Obs``) left at its end by a backend is dropped.
    """
    text = scan.text
    line = _LC_TOOL.match(text, label.end)
    if line is None:
        return None
    gap = _GAP.match(text, line.end())
    at = gap.end() if gap is not None else line.end()
    colon = -1
    for word in scan.input_words:
        if scan.low.startswith(lower_same_length(word), at):
            colon = scan.colon(at + len(word))
            marks = _CLOSING_MARKS.match(text, colon) if colon != -1 else None
            colon = marks.end() if marks is not None else colon
            break
    if colon == -1:
        return None
    following = scan.line_label(scan.all_words, colon)
    end = following.start if following is not None else len(text)
    raw = _drop_partial_stop(text[colon:end].rstrip(), scan.labels)
    argument = raw.strip()
    tool = line.group("tool").strip()
    return Call(label.start, colon + len(raw), tool, argument, decode_object(argument))


def _drop_partial_stop(text: str, labels: Labels) -> str:
    newline = text.rfind("\n")
    last = lower_same_length(text[newline + 1 :].strip())
    stop = lower_same_length(labels.observation)
    if newline != -1 and len(last) >= 2 and stop.startswith(last):
        return text[:newline].rstrip()
    return text


def json_blob(scan: Scanner, limit: int) -> Call | None:
    """The first ``{"action", "action_input"}`` (or ``{"name", "arguments"}``) object.

    Only objects that hold one of those keys are decoded, each once; a first object that
    fails to decode ends the search, so a long unterminated one is read only once.
    """
    text = scan.text
    pos = 0
    for _ in range(MAX_JSON_TRIES):
        at = min((a for k in _BLOB_KEYS if (a := text.find(k, pos, limit)) != -1), default=-1)
        if at == -1:
            return None
        brace = text.rfind("{", max(0, at - 4096), at)
        if brace == -1:
            pos = at + 1
            continue
        try:
            value, end = _DECODER.raw_decode(text, brace)
        except (ValueError, RecursionError):
            return None
        call = _blob_call(value, brace, end, text) if isinstance(value, dict) else None
        if call is not None:
            return call
        pos = max(end, at + 1)
    return None


def _blob_call(value: JSONObject, start: int, end: int, text: str) -> Call | None:
    if isinstance(action := value.get("action"), str):
        raw: JSON = value.get("action_input", "")
        tool = action
    elif isinstance(name := value.get("name"), str) and isinstance(
        raw := value.get("arguments", value.get("parameters")), dict | str
    ):
        tool = name
    elif isinstance(name := value.get("tool"), str) and "tool_input" in value:
        raw, tool = value["tool_input"], name
    else:
        return None
    fence = _FENCE_OPEN.search(text, max(0, start - 24), start)
    if fence is not None:
        start = fence.start()
        close = _FENCE_CLOSE.match(text, end)
        end = close.end() if close is not None else end
    arguments = raw if isinstance(raw, dict) else None
    argument = json_text(raw) if raw is not None else ""
    if arguments is None:
        arguments = decode_object(argument)
    return Call(start, end, tool.strip(), argument, arguments)


def tool_call_tag(scan: Scanner, limit: int) -> Call | str | None:
    """The first ``<tool_call>{"name", "arguments"}</tool_call>``; a string says what is wrong."""
    at = scan.low.find("<tool_call>", 0, limit)
    if at == -1:
        return None
    text = scan.text
    space = _SPACE.match(text, at + len("<tool_call>"))
    body = space.end() if space is not None else at + len("<tool_call>")
    try:
        value, end = _DECODER.raw_decode(text, body)
    except (ValueError, RecursionError):
        value, end = None, body
    name = value.get("name") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(name, str) or not name.strip():
        return 'a <tool_call> must hold {"name": "tool", "arguments": {...}}'
    raw: JSON = value.get("arguments", value.get("parameters", {}))
    arguments = decode_object(raw) if isinstance(raw, str) else raw
    if not isinstance(arguments, dict):
        return f'the "arguments" of the <tool_call> for {name} must be a JSON object'
    close = _TAG_CLOSE.match(text, end)
    end = close.end() if close is not None else end
    return Call(at, end, name.strip(), json.dumps(arguments, ensure_ascii=False), arguments)


def function_tag(scan: Scanner, limit: int) -> Call | str | None:
    """The first ``<function=tool>{...}</function>`` (Llama 3.1) before ``limit``; its body is
    a JSON object (nothing, for a tool without parameters); a string says what is wrong."""
    found = _FUNCTION_TAG.search(scan.text, 0, limit)
    if found is None:
        return None
    text = scan.text
    space = _SPACE.match(text, found.end())
    body = space.end() if space is not None else found.end()
    arguments: JSONObject = {}
    end = body
    if not _FUNCTION_CLOSE.match(text, body):
        try:
            value, end = _DECODER.raw_decode(text, body)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            return f"the body of <function={found['tool']}> must be a JSON object of its arguments"
        arguments = value
    close = _FUNCTION_CLOSE.match(text, end)
    end = close.end() if close is not None else end
    argument = json.dumps(arguments, ensure_ascii=False)
    return Call(found.start(), end, found["tool"], argument, arguments)


@lru_cache(maxsize=16)
def _trailing_label(action: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?:^|\s)[*_#>`~]*{re.escape(action)}(?:\s*\d+)?[\s*_#>`~]*[:：][\s*_#>`~]*\Z", re.I
    )


def trailing_action_label(thought: str, labels: Labels) -> str:
    """A thought without the ``Action:`` label that introduced a JSON blob after it."""
    tail_from = max(0, len(thought) - 200)
    found = _trailing_label(labels.action).search(thought, tail_from)
    return thought[: found.start()].strip() if found is not None else thought
