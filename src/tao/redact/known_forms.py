"""What a known secret looks like in disguise, computed once per value (SPEC S5, S8; issue 26).

:mod:`tao.redact.known` finds a registered value verbatim. A test that prints it
base64-encoded twice, in base32 or base85, as hex with ``:`` between bytes, URL-encoded
(``%5A%71…``), reversed, upper-cased, ROT-n, XOR-ed with one byte, deflated, letter by
letter (``Z q 7 h …``) or cut across two JSON string fields
(``{"a": "Zq7hun", "b": "ter2horse"}``) hands it out all the same. No pattern can find
those for an unknown secret, but for a value tao *knows* every such form can be computed
once, when the value is registered, and then searched for like the value itself
(:mod:`tao.redact.known` searches for them, one pass per view of the text).

Every form is *squeezed*: separators carry no secret, so only ASCII letters and digits
are kept (and the ``", "key": "`` glue between two JSON strings is dropped), in the
forms and in the text alike. ``5a:71:37``, ``%5A%71%37``, ``Z-q-7`` and
``"Zq7", "x": "hun"`` all read as the bare run of letters and digits.

A value's forms, by the view of the text they are searched in:

* **exact** (case matters): base64 at every byte alignment (only the characters the value
  alone decides, so it may sit anywhere inside the encoded text), base64 of those
  (twice), reversed base64, base64 of the reversed value and of its hex, base64 of the
  value deflated alone (levels 0-9: raw, zlib and gzip streams all hold the same body).
* **raw** (the text as written, not squeezed: a quarter of base85's alphabet is
  punctuation, so squeezed it would be too short): base85 in its three alphabets
  (Ascii85, RFC 1924 ``b85``, Z85) at every alignment.
* **folded** (the text lower-cased, for forms whose case means nothing): the value,
  reversed, hex (any case, ``\\x`` escapes), URL- and JSON-escaped, ROT13 (every ROT-n
  for a value with too few letters for a signature), base32 (of the value and of its
  hex), hex of its base64 and of its deflate body.
* **zeroed** (the text lower-cased, every digit written ``0``): every ROT-n of a value
  with too few letters for a shift signature, digits turned or not.
* **shift signatures**: the differences between consecutive letters (mod 26) of the
  value's letters, lower-cased; ROT-n for *every* n, with any case, keeps them, and the
  digits between (shifted or not) are skipped. The same for digits (mod 10) when the value
  holds enough of them. Each is one needle however many shifts there are.

A value XOR-ed with one byte is found by its own signature (:mod:`tao.redact.known_xor`).

What this cannot find: a form shorter than 8 letters and digits once squeezed; ciphers
and encodings of the *text around* the value (a value compressed inside a larger text
changes the deflate output around and through it: only a value compressed alone is
found); look-alike letters; letters interleaved with other letters.

    >>> forms = value_forms("Zq7hunter2horse")
    >>> b"zq7hunter2horse" in forms.folded, len(forms.letter_shifts)
    (True, 2)
"""

from __future__ import annotations

import base64
import codecs
import json
import re
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

#: The shortest squeezed form searched for (shorter would hide ordinary words).
MIN_FORM = 8
#: A value's letters (or digits) make a shift signature only when there are this many:
#: fewer would match ordinary words shifted (``cheer`` is ``jolly`` in ROT-7).
MIN_SHIFTED = 10
#: What the squeeze drops: the glue between two JSON strings (``", "key": "``, so a
#: value cut across fields reads whole), and every character but ASCII letters and digits.
GLUE = r'"\s*[,:]\s*(?:"[^"\n]{0,64}"\s*:\s*)?"'
_GLUE_ONLY = re.compile(GLUE)
#: What each view of a text drops, as a pattern over the original text (to map a hit in
#: the view back): the squeeze, and the squeeze keeping letters only or digits only.
DROPPED = re.compile(GLUE + r'|[^A-Za-z0-9"]+|"')
DROPPED_BUT_LETTERS = re.compile(GLUE + r'|[^A-Za-z"]+|"')
DROPPED_BUT_DIGITS = re.compile(GLUE + r'|[^0-9"]+|"')
#: Every byte but ASCII letters and digits (UTF-8 bytes of other characters are >= 0x80).
_NOT_ALNUM = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalnum())
DIGITS = b"0123456789"
#: Lower-cases and writes every digit as ``0``: a view in which digits turned by any n
#: read the same.
ZEROED = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ123456789", b"abcdefghijklmnopqrstuvwxyz000000000"
)
LETTERS = bytes(range(ord("a"), ord("z") + 1)) + bytes(range(ord("A"), ord("Z") + 1))
#: Base85 alphabets in digit order: RFC 1924 (``base64.b85encode``), Ascii85, Z85.
_B85 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_A85 = bytes(range(33, 118))
_Z85 = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


