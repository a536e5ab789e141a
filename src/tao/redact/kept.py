"""Redact only the part of a long output that a cut will keep (SPEC L6, S8, S11; issue 26).

A tool's output is cut to its tool's ``max_chars`` (8,000 by default) after redaction,
and the rest is thrown away. Redacting all of a 10 MB output to show its first 8,000
characters costs up to four seconds of Python on crafted text, inside the call's time
limit. Every layer of :mod:`tao.redact.scan` decides on a secret from a bounded
neighbourhood: a value's label within a line of 1,000 characters, a rule's window of
2,000, an encoded run cut in pieces of 4,096, a PEM block of 8,192. So the kept end
and :data:`EDGE` characters past it are redacted as a text of their own, and only what
lies a whole :data:`EDGE` inside that window is shown: a secret across the window's
border is never shown in part, because that part is never shown at all. A 100 MB output
costs what a 40 KB one does.

A token glued to an unbroken run longer than :data:`EDGE` is the one thing read
differently: the whole run is hidden when redacted whole, but only its first
:data:`EDGE` characters past the token when cut first (none of them are the token).
"""

from __future__ import annotations

from typing import Literal

from tao.redact.marker import Span, replace
from tao.redact.scan import find_secrets, redact

#: How far past the kept characters the window reads, and how far inside its border the
#: shown text stays: more than the widest neighbourhood any layer reads (a PEM block).
EDGE = 16_384


def redact_kept(text: str, chars: int, keep: Literal["head", "tail"]) -> tuple[str, bool]:
    """``text`` redacted, but only as much of it as a cut to ``chars`` characters from
    its ``keep`` end needs: ``(redacted, whole)``, ``whole`` saying whether the redacted
    text is all of ``text`` (when it is short) or only its kept end (then longer than
    ``chars`` unless secrets hidden there were long: cut it still)."""
    if len(text) <= chars + 2 * EDGE:
        return redact(text), True
    if keep == "head":
        return _head(text, chars + EDGE), False
    return _tail(text, len(text) - chars - EDGE), False


def _head(text: str, stop: int) -> str:
    """``text[:stop]`` redacted as a part of ``text[:stop + EDGE]`` (a secret across
    ``stop`` is taken whole)."""
    spans = find_secrets(text[: stop + EDGE])
    for start, end in spans:
        if start < stop < end:
            stop = end
    return replace(text[:stop], [span for span in spans if span[0] < stop])


def _tail(text: str, start: int) -> str:
    """``text[start:]`` redacted as a part of a window from :data:`EDGE` before it.

    The window starts after a line break or space where one is near, so that an encoded
    run is decoded from its first character, as it would be in the whole text."""
    begin = start - EDGE
    gap = max(text.rfind(mark, max(0, begin - EDGE), begin) for mark in "\n ")
    if gap >= 0:
        begin = gap + 1
    spans = find_secrets(text[begin:])
    start -= begin
    for span_start, end in spans:
        if span_start < start < end:
            start = span_start
    kept: list[Span] = [(a - start, b - start) for a, b in spans if b > start]
    return replace(text[begin + start :], kept)
