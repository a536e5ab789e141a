"""A known secret in disguise: encoded, reversed, spaced out or split (SPEC S5, S8; issue 26).

:mod:`tao.redact.known` finds a registered value verbatim. A test that prints it
base64-encoded twice, in base32, as hex with ``:`` between bytes, URL-encoded
(``%5A%71…``), reversed, letter by letter (``Z q 7 h …``) or cut across two JSON string
fields (``{"a": "Zq7hun", "b": "ter2horse"}``) hands it out all the same. No pattern can
find those for an unknown secret, but for a value tao *knows* every such form can be
computed once, when the value is registered, and then searched for like the value itself.

Two steps keep this linear in the text:

* **Squeeze.** Separators carry no secret: the text is searched with every character but
  ASCII letters and digits removed (and the ``", "key": "`` between two JSON strings),
  so ``5a:71:37``, ``%5A%71%37``, ``Z-q-7`` and ``"Zq7", "x": "hun"`` all read as the
  bare run of letters and digits. One regular-expression substitution (C speed).
* **Forms.** Each value's forms are squeezed the same way, once: the value, reversed,
  ROT13, JSON-escaped (``\\u00dc``); hex (lower, upper, ``\\x`` escapes); URL-encoded;
  base64 and base32 at every byte alignment (the characters that depend on the value
  alone, so the value may sit anywhere inside the encoded text), and base64 of those
  base64 forms (encoded twice). Each is found with ``str.find``.

The squeezed text is mapped back to the original only when a form is found (rare: a
hit is a leak), so ordinary text pays one substitution and a few ``find`` calls, and
nothing at all while no value is registered.

What this cannot find: a form shorter than 8 letters and digits once squeezed; ciphers
and encodings of the *text around* the value (gzip, base64 of a whole JSON document
that holds the value at an odd offset is found; compressed is not); a value split
across two observations or two channels; look-alike letters.

    >>> forms = value_forms("Zq7hunter2horse")
    >>> form_spans("id: 5a:71:37:68:75:6e:74:65:72:32:68:6f:72:73:65 ok", forms)
    [(4, 48)]
    >>> form_spans('{"a": "Zq7hun", "b": "ter2horse"}', forms)
    [(7, 31)]
"""

from __future__ import annotations

import base64
import codecs
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from urllib.parse import quote, quote_plus

#: ``(start, end)`` in a text (the same as :data:`tao.redact.marker.Span`; not imported,
#: so this leaf adds no link to the import chain).
Span = tuple[int, int]


#: The shortest squeezed form searched for (shorter would hide ordinary words).
MIN_FORM = 8
#: What the squeeze drops: the glue between two JSON strings (``", "key": "``, so a
#: value cut across fields reads whole), and every character but ASCII letters and digits.
_GLUE = r'"\s*[,:]\s*(?:"[^"\n]{0,64}"\s*:\s*)?"'
_DROP = re.compile(_GLUE + r'|[^A-Za-z0-9"]+|"')
_GLUE_ONLY = re.compile(_GLUE)
#: Every byte but ASCII letters and digits (UTF-8 bytes of other characters are >= 0x80).
_NOT_ALNUM = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalnum())


def squeeze(text: str) -> str:
    """``text`` with its separators dropped (see the module); the same as
    ``_DROP.sub("", text)``, but the per-character work is one C ``bytes.translate``."""
    if '"' in text:
        text = _GLUE_ONLY.sub("", text)
    flat = text.encode("utf-8", "ignore").translate(None, _NOT_ALNUM)
    return flat.decode("ascii")


def _aligned(data: bytes, encode: Callable[[bytes], bytes], group: int, bits: int) -> list[str]:
    """The characters of ``encode(pad + data)`` set by ``data`` alone, for every padding.

    ``group`` bytes make one block; each output character carries ``bits`` bits. A
    character that mixes a bit of the value with a bit of its neighbours differs from
    text to text, so only the fully determined middle is kept."""
    found: list[str] = []
    for pad in range(group):
        encoded = encode(b"\0" * pad + data).decode("ascii")
        start = -(-8 * pad // bits)  # ceil
        end = 8 * (pad + len(data)) // bits
        found.append(encoded[start:end])
    return found


def _base64(data: bytes) -> list[str]:
    return _aligned(data, base64.b64encode, 3, 6)


def _base32(data: bytes) -> list[str]:
    forms = _aligned(data, base64.b32encode, 5, 5)
    return forms + [form.lower() for form in forms]


def value_forms(value: str) -> tuple[str, ...]:
    """Every squeezed form of ``value`` searched for (computed once per value)."""
    data = value.encode("utf-8")
    once = [base64.b64encode(data).decode("ascii"), *_base64(data)]
    twice = [form for inner in once for form in _base64(inner.encode("ascii"))]
    raw = [
        value,
        json.dumps(value)[1:-1],  # a JSON writer's \u escapes of non-ASCII letters
        value[::-1],
        codecs.encode(value, "rot13"),
        data.hex(),
        data.hex().upper(),
        "".join(f"x{byte:02x}" for byte in data),
        "".join(f"x{byte:02X}" for byte in data),
        quote(value, safe=""),
        quote_plus(value, safe=""),
        *once,
        *twice,
        *_base32(data),
    ]
    squeezed = (squeeze(form) for form in raw)
    return tuple(dict.fromkeys(form for form in squeezed if len(form) >= MIN_FORM))


def form_spans(text: str, forms: Iterable[str]) -> list[Span]:
    """Every place in ``text`` (original offsets) where one of ``forms`` appears squeezed."""
    forms = tuple(forms)
    if not forms:
        return []
    hits = find_all(squeeze(text), forms)
    if not hits:
        return []
    kept_at, original_at = _offsets(text)
    return [
        (_original(start, kept_at, original_at), 1 + _original(end - 1, kept_at, original_at))
        for start, end in hits
    ]


def find_all(text: str, needles: Iterable[str]) -> list[Span]:
    """Every place in ``text`` where one of ``needles`` appears (``str.find``, C speed)."""
    spans: list[Span] = []
    for needle in needles:
        start = text.find(needle)
        while start != -1:
            spans.append((start, start + len(needle)))
            start = text.find(needle, start + len(needle))
    return spans


def _offsets(text: str) -> tuple[list[int], list[int]]:
    """For each run of kept characters: where it starts in the squeezed text and in ``text``."""
    kept_at: list[int] = []
    original_at: list[int] = []
    kept = 0
    position = 0
    for drop in _DROP.finditer(text):
        if drop.start() > position:
            kept_at.append(kept)
            original_at.append(position)
            kept += drop.start() - position
        position = drop.end()
    if position < len(text):
        kept_at.append(kept)
        original_at.append(position)
    return kept_at, original_at


def _original(index: int, kept_at: list[int], original_at: list[int]) -> int:
    """The offset in the original text of the squeezed text's character ``index``."""
    run = bisect_right(kept_at, index) - 1
    return original_at[run] + index - kept_at[run]


__all__ = ["MIN_FORM", "Span", "find_all", "form_spans", "squeeze", "value_forms"]
