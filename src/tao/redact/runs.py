"""Runs of token, base64 or hex characters, found at C speed (SPEC S11).

A character-class scan with :mod:`re` costs 10-40 ns per character; a crafted 10 MB
text would spend seconds in each one. Here the text is mapped once to one byte per
character (``x`` for a character of the class, ``.`` for any other), and runs of at
least *n* are found with ``bytes.find`` of ``x`` * *n*, which skips through text at
about a nanosecond per character. Positions are the text's own: every non-ASCII
character becomes exactly one byte (``?``), then a ``.``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from functools import lru_cache

#: Characters of tokens and of base64 (standard and URL-safe).
TOKEN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"  # noqa: S105
#: Hex digits.
HEX = "0123456789abcdefABCDEF"


@lru_cache(maxsize=8)
def _table(chars: str) -> bytes:
    members = {ord(char) for char in chars}
    return bytes(ord("x") if code in members else ord(".") for code in range(256))


class Classes:
    """One text's class maps, built on first use and shared by every layer."""

    __slots__ = ("_ascii", "_maps")

    def __init__(self, text: str) -> None:
        self._ascii = text.encode("ascii", "replace")
        self._maps: dict[str, bytes] = {}

    def map(self, chars: str) -> bytes:
        """``x`` where the text holds one of ``chars``, ``.`` elsewhere."""
        found = self._maps.get(chars)
        if found is None:
            found = self._maps[chars] = self._ascii.translate(_table(chars))
        return found

    def run(self, chars: str, least: int, position: int) -> tuple[int, int] | None:
        """``(start, end)`` of the first maximal run of ``chars`` at least ``least`` long
        starting at or after ``position``, else ``None``."""
        mapped = self.map(chars)
        start = mapped.find(b"x" * least, position)
        if start < 0:
            return None
        end = mapped.find(b".", start + least)
        return start, len(mapped) if end < 0 else end

    def runs(self, chars: str, least: int, most: int = 0) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each maximal run of ``chars`` at least ``least`` long; with
        ``most``, a longer run is given in pieces of ``most`` (the last may be shorter
        than ``least`` and is dropped), as a bounded expression would take it."""
        mapped = self.map(chars)
        needle = b"x" * least
        position = 0
        while (start := mapped.find(needle, position)) >= 0:
            end = mapped.find(b".", start + least)
            end = len(mapped) if end < 0 else end
            if most:
                for piece in range(start, end, most):
                    if min(end, piece + most) - piece >= least:
                        yield piece, min(end, piece + most)
            else:
                yield start, end
            position = end


class Needles:
    """The next place a text holds any of a few literals, by ``str.find`` per literal
    (an alternation in :mod:`re` tries every position at regex speed).

    Each literal's next hit waits in a heap and is searched again only once passed, so a
    scan over the whole text reads it once per literal, and each hit costs O(log n)."""

    __slots__ = ("_heap", "_text")

    def __init__(self, needles: tuple[str, ...], text: str) -> None:
        self._text = text
        self._heap: list[tuple[int, int, str]] = []
        for needle in needles:
            at = text.find(needle)
            if at >= 0:
                self._heap.append((at, -len(needle), needle))
        heapq.heapify(self._heap)

    def search(self, position: int) -> tuple[int, int] | None:
        """``(start, end)`` of the first hit at or after ``position`` (the longest literal
        there), else ``None``."""
        heap = self._heap
        while heap and heap[0][0] < position:
            _, _, needle = heap[0]
            at = self._text.find(needle, position)
            if at < 0:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (at, -len(needle), needle))
        if not heap:
            return None
        at, minus, _ = heap[0]
        return at, at - minus
