"""Secrets hidden in an encoding: base64 (standard or URL-safe) and hex of a token.

``c2stcHJvai0...`` is ``sk-proj-...`` in base64. Each run of base64 or hex characters
(bounded: the first :data:`MAX_RUN` of a longer run) is decoded; when the decoded text is
printable and holds a secret, the whole encoded run is hidden. Binary (images, hashes,
commit ids) decodes to unprintable bytes and is left alone.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterator

from tao.redact.marker import Span
from tao.redact.runs import HEX, TOKEN, Classes

#: Shortest run decoded: a token of 20 characters is 28 in base64 and 40 in hex.
MIN_RUN = 24
MAX_RUN = 4_096
MIN_HEX = 40
_URLSAFE = str.maketrans("-_", "+/")
_PRINTABLE = re.compile(r"[\x20-\x7e\t\r\n]*+")

#: Finds secrets in decoded text (the plain scan, not this one again).
Finder = Callable[[str], list[Span]]


def encoded_spans(text: str, find: Finder, classes: Classes | None = None) -> Iterator[Span]:
    """Runs of base64 or hex whose decoded text holds a secret that ``find`` finds.

    Runs are found at C speed (:mod:`tao.redact.runs`); a run longer than
    :data:`MAX_RUN` is decoded in pieces of that length."""
    classes = classes or Classes(text)
    for start, end in classes.runs(TOKEN, MIN_RUN, MAX_RUN):
        run = text[start:end]
        if run.isalpha() or run.isdigit():  # words and numbers are no encoding of a token
            continue
        while end < len(text) and text[end] == "=" and end - start < MAX_RUN + 2:
            end += 1
        decoded = _base64(text[start:end])
        if decoded is not None and find(decoded):
            yield start, end
    for start, end in classes.runs(HEX, MIN_HEX, MAX_RUN):
        run = text[start : end - (end - start) % 2]
        decoded = _text(binascii.unhexlify(run))
        if decoded is not None and find(decoded):
            yield start, end


def _base64(run: str) -> str | None:
    body = run.rstrip("=").translate(_URLSAFE)
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        raw = binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except binascii.Error:
        return None
    return _text(raw)


def _text(raw: bytes) -> str | None:
    """``raw`` as text when it is printable ASCII (a token's encoding), else ``None``."""
    if len(raw) < 16:
        return None
    text = raw.decode("latin-1")
    return text if _PRINTABLE.fullmatch(text) else None
