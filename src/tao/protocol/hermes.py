"""The Hermes/Qwen tool-call reply, held by a grammar to one clean shape (issue 30).

``tao serve`` gives tools to a model without native tool calling by describing them in
the prompt, as the Hermes/Qwen chat templates do, and reading the call back from the
text (:mod:`tao.server.tool_prompt`). Read after the fact, a small model's reply is a
mess: the embedded 1.5B model wrote the call's JSON as prose, a paragraph about it,
and then the call. So the reply is made clean by construction, with a GBNF grammar that
allows exactly one of two things:

* a call: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``, or the same
  JSON object bare (what the model writes when left alone), naming a tool of the request
  with arguments that match that tool's JSON schema (llama.cpp's own converter), and
  nothing after it: generation ends at the call;
* plain text, which cannot begin as a call does (``{``, ``<``, a fence), and never holds
  ``{"name`` (blanks allowed after the brace) nor ``<tool_call>``, so no call's JSON can
  hide in prose, followed by at most one call, tagged or bare.

So the text before a call is the model's own words, never the call's JSON, nothing comes
after a call, and a reader finds the call where :func:`call_start` says. The bare call
after text is allowed because a small model writes it so: when the grammar allowed only
the tagged one there, the embedded model wrote ``{"name ": ...}`` (a blank inside the
key) to get past the ban and lost the call. With ``required`` (``tool_choice:
"required"`` or a named function) only the call is allowed.

    grammar = tool_call_grammar({"calculator": {"type": "object", ...}})
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from tao.protocol.grammar import gbnf_literal
from tao.state.jsontypes import JSON, JSONObject

__all__ = ["CLOSE", "OPEN", "call_schema", "call_start", "held_tail", "tool_call_grammar"]

#: The tags around a call, as the Hermes/Qwen templates write them.
OPEN = "<tool_call>"
CLOSE = "</tool_call>"
#: llama.cpp's converter lets a string hold raw control characters, which strict JSON
#: readers (Python's ``json.loads``, most clients) refuse; they are kept out.
_LAX_CHAR = 'char ::= [^"\\\\]'
_STRICT_CHAR = 'char ::= [^"\\\\\\x00-\\x1f]'
_ANY_OBJECT: JSONObject = {"type": "object"}
#: How a call's JSON begins after its brace; text may not hold it after a brace (not
#: even as ``"name "`` or ``"names"``, so no misspelt key slips a call into prose).
_NAME_KEY = '"name'
_BLANKS = " \\t\\r\\n"
_CALL_START = re.compile(r'<tool_call>|\{\s*"name')


def _prefixes(word: str) -> str:
    """A regex for any non-empty prefix of ``word``."""
    return "|".join(re.escape(word[:size]) for size in range(len(word), 0, -1))


#: A tail of text that may be the beginning of a call still being written.
_PARTIAL_START = re.compile(rf"(?:{_prefixes(OPEN)}|\{{\s*(?:{_prefixes(_NAME_KEY)})?)$")


def call_start(text: str) -> int:
    """Where the call begins in a reply the grammar held (-1: no call); text before a
    call cannot hold ``<tool_call>`` or a brace and ``"name``, so the first is the call."""
    found = _CALL_START.search(text)
    return found.start() if found else -1


def held_tail(text: str) -> int:
    """How many characters at the end of ``text`` may begin a call (so a stream holds
    them back until the next piece says whether they are prose)."""
    found = _PARTIAL_START.search(text)
    return len(found.group(0)) if found else 0


def call_schema(tools: Mapping[str, JSON]) -> JSONObject:
    """The JSON schema of one call: ``{"name": TOOL, "arguments": {...}}`` for any tool of
    ``tools`` (name to its parameters' schema), name first as the templates write it."""
    shapes: list[JSON] = []
    shared: dict[str, JSONObject] = {}  # "#/$defs/X" must resolve from the call's root
    for name, parameters in tools.items():
        arguments = dict(parameters) if isinstance(parameters, dict) and parameters else {}
        for key in ("$defs", "definitions"):
            moved = arguments.pop(key, None)
            bucket = shared.setdefault(key, {})
            for def_name, definition in moved.items() if isinstance(moved, dict) else ():
                if bucket.setdefault(def_name, definition) != definition:
                    raise ValueError(f"two tools define {def_name!r} differently")
        shapes.append(
            {
                "type": "object",
                "properties": {"name": {"const": name}, "arguments": arguments or _ANY_OBJECT},
                "required": ["name", "arguments"],
            }
        )
    schema: JSONObject = {"oneOf": shapes}
    if len(shapes) == 1 and isinstance(shapes[0], dict):
        schema = dict(shapes[0])
    schema.update((key, bucket) for key, bucket in shared.items() if bucket)
    return schema


def _call_rules(tools: Mapping[str, JSON]) -> list[str]:
    """llama.cpp's grammar for a call, its root renamed ``call-json``; a tool whose schema
    the converter cannot take makes every tool take any JSON object instead."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:  # a ValueError from call_schema too: two tools' definitions clash
        text = json_schema_to_gbnf(json.dumps(call_schema(tools)))
    except (ValueError, KeyError, TypeError, RuntimeError, RecursionError, AssertionError):
        text = json_schema_to_gbnf(json.dumps(call_schema(dict.fromkeys(tools, _ANY_OBJECT))))
    rules = []
    for line in text.splitlines():
        if line.startswith("root ::="):
            line = "call-json ::=" + line[len("root ::=") :]
        elif line.startswith(_LAX_CHAR + " "):
            line = _STRICT_CHAR + line[len(_LAX_CHAR) :]
        if line.strip():
            rules.append(line)
    return rules


def _not_prefix(word: str, opener: str, first_also: str = "") -> str:
    """GBNF for a run of characters that does not begin ``word`` and stops where it turns
    away from it (one character at least). The character that turns away is never
    ``opener`` (the character before ``word``), which could begin ``word`` again: this is
    what keeps ``<t<tool_call>`` or ``{{"name"`` out; ``first_also`` is kept out of the
    first character too."""
    head = word[0]
    mismatch = f"[^{head}{opener}{first_also}\\x00]"
    if len(word) == 1:
        return mismatch
    return f"{mismatch} | {gbnf_literal(head)} ( {_not_prefix(word[1:], opener)} )"


def tool_call_grammar(tools: Mapping[str, JSON], *, required: bool = False) -> str:
    """GBNF for a reply that is one call of ``tools`` (name to parameters' JSON schema) or,
    unless ``required``, plain text; see the module's docstring."""
    rules = [
        "tool-call ::= tagged-call | call-json",
        f'tagged-call ::= "{OPEN}\\n" call-json "\\n{CLOSE}"',
        *_call_rules(tools),
    ]
    if required:
        return "\n".join(["root ::= tool-call", *rules])
    return "\n".join(["root ::= tool-call | free-text tool-call?", *_TEXT, *rules])


#: Text that is not a call: it cannot begin as a call does (``{``, ``<``, a fence) nor
#: with a blank that could hide one, and never holds ``<tool_call>`` nor a brace, blanks
#: and ``"name``. Runs of ``<`` or ``{`` are one step, so ``<<`` and ``{{`` stay writable.
_TEXT = (
    'free-text ::= [^{<`\\x00 \\t\\r\\n] ( [^<{\\x00] | "<"+ not-open | "{"+ not-call )*',
    f"not-open ::= {_not_prefix(OPEN[1:], '<')}",
    f"not-call ::= [{_BLANKS}]* ( {_not_prefix(_NAME_KEY, '{', _BLANKS)} )",
)
