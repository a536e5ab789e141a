"""A known value XOR-ed with one byte, printed as hex or base64 (SPEC S8; issue 26).

``bytes(b ^ 0x5A for b in value).hex()`` hides the value from every fixed form, and 256
keys times every encoding is too many forms to search for. But the XOR of two
neighbouring bytes does not depend on the key (``(a^k)^(b^k) == a^b``), so the runs of
hex or base64 in a text are decoded (C speed) and their *XOR signature*
(:func:`xor_signature`) is searched for each value's: one needle
per value covers all 256 keys, and the key 0 (the value itself) too.

Only runs long enough to hold a value are decoded: 16 hex digits, 12 base64 characters.
Ordinary prose has few such runs; a text full of them is decoded once, linearly.
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
_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _class_table(members: bytes) -> bytes:
    return bytes(ord("x") if code in members else ord(".") for code in range(256))


_HEX_TABLE = _class_table(_HEX)
_BASE64_TABLE = _class_table(_BASE64)


def runs(text: bytes, table: bytes, least: int) -> Iterator[Span]:
    """Each maximal run of the class ``table`` marks, at least ``least`` long (C ``find``)."""
    mapped = text.translate(table)
    needle = b"x" * least
    start = mapped.find(needle)
    while start != -1:
        end = mapped.find(b".", start + least)
        end = len(mapped) if end == -1 else end
        yield start, end
        start = mapped.find(needle, end)


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
    """Where in ``view`` (letters and digits, separators already dropped) a value XOR-ed
    with any byte sits as hex, at either parity."""
    found: list[Span] = []
    for start, end in runs(view, _HEX_TABLE, 2 * MIN_BYTES):
        for parity in (0, 1):
            first = start + parity
            last = end - (end - first) % 2
            mixed = xor_signature(bytes.fromhex(view[first:last].decode("ascii")))
            for begin, stop in _find(mixed, signatures):
                found.append((first + 2 * begin, first + 2 * (stop + 1)))
    return found


def base64_spans(ascii_text: bytes, signatures: tuple[bytes, ...]) -> list[Span]:
    """Where in ``ascii_text`` (a text with one byte per character) a value XOR-ed with
    any byte sits as base64 (standard or URL-safe), at any of the four alignments."""
    found: list[Span] = []
    for start, end in runs(ascii_text, _BASE64_TABLE, 12):
        chunk = ascii_text[start:end].translate(_URLSAFE)
        for shift in range(4):
            piece = _padded(chunk[shift:])
            mixed = xor_signature(binascii.a2b_base64(piece))
            origin = start + shift
            for begin, stop in _find(mixed, signatures):
                found.append((origin + 4 * begin // 3, origin + -(-4 * (stop + 1) // 3)))
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


__all__ = ["base64_spans", "hex_spans", "runs", "value_signatures", "xor_signature"]
