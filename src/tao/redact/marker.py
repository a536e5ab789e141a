"""How a hidden value is shown, and how found spans become redacted text (SPEC S8).

Every hidden value becomes :data:`REDACTED`, so a reader sees plainly that something
was there and was taken out; labels around it stay so the text still reads.
"""

from __future__ import annotations

from collections.abc import Iterable

#: A secret's place in a text: ``text[start:end]``.
Span = tuple[int, int]
#: What replaces each hidden value.
REDACTED = "[REDACTED]"


def merge(spans: Iterable[Span]) -> list[Span]:
    """``spans`` sorted, with overlapping or touching ones made one; empty spans dropped."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def replace(text: str, spans: list[Span]) -> str:
    """``text`` with each of the merged, sorted ``spans`` replaced by :data:`REDACTED`."""
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(REDACTED)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def hidden_note(count: int) -> str:
    """The line under a redacted preview: ``2 values hidden``, so a person knows."""
    return f"{count} value{'' if count == 1 else 's'} hidden ({REDACTED})"
