"""Secrets hidden in an encoding: base64 (standard or URL-safe) and hex of a token,
gzip or zlib inside either.

``c2stcHJvai0...`` is ``sk-proj-...`` in base64. Each run of base64 or hex characters
(bounded: the first :data:`MAX_RUN` of a longer run) is decoded; when the decoded text is
printable and holds a secret, the whole encoded run is hidden. Binary (images, hashes,
commit ids) decodes to unprintable bytes and is left alone.
"""

from __future__ import annotations

import binascii
import re
import zlib
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate

from tao.redact.marker import Span
from tao.redact.runs import HEX, TOKEN, Classes

#: Shortest run decoded: a token of 20 characters is 28 in base64 and 40 in hex.
MIN_RUN = 24
MAX_RUN = 4_096
MIN_HEX = 40
#: Between two decodings scanned together: a blank line, which no secret's shape crosses.
_SEPARATOR = "\n\n"
_PRINTABLE = re.compile(r"[\x20-\x7e\t\r\n]*+")
#: ``x`` for each byte :data:`_PRINTABLE` refuses, ``.`` for the others.
_UNPRINTABLE = bytes(
    ord(".") if 0x20 <= code <= 0x7E or code in (9, 10, 13) else ord("x") for code in range(256)
)
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"

#: Finds secrets in decoded text (the plain scan, not this one again).
Finder = Callable[[str], list[Span]]


def encoded_spans(
    text: str, find: Finder, classes: Classes | None = None, covered: Sequence[Span] = ()
) -> Iterator[Span]:
    """Runs of base64 or hex whose decoded text holds a secret that ``find`` finds.

    Runs are found at C speed (:mod:`tao.redact.runs`); a run longer than
    :data:`MAX_RUN` is decoded in pieces of that length. A run inside one of the sorted
    ``covered`` spans (hidden already) is not decoded. Every printable decoding is
    scanned in one call of ``find``, on the decodings joined by blank lines: a text of
    thousands of short encoded words costs one scan of their decodings, not thousands of
    scans (each with its fixed cost; issue 26: 0.4 MB/s before)."""
    classes = classes or Classes(text)
    decoded = _decodings(text, classes, TOKEN, MIN_RUN, covered)
    decoded += _decodings(text, classes, HEX, MIN_HEX, covered)
    if decoded:
        yield from _secret_runs(decoded, find)


def _decodings(
    text: str, classes: Classes, chars: str, least: int, covered: Sequence[Span]
) -> list[tuple[int, int, str]]:
    """Each run of ``chars`` that decodes to printable text, as ``(start, end, text)``.

    Every step works on all runs at once: the runs are found by ``bytes.find`` over the
    class map (:mod:`tao.redact.runs`), decoded by one ``a2b_base64`` or ``unhexlify``
    call, and judged printable by one byte map of the result; what is left per run is a
    list comprehension's step (issue 26 round 6: 4-7 us of Python per run before).

    No block needs a bound on its runs here (:mod:`tao.redact.budget`): a run takes at
    least ``least + 1`` characters, so a 1 KB block starts at most 41 of them."""
    size = len(text)
    runs = list(classes.runs(chars, least))  # bytes.find: an re pass is 3x slower on prose
    if any(end - start > MAX_RUN for start, end in runs):
        runs = [piece for start, end in runs for piece in _pieces(start, end, least)]
    if covered:
        runs = _uncovered(runs, covered, least)
    if chars is HEX:
        return _hex_pieces(text, runs) if runs else []
    letters, digits = classes.map(_LETTERS), classes.map(_DIGITS)
    runs = [  # words and numbers encode no token
        (start, _padded(text, start, end, size) if text.startswith("=", end) else end)
        for start, end in runs
        if letters.find(b".", start, end) >= 0 and digits.find(b".", start, end) >= 0
    ]
    return _base64_pieces(text, runs) if runs else []


def _pieces(start: int, end: int, least: int) -> Iterator[Span]:
    """A run cut into pieces of :data:`MAX_RUN` (a last piece under ``least`` dropped)."""
    for piece in range(start, end, MAX_RUN):
        if min(end, piece + MAX_RUN) - piece >= least:
            yield piece, min(end, piece + MAX_RUN)


def _uncovered(runs: list[Span], covered: Sequence[Span], least: int) -> list[Span]:
    """``runs`` less those inside one of the sorted spans ``covered`` (hidden already); a
    run that starts inside one and goes on past it is kept, and so is its part after it
    (decoded from there, as a run of its own would be)."""
    kept: list[Span] = []
    index, count = 0, len(covered)
    for start, end in runs:
        while index < count and covered[index][1] <= start:
            index += 1
        if index < count and covered[index][0] <= start:
            after = covered[index][1]
            if after >= end:
                continue
            if end - after >= least:
                kept.append((after, end))
        kept.append((start, end))
    return kept


