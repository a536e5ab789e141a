"""What goes between a fence's marks: untrusted text that cannot close the fence (SPEC S4).

A fence (``<data source=… id=…>`` … ``</data id=…>``, :func:`tao.protocol.prompts.fence`)
holds only if nothing inside it reads as its closing mark. Its id is no secret (it is
derived from the text), so the defence is escaping: every start of something a model
could read as ``</data`` gets a backslash (``<\\/data``). "Could read as" is the hard
part; a model reads through what a byte comparison does not:

* invisible characters (zero-width space and joiner, BOM, soft hyphen, bidi controls, tag
  characters, variation selectors): removed from the text first (:func:`~tao.lookalikes.visible`);
* compatibility forms (full-width ``＜／ｄａｔａ``), case and combining marks: each
  character is compared in NFKC, casefolded, without its marks;
* look-alikes (``‹`` for ``<``, ``∕`` for ``/``, Cyrillic ``а`` for ``a``): compared by
  their UTS #39 skeleton (:func:`~tao.lookalikes.skeleton`);
* spaces anywhere in the mark, and ``<`` written as an HTML entity or an escape
  (``&lt;``, ``&#60;``, ``\\u003c``, ``%3C``).

After each ``<`` (or stand-in) a bounded look-ahead is folded to ASCII, one character
for one, and matched against ``/data``: linear in the text (SPEC L14).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from tao.lookalikes import prototypes, visible

#: Between the letters of a mark: spaces, and the combining marks of the main blocks (a
#: ``d`` with a dot above still reads as ``d``).
_GAP = r"[\s\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]*"
#: ``/data`` and a boundary after a ``<``, spaces and marks anywhere; matched on a
#: :func:`_shadow` of what follows the ``<``, where look-alikes are ASCII.
_TAIL = re.compile(rf"{_GAP}/{_GAP}d{_GAP}a{_GAP}t{_GAP}a(?!\w)", re.IGNORECASE)
#: A start of ``_TAIL`` that runs to the end of the look-ahead: taken for a mark too.
_PARTIAL = re.compile(
    rf"{_GAP}(?:/{_GAP}(?:d{_GAP}(?:a{_GAP}(?:t{_GAP}(?:a{_GAP})?)?)?)?)?", re.IGNORECASE
)
#: The ASCII characters that may follow a ``<`` in a closing mark (or nothing).
_STARTS = frozenset("/ \t\n\r\f\v")
#: How far after a ``<`` a mark is looked for: bounded, so the cost stays linear.
_LOOKAHEAD = 32
#: The ASCII characters of a closing mark, which look-alikes are folded to.
_MARK_CHARS = frozenset("</dat")
#: Blocks whose compatibility forms (NFKC) are letters or punctuation: full-width forms,
#: letter-like symbols, circled and squared letters, mathematical alphanumerics.
_COMPAT_BLOCKS = (
    (0x2100, 0x214F),
    (0x24B6, 0x24E9),
    (0xFE50, 0xFE6B),
    (0xFF01, 0xFF5E),
    (0x1D400, 0x1D7FF),
    (0x1F130, 0x1F189),
)


@cache
def _folds() -> dict[int, str]:
    """Non-ASCII characters that read as a character of ``</data``, each to that ASCII
    character: one for one, so positions in the shadow are positions in the text."""
    table: dict[int, str] = {}
    for code, target in prototypes().items():
        folded = target.casefold()
        if code > 0x7F and folded in _MARK_CHARS:
            table[code] = folded
    for low, high in _COMPAT_BLOCKS:
        for code in range(low, high + 1):
            folded = unicodedata.normalize("NFKC", chr(code)).casefold()
            folded = prototypes().get(ord(folded), folded) if len(folded) == 1 else folded
            if folded in _MARK_CHARS:
                table[code] = folded
    for char in "\u3008\u27e8\u2329\u29fc\u226e\u276c\u2991\u29c0":  # angle brackets
        table[ord(char)] = "<"
    return table


@cache
def _openers() -> re.Pattern[str]:
    """Where a closing mark may start: ``<`` or a character read as one, or ``<`` as
    markup and code escape it (``&lt;``, ``&#60;``, ``\\u003c``, ``%3C``)."""
    stand_ins = sorted(code for code, to in _folds().items() if to == "<")
    bmp = "".join(re.escape(chr(code)) for code in stand_ins if code <= 0xFFFF)
    astral = "".join(f"|{re.escape(chr(code))}" for code in stand_ins if code > 0xFFFF)
    # a BMP class is a bitmap; astral characters and case-insensitivity cost a slow path
    # on every character, so they are alternatives of their own
    return re.compile(rf"[<{bmp}]|(?i:&(?:lt|\#0*60|\#x0*3c);?|\\(?:u003c|x3c)|%3c){astral}")


def _shadow(text: str) -> str:
    """``text`` with every look-alike of a mark character replaced by it (same length)."""
    return text if text.isascii() else text.translate(_folds())


def _closes(text: str) -> bool:
    """Whether ``text`` (what follows a ``<``, at most the look-ahead) reads as the rest
    of a closing mark."""
    if text[:1].isascii() and text[:1] not in _STARTS:  # most ``<``: a tag, a comparison
        return False
    window = _shadow(text[:_LOOKAHEAD])
    if _TAIL.match(window):
        return True
    return len(text) > _LOOKAHEAD and _PARTIAL.fullmatch(window) is not None


def fenced_body(text: str) -> str:
    """``text`` ready to go between a fence's marks: without invisible characters, and
    with a backslash after every ``<`` (or look-alike) that starts a closing mark."""
    body = visible(text)
    if body.isascii() and not any(char in body for char in "<&%\\"):
        return body
    parts: list[str] = []
    last = 0
    for found in _openers().finditer(body):
        end = found.end()
        if _closes(body[end : end + _LOOKAHEAD + 1]):
            parts += [body[last:end], "\\"]
            last = end
    if not parts:
        return body
    parts.append(body[last:])
    return "".join(parts)
