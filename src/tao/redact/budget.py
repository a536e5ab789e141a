"""A bounded amount of Python work per 1 KB block of a text (SPEC S11; issue 26).

Each layer finds its candidates at C speed, but decides on each one in Python (about a
microsecond). A crafted text packs a candidate every few characters, so a layer counts
its candidates per block of :data:`BLOCK` characters, and past its limit hides the rest
of that block whole and skips to the next one: an adversarial block costs a bounded
amount of Python, and hiding too much beats a leak or a time-out. Ordinary text holds
far fewer candidates than any limit.
"""

from __future__ import annotations

import re

BLOCK = 1_024
#: How far a hidden block is carried on to the end of its line, so that no value is cut.
_LINE_ON = 1_000
#: How far back a hidden block starts, so a value that began in the block before is hidden;
#: a layer whose candidate is two words (``--token VALUE``) resumes this far before its end.
BACK = 200
_WORD = re.compile(r"\S{0,1000}+")


class Blocks:
    """One layer's count of candidates per block of one text."""

    __slots__ = ("_block", "_count", "_most", "_size", "_text")

    def __init__(self, text: str, most: int) -> None:
        self._text = text
        self._size = len(text)
        self._most = most
        self._block = -1
        self._count = 0

    def full(self, at: int) -> bool:
        """Count a candidate at ``at``; whether its block is past the limit (then the
        layer yields :meth:`hide` and resumes at its end)."""
        block = at // BLOCK
        if block != self._block:
            self._block, self._count = block, 0
        self._count += 1
        return self._count > self._most

    def hide(self, at: int) -> tuple[int, int]:
        """The span that hides ``at``'s block from ``at`` (less :data:`BACK`) on: its end,
        carried on to the end of that line."""
        return max(0, at - BACK), block_end(self._text, (at // BLOCK + 1) * BLOCK)


def block_end(text: str, end: int) -> int:
    """Where a hidden block stops: ``end``, carried on to the end of that line (at most one
    value's length on, then to the end of the word there), so no value is cut in two."""
    if end >= len(text):
        return len(text)
    line_end = text.find("\n", end, end + _LINE_ON)
    if line_end >= 0:
        return line_end
    word = _WORD.match(text, end + _LINE_ON)
    return word.end() if word is not None else len(text)
