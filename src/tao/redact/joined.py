"""Tokens split across lines or string pieces, joined again in one linear pass.

A key wrapped at 40, 64 or 76 columns, ``"sk-proj-abc" \\n "def"`` (implicit or ``+``
string concatenation), or a backslash-continued string each hides a token no shape
matches whole. :func:`join` removes such joints between two token characters and keeps
a map back to the original, so a secret found across a joint is hidden in the original.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

from tao.redact.marker import Span, merge

_T = r"A-Za-z0-9+/_\-"
#: A joint: a line break (with indentation) after a run of 8 token characters (a key wrapped
#: early, before its 16th character, is still the key; issue 26 round 2) and before a
#: line that is only a token's continuation (no ``=`` inside, which would start a new
#: ``NAME=value`` line); a quote, ``+`` or ``.`` and a quote between two string pieces;
#: a backslash and a line break inside a string.
_LINE_REST = rf"[ \t]*+(?=[{_T}]++=*+[ \t]*+(?:[\"'`,;)\]]|\r?\n|\Z))"
_PIECES = r"[ \t]*+(?:[+.][ \t]*+)?(?:\\?\r?\n[ \t]*+)?(?:[+.][ \t]*+)?"
#: Every alternative opens with a literal character, so :mod:`re` skips between
#: candidates at C speed instead of trying each position (issue 26).
_JOINT = re.compile(
    rf"\n(?<=[{_T}]{{8}}\n){_LINE_REST}"
    rf"|\r\n(?<=[{_T}]{{8}}\r\n){_LINE_REST}"
    rf'|"(?<=[{_T}]"){_PIECES}"(?=[{_T}])'
    rf"|'(?<=[{_T}]'){_PIECES}'(?=[{_T}])"
    rf"|\\(?<=[{_T}]\\)\r?\n[ \t]*+(?=[{_T}])"
)

#: :data:`_JOINT` as one group, so ``re.split`` keeps the joints it cuts at.
_SPLIT = re.compile(f"({_JOINT.pattern})")


@dataclass(frozen=True, slots=True)
class Joined:
    """``text`` with its joints removed, and where each removal was."""

    text: str
    #: Positions in ``text`` where a joint was removed, ascending.
    at: list[int]
    #: Characters removed before and at each of those positions, in total.
    removed: list[int]

    def original(self, span: Span) -> Span:
        """The span of the original text that ``span`` of the joined text covers."""
        start, end = span
        return start + self._shift(start, after=True), end + self._shift(end, after=False)

    def crosses(self, span: Span) -> bool:
        """Whether ``span`` runs over a joint (else the plain scan saw it whole)."""
        index = bisect_right(self.at, span[0])
        return index < len(self.at) and self.at[index] < span[1]

    def windows(self, reach: int) -> list[Span]:
        """The parts of the joined text within ``reach`` of a joint, merged: all a secret
        across a joint can lie in, so a text with one joint is not scanned twice whole
        (a 4 MB text whose last line happened to end in a joint took 1.4 s more)."""
        size = len(self.text)
        return merge((max(0, at - reach), min(size, at + reach)) for at in self.at)

    def _shift(self, position: int, *, after: bool) -> int:
        index = bisect_right(self.at, position) if after else bisect_right(self.at, position - 1)
        return self.removed[index - 1] if index else 0


def join(text: str) -> Joined | None:
    """``text`` with joints removed, or ``None`` when it has none (most texts).

    One ``re.split`` cuts the text at every joint (kept by the pattern's group), and the
    positions come from running sums of the pieces' and joints' lengths, all in C: a
    text wrapped at 32 columns has a joint every 33 characters (issue 26 round 6)."""
    parts = _SPLIT.split(text)
    if len(parts) == 1:
        return None
    pieces, joints = parts[0::2], parts[1::2]
    at = list(accumulate(map(len, pieces[:-1])))
    removed = list(accumulate(map(len, joints)))
    return Joined("".join(pieces), at, removed)