@dataclass(frozen=True)
class ValueForms:
    """One value's squeezed forms, by the view of the text they are searched in."""

    exact: tuple[bytes, ...]
    raw: tuple[bytes, ...]
    folded: tuple[bytes, ...]
    zeroed: tuple[bytes, ...]
    letter_shifts: tuple[bytes, ...]
    digit_shifts: tuple[bytes, ...]


def squeeze(text: str) -> bytes:
    """``text`` with its separators dropped (see the module), as ASCII bytes: one
    ``re.sub`` of the JSON glue (only when there is a quote) and one C ``bytes.translate``."""
    if '"' in text:
        text = _GLUE_ONLY.sub("", text)
    return text.encode("utf-8", "ignore").translate(None, _NOT_ALNUM)


def shift_signature(chars: bytes, modulus: int) -> bytes:
    """The differences (mod ``modulus``) between consecutive bytes of ``chars``, all of one
    class (lower-case letters or digits), one byte each, as ``a``, ``b``…: the same for
    ``chars`` shifted by any n. Linear: three big-integer operations, no Python loop."""
    if len(chars) < 2:
        return b""
    width = len(chars) - 1
    following = int.from_bytes(chars[1:], "big")
    preceding = int.from_bytes(chars[:-1], "big")
    lift = int.from_bytes(bytes([modulus]) * width, "big")  # no byte borrows from its left
    return (following + lift - preceding).to_bytes(width, "big").translate(_residue(modulus))


def _residue(modulus: int) -> bytes:
    """A table mapping ``d + modulus`` (``d`` in ``-modulus+1 … modulus-1``) to ``a + d mod m``."""
    return bytes(ord("a") + (code - modulus) % modulus for code in range(256))


