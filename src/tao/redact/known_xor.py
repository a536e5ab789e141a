"""A known value XOR-ed with one byte, printed as hex or base64 (SPEC S8; issue 26).

``bytes(b ^ 0x5A for b in value).hex()`` hides the value from every fixed form, and 256
keys times every encoding is too many forms to search for. But the XOR of two
neighbouring bytes does not depend on the key (``(a^k)^(b^k) == a^b``), so the runs of
hex or base64 in a text are decoded (C speed) and their *XOR signature*
(:func:`xor_signature`) is searched for each value's: one needle
per value covers all 256 keys, and the key 0 (the value itself) too.

The whole text is decoded at once, its other characters read as ``0`` (hex) or ``A``
(base64), in one C call per alignment, and a hit counts only where the text really holds
an unbroken run: no Python loop per run, so a text of 30,000 short hex lines costs what
one long one does. Text without a run long enough to hold a value (16 hex digits, 11
base64 characters) is not decoded at all.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterator

#: ``(start, end)`` in a text.
Span = tuple[int, int]

#: The shortest value given a signature (in bytes), as for every other form.
MIN_BYTES = 8
#: A value's bytes make an XOR signature only when it holds this many different
#: differences (``aaaaaaaa`` XOR-ed is any run of one repeated byte).
MIN_KINDS = 4

_HEX = b"0123456789abcdefABCDEF"
_BASE64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"


def _class_table(members: bytes) -> bytes:
    """``x`` for each byte of ``members``, ``.`` for any other."""
    return bytes(ord("x") if code in members else ord(".") for code in range(256))


def _reading(kept: bytes, other: bytes, renamed: bytes = b"", to: bytes = b"") -> bytes:
    """A table keeping ``kept``, turning ``renamed`` into ``to``, any other byte ``other``."""
    table = bytearray(other * 256)
    for code in kept:
        table[code] = code
    for old, new in zip(renamed, to, strict=True):
        table[old] = new
    return bytes(table)


_HEX_TABLE = _class_table(_HEX)
_BASE64_TABLE = _class_table(_BASE64)
#: The whole text read as hex (or base64): its other characters as ``0`` (or ``A``), so it
#: decodes in one C call; a hit is kept only where the text really holds a run.
_AS_HEX = _reading(b"0123456789abcdef", b"0")
_AS_BASE64 = _reading(_BASE64[:-2] + b"+/", b"A", b"-_", b"+/")
#: The shortest base64 run that can hold a value of :data:`MIN_BYTES`.
_BASE64_RUN = 11


def xor_signature(data: bytes) -> bytes:
    """The XOR of consecutive bytes of ``data``: the same for ``data`` XOR-ed with any
    one-byte key. Linear: two big-integer operations, no Python loop."""
    if len(data) < 2:
        return b""
    mixed = int.from_bytes(data[1:], "big") ^ int.from_bytes(data[:-1], "big")
    return mixed.to_bytes(len(data) - 1, "big")


def value_signatures(value: str) -> tuple[bytes, ...]:
    """The XOR signature searched for ``value`` (none when too short or too uniform)."""
    signature = xor_signature(value.encode("utf-8"))
    if len(signature) + 1 < MIN_BYTES or len(set(signature)) < MIN_KINDS:
        return ()
    return (signature,)


def hex_spans(view: bytes, signatures: tuple[bytes, ...]) -> list[Span]:
    """Where in ``view`` (lower-case letters and digits, separators dropped) a value
    XOR-ed with any byte sits as hex, at either parity."""
    classes = view.translate(_HEX_TABLE)
    if not signatures or classes.find(b"x" * 2 * MIN_BYTES) == -1:
        return []
    digits = view.translate(_AS_HEX)  # every other character reads as 0: one decode
    found: list[Span] = []
    for parity in (0, 1):
        whole = digits[parity : parity + (len(digits) - parity) // 2 * 2]
        mixed = xor_signature(bytes.fromhex(whole.decode("ascii")))
        for begin, stop in _find(mixed, signatures):
            span = (parity + 2 * begin, parity + 2 * (stop + 1))
            if classes.find(b".", *span) == -1:  # all of it hex in the text
                found.append(span)
    return found


def base64_spans(ascii_text: bytes, signatures: tuple[bytes, ...]) -> list[Span]:
    """Where in ``ascii_text`` (a text with one byte per character) a value XOR-ed with
    any byte sits as base64 (standard or URL-safe), at any of the four alignments."""
    classes = ascii_text.translate(_BASE64_TABLE)
    if not signatures or classes.find(b"x" * _BASE64_RUN) == -1:
        return []
    sextets = ascii_text.translate(_AS_BASE64)  # every other character reads as A
    found: list[Span] = []
    for shift in range(4):
        mixed = xor_signature(binascii.a2b_base64(_padded(sextets[shift:])))
        for begin, stop in _find(mixed, signatures):
            span = (shift + 4 * begin // 3, shift + -(-4 * (stop + 1) // 3))
            if classes.find(b".", *span) == -1:
                found.append(span)
    return found


def _padded(piece: bytes) -> bytes:
    """``piece`` cut or padded to whole base64 groups, so its last bytes are decoded too."""
    extra = len(piece) % 4
    if extra == 1:
        return piece[:-1]
    return piece + b"=" * ((4 - extra) % 4)


def _find(haystack: bytes, needles: tuple[bytes, ...]) -> Iterator[Span]:
    for needle in needles:
        at = haystack.find(needle)
        while at != -1:
            yield at, at + len(needle)
            at = haystack.find(needle, at + 1)


__all__ = ["base64_spans", "hex_spans", "value_signatures", "xor_signature"]
