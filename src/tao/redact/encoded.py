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

from tao.redact.budget import Blocks
from tao.redact.marker import Span
from tao.redact.runs import HEX, TOKEN, Classes

#: Shortest run decoded: a token of 20 characters is 28 in base64 and 40 in hex.
MIN_RUN = 24
MAX_RUN = 4_096
MIN_HEX = 40
#: Runs decoded per 1 KB block before the rest of it is hidden whole (a ``sha256sum``
#: listing holds about 25; :mod:`tao.redact.budget`).
MOST = 48
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
    decoded: list[tuple[int, int, str]] = []
    for chars, least in ((TOKEN, MIN_RUN), (HEX, MIN_HEX)):
        for start, end, plain in _decodings(text, classes or Classes(text), chars, least, covered):
            if plain is None:
                yield start, end  # a block too dense to decode, hidden whole
            else:
                decoded.append((start, end, plain))
    if decoded:
        yield from _secret_runs(decoded, find)


def _decodings(
    text: str, classes: Classes, chars: str, least: int, covered: Sequence[Span]
) -> Iterator[tuple[int, int, str | None]]:
    """Each run of ``chars`` as ``(start, end, decoded text)`` when it decodes to printable
    text, and ``(start, end, None)`` for a block past :data:`MOST` runs, hidden whole.

    The runs are chosen in one tight loop, then decoded together: one ``a2b_base64`` or
    ``unhexlify`` of all of them, and one printable-byte map of the result, so each run
    costs a few C calls instead of a decoding each (issue 26 round 6: 2.4 MB/s before)."""
    runs: list[Span] = []
    for start, end, hidden in _runs(text, classes, chars, least, covered):
        if hidden:
            yield start, end, None
        else:
            runs.append((start, end))
    if runs:
        decode = _hex_pieces if chars is HEX else _base64_pieces
        yield from decode(text, runs)


def _runs(
    text: str, classes: Classes, chars: str, least: int, covered: Sequence[Span]
) -> Iterator[tuple[int, int, bool]]:
    """The runs worth decoding, ``(start, end, False)``, and blocks past :data:`MOST`
    runs, ``(start, end, True)``: runs inside ``covered`` are skipped, runs of only
    letters or only digits (words and numbers encode no token) too, and a base64 run is
    carried over its ``=`` padding."""
    size = len(text)
    blocks = Blocks(text, MOST)
    letters, digits = classes.map(_LETTERS), classes.map(_DIGITS)
    index = 0
    position = 0
    count = len(covered)
    base64 = chars is not HEX
    while (run := classes.run(chars, least, position)) is not None:
        start, end = run[0], min(run[1], run[0] + MAX_RUN)
        position = end
        if end - start < least:
            continue
        while index < count and covered[index][1] < end:
            index += 1
        if index < count and covered[index][0] <= start:
            position = max(position, covered[index][1])  # hidden already: skip it
            continue
        if blocks.full(start):
            hidden = blocks.hide(start)
            position = max(position, hidden[1])
            yield hidden[0], hidden[1], True
            continue
        if base64:
            if letters.find(b".", start, end) < 0 or digits.find(b".", start, end) < 0:
                continue
            while end < size and text[end] == "=" and end - start < MAX_RUN + 2:
                end += 1
        yield start, end, False


def _hex_pieces(text: str, runs: list[Span]) -> Iterator[tuple[int, int, str]]:
    """Hex runs decoded by one ``unhexlify`` (each run cut to an even length)."""
    lengths = [(end - start) // 2 * 2 for start, end in runs]
    pieces = [text[start : start + n] for (start, _), n in zip(runs, lengths, strict=True)]
    raw = binascii.unhexlify("".join(pieces))
    yield from _printable(runs, raw, [n // 2 for n in lengths])


def _base64_pieces(text: str, runs: list[Span]) -> Iterator[tuple[int, int, str]]:
    """Base64 runs (standard or URL-safe) decoded by one ``a2b_base64``.

    Padding inside the input would end the decoding, so each run's ``=`` is dropped and
    its last quad filled with ``A`` (zero bits); its own bytes are the first
    ``len * 3 // 4`` of its share, exactly what it decodes to alone. A run of 4n+1
    characters loses its last one, which holds no whole byte."""
    bodies: list[str] = []
    sizes: list[int] = []
    for start, end in runs:
        body = text[start:end].rstrip("=")
        body = body[: len(body) - 1] if len(body) % 4 == 1 else body
        sizes.append(len(body) * 3 // 4)
        bodies.append(body + "AAA"[: -len(body) % 4])
    joined = "".join(bodies).replace("-", "+").replace("_", "/")  # URL-safe; 30x translate
    raw = binascii.a2b_base64(joined)
    shares = [len(body) * 3 // 4 for body in bodies]
    yield from _printable(runs, raw, sizes, shares)


def _printable(
    runs: list[Span], raw: bytes, sizes: list[int], shares: list[int] | None = None
) -> Iterator[tuple[int, int, str]]:
    """Each run whose bytes (``sizes[i]`` of them, at the start of its ``shares[i]``
    of ``raw``) are printable text (see :func:`_text`), with that text."""
    marks = raw.translate(_UNPRINTABLE)
    offset = 0
    for (start, end), size, share in zip(runs, sizes, shares or sizes, strict=True):
        stop = offset + size
        if size >= 16 and marks.find(b"x", offset, stop) < 0:
            yield start, end, raw[offset:stop].decode("latin-1")
        elif size >= 2 and raw.startswith(_COMPRESSED, offset):
            plain = _text(raw[offset:stop])
            if plain is not None:
                yield start, end, plain
        offset += share


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
