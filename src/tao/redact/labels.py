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

from tao.redact.budget import BLOCK, block_end
from tao.redact.keys import NOT_VALUES, secret_key
from tao.redact.marker import REDACTED, Span
from tao.redact.runs import Needles

_K = r"A-Za-z0-9_.\-"
#: A key's characters before and after a label word (a key is at most 100 long).
_KEY_RUN = re.compile(rf"[{_K}]{{0,101}}+")
#: A value, by its quoting: inside a JSON string, double, single or back quotes, or bare
#: (with a scheme word: ``Bearer abc``). One group each, so ``lastindex`` names the kind.
_VALUE = re.compile(
    "|".join(
        (
            r'\\"((?:[^"\\\n]|\\[^"\n]){1,1000}+)\\"',  # inside a JSON string: \"value\"
            r'"((?:[^"\\\n]|\\.){1,1000}+)"',
            r"'([^'\n]{1,1000}+)'",
            r"`([^`\n]{1,1000}+)`",
            r"((?i:(?:bearer|basic|token|digest)[ \t]++)?[^\s\"'`,;&<>(){}\[\]]{1,1000}+)",
        )
    )
)
#: The label words as literals, found by ``str.find`` (``pw`` also finds ``pwd``): only a
#: key holding one can name a secret (:func:`tao.redact.keys.secret_key`), so only their
#: keys are tried.
_NEEDLES = (
    "pass", "pw", "secret", "token", "auth", "cred", "dsn", "jwt", "cookie", "session",
    "bearer", "sig", "webhook", "sas", "sid", "otp", "hmac", "salt", "connection", "key",
)  # fmt: skip
#: The rest of a key after its word, then its separator: most word hits (prose) fail here.
#: Bounded like the key: an unbounded run here read a 1 MB run of ``pass`` once per word,
#: quadratic (32 s for 1 MB; issue 26).
_KEY_REST = re.compile(rf"""([{_K}]{{0,100}}+)["']?\]?[ \t]*+(?::=|=>|=|:)[ \t]*+(?![=:])""")
#: The longest key (a longer run of key characters is not a key).
_KEY_MAX = 100
#: Dense labels (issue 26): in a block of :data:`BLOCK` characters, more than :data:`DENSE`
#: hidden values, :data:`CANDIDATES` labelled keys or :data:`HITS` label words hide the
#: whole block (and the rest of its last line) instead of each value, so a crafted text
#: costs a bounded amount of Python per block. Ordinary text holds far fewer; hiding too
#: much beats a leak or a hang.
DENSE = 16
#: After this many values in a block, the rest of the block is counted (:func:`_crowded`).
EARLY = 6
CANDIDATES = 32
HITS = 64
_LINE_START = re.compile(r"[ \t]*(?:export[ \t]+|[-+][ \t]*)?[\"']?")
_CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[$<%{]|\w+\s*[(\[]|.*\s=\s|.*[()]")
#: How far back a key's line start is looked for, and how far on its end.
_LINE_BACK = 200
_LINE_ON = 1_000


def labelled_spans(text: str, lowered: str) -> Iterator[Span]:
    """The values of every ``KEY=VALUE`` (in any quoting) whose key names a secret;
    ``lowered`` is ``text`` in lower case, position for position.

    Keys are found from their label words (literals, at ``str.find`` speed); the key's
    start is found by reading back over key characters in the reversed text, its end and
    separator by :data:`_KEY_REST` after the word. A block too dense with labels is hidden
    whole (see :data:`DENSE`)."""
    size = len(text)
    finder = Needles(_NEEDLES, lowered)
    reverse = ""
    position = 0
    block = -1
    found = candidates = hits = 0
    while (hit := finder.search(position)) is not None:
        at = hit[0]
        if at // BLOCK != block:
            block, found, candidates, hits = at // BLOCK, 0, 0, 0
        hits += 1
        if (
            hits > HITS
            or candidates > CANDIDATES
            or found >= DENSE
            or (found == EARLY and _crowded(lowered, at, (block + 1) * BLOCK))
        ):
            found = DENSE  # the rest of this block is hidden whole
            stop = block_end(text, (block + 1) * BLOCK)
            yield max(0, block * BLOCK - _LINE_BACK), stop
            position = stop
            continue
        rest = _KEY_REST.match(lowered, hit[1])
        position = max(position, hit[1] if rest is None else rest.end())
        if rest is None:  # no separator after the key: most word hits
            continue
        if not reverse:
            reverse = lowered[::-1]
        back = _KEY_RUN.match(reverse, size - at)
        key_start = at - (back.end() - back.start()) if back is not None else at
        key_end = rest.end(1)
        if key_start < at - 100 or key_end - key_start > _KEY_MAX:
            continue
        candidates += 1
        if not secret_key(text[key_start:key_end]):
            continue
        span = value_span(text, key_start, rest.end())
        if span is not None:
            found += 1
            yield span
            position = max(position, span[1])


def _crowded(lowered: str, at: int, end: int) -> bool:
    """Whether the rest of a block that already gave :data:`EARLY` values holds label words
    enough for as many again: counted at C speed, so a block packed with real secrets is
    hidden after a few values instead of after :data:`DENSE` (issue 26)."""
    return sum(lowered.count(needle, at, end) for needle in _NEEDLES) >= 2 * (DENSE - EARLY)


def value_span(text: str, key_start: int, position: int) -> Span | None:
    """The span of the value at ``position``; a bare value opening a line runs to its end
    (``DB_PASS=correct horse battery``), unless it reads as code."""
    match = _VALUE.match(text, position)
    if match is None:
        return None
    group = match.lastindex or 5  # the alternative that matched: one group each
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
