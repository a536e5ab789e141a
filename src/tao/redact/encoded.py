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
    text, and ``(start, end, None)`` for a block past :data:`MOST` runs, hidden whole."""
    size = len(text)
    blocks = Blocks(text, MOST)
    index = 0
    position = 0
    while (run := classes.run(chars, least, position)) is not None:
        start, end = run[0], min(run[1], run[0] + MAX_RUN)
        position = end
        if end - start < least:
            continue
        while index < len(covered) and covered[index][1] < end:
            index += 1
        if index < len(covered) and covered[index][0] <= start:
            position = max(position, covered[index][1])  # hidden already: skip it
            continue
        if blocks.full(start):
            hidden = blocks.hide(start)
            position = max(position, hidden[1])
            yield hidden[0], hidden[1], None
            continue
        if chars is HEX:
            decoded = _text(binascii.unhexlify(text[start : end - (end - start) % 2]))
        else:
            if text[start:end].isalpha() or text[start:end].isdigit():
                continue  # words and numbers encode no token
            while end < size and text[end] == "=" and end - start < MAX_RUN + 2:
                end += 1
            decoded = _base64(text[start:end])
        if decoded is not None:
            yield start, end, decoded


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


def _base64(run: str) -> str | None:
    body = run.rstrip("=").replace("-", "+").replace("_", "/")  # URL-safe; translate: 30x slower
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        raw = binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except binascii.Error:
        return None
    return _text(raw)


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