def _aligned(data: bytes, encode: Callable[[bytes], bytes], group: int, bits: int) -> list[bytes]:
    """The characters of ``encode(pad + data)`` set by ``data`` alone, for every padding.

    ``group`` bytes make one block; each output character carries ``bits`` bits. A
    character that mixes a bit of the value with a bit of its neighbours differs from
    text to text, so only the fully determined middle is kept."""
    found: list[bytes] = []
    for pad in range(group):
        encoded = encode(b"\0" * pad + data)
        start = -(-8 * pad // bits)  # ceil
        end = 8 * (pad + len(data)) // bits
        found.append(encoded[start:end])
    return found


def _base64(data: bytes) -> list[bytes]:
    return [base64.b64encode(data), *_aligned(data, base64.b64encode, 3, 6)]


def _base32(data: bytes) -> list[bytes]:
    return _aligned(data, base64.b32encode, 5, 5)


def _base85(data: bytes) -> list[bytes]:
    """Whole base85 groups of ``data`` at every alignment, in the three alphabets: each of
    a group's five characters depends on all four of its bytes, so a group that holds a
    neighbour's byte is dropped."""
    found: list[bytes] = []
    for pad in range(4):
        encoded = base64.b85encode(b"\0" * pad + data)
        first = -(-pad // 4)
        last = (pad + len(data)) // 4
        whole = encoded[5 * first : 5 * last]
        found.extend(whole.translate(bytes.maketrans(_B85, other)) for other in (_A85, _Z85))
        found.append(whole)
    return found


def _deflated(data: bytes) -> list[bytes]:
    """The raw deflate stream of ``data`` at each level (zlib and gzip wrap the same one)."""
    streams: list[bytes] = []
    for level in range(10):
        packer = zlib.compressobj(level, zlib.DEFLATED, -15)
        streams.append(packer.compress(data) + packer.flush())
    return list(dict.fromkeys(streams))


def value_forms(value: str) -> ValueForms:
    """Every squeezed form of ``value`` searched for (computed once per value)."""
    data = value.encode("utf-8")
    squeezed = value.encode("utf-8", "ignore").translate(None, _NOT_ALNUM).lower()
    letters = squeezed.translate(None, DIGITS)
    hexes = [data.hex().encode(), data.hex().upper().encode()]
    once = _base64(data)
    deflated = _deflated(data)
    exact = [
        *once,
        *(form for inner in once for form in _base64(inner)),  # base64 twice
        *(form[::-1] for form in once),  # reversed base64
        *_base64(data[::-1]),
        *(form for text in hexes for form in _base64(text)),  # base64 of the hex
        *(form for stream in deflated for form in _base64(stream)),
    ]
    folded = [
        value.encode("utf-8", "ignore"),
        json.dumps(value)[1:-1].encode(),  # a JSON writer's \u escapes of non-ASCII letters
        value[::-1].encode("utf-8", "ignore"),
        codecs.encode(value, "rot13").encode("utf-8", "ignore"),
        hexes[0],
        data[::-1].hex().encode(),
        "".join(f"x{byte:02x}" for byte in data).encode(),
        quote(value, safe="").encode(),
        quote_plus(value, safe="").encode(),
        *_base32(data),
        *(form for text in hexes for form in _base32(text)),  # base32 of the hex
        *(form.hex().encode() for form in once),  # hex of the base64
        *(stream.hex().encode() for stream in deflated),
    ]
    digits = squeezed.translate(None, LETTERS)
    return ValueForms(
        exact=_kept(form.translate(None, _NOT_ALNUM) for form in exact),
        raw=_kept(_base85(data)),
        folded=_kept(form.translate(None, _NOT_ALNUM).lower() for form in folded),
        zeroed=_kept(form.translate(ZEROED) for form in _rotated(squeezed, letters)),
        letter_shifts=_signatures(letters, 26),
        digit_shifts=_signatures(digits, 10),
    )


def _rotated(squeezed: bytes, letters: bytes) -> list[bytes]:
    """Every ROT-n of a (squeezed, lower-case) value with too few letters for a shift
    signature, forwards and reversed; none otherwise (the signatures find them all)."""
    if len(letters) >= MIN_SHIFTED:
        return []
    lower = b"abcdefghijklmnopqrstuvwxyz"
    turned = [squeezed.translate(bytes.maketrans(lower, lower[n:] + lower[:n])) for n in range(26)]
    return turned + [form[::-1] for form in turned]


def _kept(forms: Iterable[bytes]) -> tuple[bytes, ...]:
    return tuple(dict.fromkeys(form for form in forms if len(form) >= MIN_FORM))


def _signatures(chars: bytes, modulus: int) -> tuple[bytes, ...]:
    """The shift signatures of ``chars`` and of ``chars`` reversed, when long enough."""
    if len(chars) < MIN_SHIFTED:
        return ()
    return tuple(
        dict.fromkeys([shift_signature(chars, modulus), shift_signature(chars[::-1], modulus)])
    )


__all__ = [
    "DIGITS",
    "DROPPED",
    "DROPPED_BUT_DIGITS",
    "DROPPED_BUT_LETTERS",
    "LETTERS",
    "MIN_FORM",
    "MIN_SHIFTED",
    "ZEROED",
    "ValueForms",
    "shift_signature",
    "squeeze",
    "value_forms",
]