def _padded(text: str, start: int, end: int, size: int) -> int:
    """``end`` carried over the ``=`` padding after a base64 run."""
    while end < size and text[end] == "=" and end - start < MAX_RUN + 2:
        end += 1
    return end


def _hex_pieces(text: str, runs: list[Span]) -> list[tuple[int, int, str]]:
    """Hex runs decoded by one ``unhexlify`` (each run cut to an even length)."""
    lengths = [(end - start) // 2 * 2 for start, end in runs]
    pieces = [text[start : start + n] for (start, _), n in zip(runs, lengths, strict=True)]
    raw = binascii.unhexlify("".join(pieces))
    sizes = [n // 2 for n in lengths]
    return _printable(runs, raw, sizes, sizes)


#: ``A`` (zero bits) to fill a base64 run's last quad, by how many are missing.
_FILL = ("", "A", "AA", "AAA")


def _base64_pieces(text: str, runs: list[Span]) -> list[tuple[int, int, str]]:
    """Base64 runs (standard or URL-safe) decoded by one ``a2b_base64``.

    Padding inside the input would end the decoding, so each run's ``=`` is dropped and
    its last quad filled with ``A`` (zero bits); its own bytes are the first
    ``len * 3 // 4`` of its share, exactly what it decodes to alone. A run of 4n+1
    characters loses its last one, which holds no whole byte."""
    bodies = [text[start:end].rstrip("=") for start, end in runs]
    bodies = [body[:-1] if len(body) % 4 == 1 else body for body in bodies]
    sizes = [len(body) * 3 // 4 for body in bodies]
    filled = [body + _FILL[-len(body) % 4] for body in bodies]
    shares = [len(body) * 3 // 4 for body in filled]
    joined = "".join(filled).replace("-", "+").replace("_", "/")  # URL-safe; 30x translate
    return _printable(runs, binascii.a2b_base64(joined), sizes, shares)


def _printable(
    runs: list[Span], raw: bytes, sizes: list[int], shares: list[int]
) -> list[tuple[int, int, str]]:
    """Each run whose bytes (``sizes[i]`` of them, at the start of its ``shares[i]``
    of ``raw``) are printable text or a gzip/zlib stream of it (see :func:`_text`)."""
    find, offsets = raw.translate(_UNPRINTABLE).find, list(accumulate(shares, initial=0))
    whole = raw.decode("latin-1")
    found = [
        (start, end, whole[at : at + size])
        for (start, end), at, size in zip(runs, offsets, sizes, strict=False)
        if size >= 16 and find(b"x", at, at + size) < 0
    ]
    found.extend(_inflated(runs, raw, offsets, sizes))
    return found


def _inflated(
    runs: list[Span], raw: bytes, offsets: list[int], sizes: list[int]
) -> Iterator[tuple[int, int, str]]:
    """Each run whose bytes are a gzip or zlib stream of printable text."""
    for (start, end), at, size in zip(runs, offsets, sizes, strict=False):
        if raw.startswith(_COMPRESSED, at):
            plain = _text(raw[at : at + size])
            if plain is not None:
                yield start, end, plain


def _secret_runs(decoded: list[tuple[int, int, str]], find: Finder) -> Iterator[Span]:
    """The runs among ``decoded`` whose decoding holds a secret: one ``find`` over all of
    them, each found span mapped back to every run it touches."""
    starts: list[int] = []
    pieces: list[str] = []
    offset = 0
    for _, _, plain in decoded:
        starts.append(offset)
        pieces.append(plain)
        offset += len(plain) + len(_SEPARATOR)
    secret = [False] * len(decoded)
    for span_start, span_end in find(_SEPARATOR.join(pieces)):
        index = bisect_right(starts, span_start) - 1
        while index < len(decoded) and starts[index] < span_end:
            secret[index] = True
            index += 1
    for (start, end, _), hit in zip(decoded, secret, strict=True):
        if hit:
            yield start, end


#: Bytes a gzip or zlib stream starts with, and how much of one is inflated at most.
_COMPRESSED = (b"\x1f\x8b", b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda")
_INFLATED = 16_384


def _text(raw: bytes) -> str | None:
    """``raw`` as text when it is printable ASCII (a token's encoding), else ``None``;
    a gzip or zlib stream (``H4sI…``, ``eJ…``) is inflated first, to a bounded size."""
    if raw.startswith(_COMPRESSED):
        try:  # wbits 47: gzip or zlib header, whichever it is
            raw = zlib.decompressobj(47).decompress(raw, _INFLATED)
        except zlib.error:
            return None
    if len(raw) < 16:
        return None
    text = raw.decode("latin-1")
    return text if _PRINTABLE.fullmatch(text) else None
