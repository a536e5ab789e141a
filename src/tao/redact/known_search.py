"""Many known forms found in one pass over a text (SPEC S8, S11; issue 26).

:mod:`tao.redact.known_forms` computes each value's disguises once. Searching for each
with its own ``find`` costs one pass over the text per form: a value has about a hundred
forms, so twenty values made two thousand passes. Instead every form at least
:data:`BLOCKED` long is cut into all its 8-byte windows, kept in one table. Such a form,
wherever it sits in the text, covers one whole 8-byte block of the text at an offset
that is a multiple of 8; so the text is read as an array of 8-byte integers (a C copy),
and one set test asks whether any block is a window of any form. Only on a hit (a leak,
or a rare common 8-letter run) are the blocks walked and each candidate checked with
``startswith``. The search costs the same for one value or two hundred; shorter forms
and the signatures are found with ``bytes.find``.

A hit in a view of the text (:mod:`tao.redact.known` makes the views) is mapped back to
the original text's offsets by :func:`mapped` (a walk over the dropped characters), which
only a leak pays for.
"""

from __future__ import annotations

import re
import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: ``(start, end)`` in a text (the same as :data:`tao.redact.marker.Span`; not imported,
#: so these leaves add no link to the import chain).
Span = tuple[int, int]

#: A form this long always covers one whole aligned 8-byte block of the text.
BLOCKED = 15
#: One pass over a text's 8-byte blocks costs about as much as this many ``find`` calls
#: (measured: 1 MB of prose, 17 ms against 0.3 ms), so fewer forms are found one by one.
FINDS_PER_PASS = 50
_BLOCK = 8


@dataclass(frozen=True)
class Needles:
    """The forms searched in one view, in its case-sensitive and its lower-cased copy:
    one by one with ``find``, or, when there are enough of them to make one pass over the
    text's blocks cheaper than a ``find`` each, by 8-byte blocks of the lower-cased copy
    (each candidate then checked in the copy its form belongs to)."""

    exact: tuple[bytes, ...] = ()
    folded: tuple[bytes, ...] = ()
    #: A lower-cased 8-byte window → ``(form, its offset, whether it is a folded form)``.
    blocks: Mapping[int, tuple[tuple[bytes, int, bool], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, exact: Iterable[bytes], folded: Iterable[bytes] = ()) -> Needles:
        cased = [(form, False) for form in dict.fromkeys(exact)]
        cased += [(form, True) for form in dict.fromkeys(folded)]
        long = [(form, fold) for form, fold in cased if len(form) >= BLOCKED]
        if len(long) < FINDS_PER_PASS:
            long = []
        blocked = set(long)
        short = [(form, fold) for form, fold in cased if (form, fold) not in blocked]
        blocks: dict[int, list[tuple[bytes, int, bool]]] = {}
        for form, fold in long:
            lowered = form.lower()
            for offset in range(len(form) - _BLOCK + 1):
                key = int.from_bytes(lowered[offset : offset + _BLOCK], sys.byteorder)
                blocks.setdefault(key, []).append((form, offset, fold))
        return cls(
            tuple(form for form, fold in short if not fold),
            tuple(form for form, fold in short if fold),
            {key: tuple(found) for key, found in blocks.items()},
        )

    def __bool__(self) -> bool:
        return bool(self.exact or self.folded or self.blocks)


def find_forms(view: bytes, folded: bytes, needles: Needles) -> list[Span]:
    """Where each of ``needles`` appears in ``view`` (``folded`` is it lower-cased)."""
    spans = find_all(view, needles.exact) + find_all(folded, needles.folded)
    if not needles.blocks:
        return spans
    blocks = array("Q")
    blocks.frombytes(folded[: len(folded) // _BLOCK * _BLOCK])
    if needles.blocks.keys().isdisjoint(blocks):
        return spans
    for key in needles.blocks.keys() & set(blocks):
        at = blocks.index(key)
        while at != -1:
            for form, offset, fold in needles.blocks[key]:
                start = _BLOCK * at - offset
                if start >= 0 and (folded if fold else view).startswith(form, start):
                    spans.append((start, start + len(form)))
            at = _next(blocks, key, at + 1)
    return spans


def _next(blocks: array[int], key: int, start: int) -> int:
    """The next index of ``key`` in ``blocks`` from ``start`` (C speed), or -1."""
    try:
        return blocks.index(key, start)
    except ValueError:
        return -1


def shifted(signature: bytes, needles: tuple[bytes, ...]) -> list[Span]:
    """Hits of shift signatures, as spans of the characters they were taken from (a
    signature of n differences covers n + 1 characters)."""
    return [(start, end + 1) for start, end in find_all(signature, needles)]


def find_all(text: bytes, needles: Iterable[bytes]) -> list[Span]:
    """Every place in ``text`` where one of ``needles`` appears (``bytes.find``, C speed)."""
    spans: list[Span] = []
    for needle in needles:
        start = text.find(needle)
        while start != -1:
            spans.append((start, start + len(needle)))
            start = text.find(needle, start + len(needle))
    return spans


def mapped(text: str, spans: list[Span], drop: re.Pattern[str]) -> list[Span]:
    """``spans`` of a view that dropped what ``drop`` matches, as offsets in ``text``."""
    if not spans:
        return []
    kept_at, original_at = _offsets(text, drop)
    return [
        (_original(start, kept_at, original_at), 1 + _original(end - 1, kept_at, original_at))
        for start, end in spans
    ]


def _offsets(text: str, drop: re.Pattern[str]) -> tuple[list[int], list[int]]:
    """For each run of kept characters: where it starts in the view and in ``text``."""
    kept_at: list[int] = []
    original_at: list[int] = []
    kept = 0
    position = 0
    for dropped in drop.finditer(text):
        if dropped.start() > position:
            kept_at.append(kept)
            original_at.append(position)
            kept += dropped.start() - position
        position = dropped.end()
    if position < len(text):
        kept_at.append(kept)
        original_at.append(position)
    return kept_at, original_at


def _original(index: int, kept_at: list[int], original_at: list[int]) -> int:
    """The offset in the original text of the view's character ``index``."""
    run = bisect_right(kept_at, index) - 1
    return original_at[run] + index - kept_at[run]


__all__ = ["BLOCKED", "FINDS_PER_PASS", "Needles", "find_all", "find_forms", "mapped", "shifted"]
