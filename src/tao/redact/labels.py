"""Secrets known by their label, not their shape: ``password = …``, ``DB_PASS: …``,
``"api_key": "…"``, ``export TOKEN=…``, ``mysqld --db-password=…`` (SPEC S5, S8).

One forward pass of one expression finds every ``KEY = `` whose key holds a label word;
:func:`tao.redact.keys.secret_key` then decides on the key. Each search starts after the
value it just took, and every look to either side is bounded (a key of 100 characters,
a value of 1,000, a line of 1,000), so the pass is linear in the text's length however
the text is made (issue 26: a crafted 2 MB text once took 267 s here).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tao.redact.keys import NOT_VALUES, secret_key
from tao.redact.marker import REDACTED, Span

_K = r"A-Za-z0-9_.\-"
#: Parts of a key that may make it secret; a bare ``key`` is not (``api_key`` is).
_WORDS = (
    r"pass|pwd|pw|secret|token|auth|cred|dsn|jwt|cookie|session|bearer|sig|webhook|sas|sid"
    rf"|otp|hmac|salt|connection|[{_K}]key"
)
#: A key (in lowered text, where no key character is before it) holding a label word,
#: then ``=``, ``:``, ``:=`` or ``=>``. The possessive key and the bounded look-ahead keep
#: each start's cost to the key's length, and a key starts only once per word.
_LABELLED = re.compile(
    rf"(?<![{_K}])(?=[{_K}]{{0,100}}?(?:{_WORDS}))([{_K}]{{1,100}}+)"
    r"""["']?\]?[ \t]*+(?::=|=>|=|:)[ \t]*+(?![=:])"""
)
_VALUE = re.compile(
    r'\\"((?:[^"\\\n]|\\[^"\n]){1,1000}+)\\"'  # inside a JSON string: \"value\"
    r'|"((?:[^"\\\n]|\\.){1,1000}+)"'
    r"|'([^'\n]{1,1000}+)'"
    r"|`([^`\n]{1,1000}+)`"
    r"|((?i:(?:bearer|basic|token|digest)[ \t]++)?[^\s\"'`,;&<>(){}\[\]]{1,1000}+)"
)
_LINE_START = re.compile(r"[ \t]*(?:export[ \t]+|[-+][ \t]*)?[\"']?")
_CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[$<%{]|\w+\s*[(\[]|.*\s=\s|.*[()]")
#: How far back a key's line start is looked for, and how far on its end.
_LINE_BACK = 200
_LINE_ON = 1_000


def labelled_spans(text: str, lowered: str) -> Iterator[Span]:
    """The values of every ``KEY=VALUE`` (in any quoting) whose key names a secret;
    ``lowered`` is ``text`` in lower case, position for position (searched without the
    cost of case-blind matching)."""
    position = 0
    search = _LABELLED.search
    while (found := search(lowered, position)) is not None:
        position = found.end()
        key_start, key_end = found.span(1)
        if not secret_key(text[key_start:key_end]):
            continue
        span = value_span(text, key_start, position)
        if span is not None:
            yield span
            position = max(position, span[1])


def value_span(text: str, key_start: int, position: int) -> Span | None:
    """The span of the value at ``position``; a bare value opening a line runs to its end
    (``DB_PASS=correct horse battery``), unless it reads as code."""
    match = _VALUE.match(text, position)
    if match is None:
        return None
    group = next(index for index in range(1, 6) if match.group(index) is not None)
    start, end = match.span(group)
    if group == 5:  # bare
        before = text.rfind("\n", max(0, key_start - _LINE_BACK), key_start)
        line_start = before + 1 if before >= 0 or key_start <= _LINE_BACK else -1
        opens = line_start >= 0 and _LINE_START.fullmatch(text, line_start, key_start)
        rest = ""
        if opens:  # only then is the rest of the line read (bounded)
            line_end = text.find("\n", end, start + _LINE_ON)
            rest = text[start : min(len(text), start + _LINE_ON) if line_end < 0 else line_end]
            rest = rest.split(" #")[0].rstrip()
        if opens and not _CODE.match(rest):
            end = start + len(rest)
        elif _CODE.match(text[start : end + 1]):
            return None
    value = text[start:end].strip()
    if not value or value.lower() in NOT_VALUES or REDACTED in value:
        return None
    return start, end
