"""Secrets written in escapes or look-alike characters, read as a person would (SPEC S5).

A reader (or a model) decodes ``%67%68%70%5F…``, ``"\\u0067hp_…"``, ``\\x67hp_…`` and
``&#103;&#104;…`` to ``ghp_…`` without effort, and reads ``pаssword=`` (a Cyrillic
``а``), ``ｐａｓｓｗｏｒｄ=`` (full-width) or ``pass\\u200bword=`` (a zero-width space) as
``password=``. No shape matches these as written. :func:`unescaped` builds a *view* of
the text in one pass: percent, ``\\u``, ``\\x``, octal (``\\163``) and HTML numeric
escapes decoded, terminal escapes (``\\x1b[0m``, which a terminal shows as nothing) and
invisible characters (:func:`tao.lookalikes.is_invisible`) dropped, and non-ASCII
characters whose UTS #39 prototype is one ASCII letter or digit (full-width forms,
Cyrillic and Greek look-alikes) folded to it. The plain scan then runs on the view near
each change, and what it finds is hidden in the original, escapes and all.

Bounded: the candidates are found by one regular expression at C speed; past
:data:`MOST` changes in one text, the rest of the text is hidden whole (over-redaction
on a text made of escapes, never a leak and never a slow scan).
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

from tao.lookalikes import is_invisible, prototypes
from tao.redact.marker import Span, merge

#: Changes (decoded escapes, dropped or folded characters) one text may have; past them
#: the rest of the text is hidden whole.
MOST = 100_000
#: Characters of the view scanned on each side of a change: every layer of the plain scan
#: looks at most this far from what it finds (key 100, value and line 1,000).
REACH = 1_100
#: Look-alike and invisible characters are folded in texts up to this length only: the
#: class of them is too large for the engine's fast skip (up to about 1 s per MB of
#: non-ASCII text). Escapes are decoded at any length.
FOLD_CHARS = 100_000

_ESCAPES = (
    r"%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}"
    r"|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,6};"
    # octal escapes (``\163\153``) and terminal escapes inside a token, read as nothing
    r"|\\[0-3][0-7]{2}|\x1b\[[0-9;]{0,16}[A-Za-z]"
)

#: Finds secrets in a stretch of the view (the plain scan).
Finder = Callable[[str], list[Span]]


#: Scripts whose letters a reader takes for Latin ones (UTS #39 prototypes of one letter).
_SCRIPTS = ("CYRILLIC ", "GREEK ", "LATIN ", "ARMENIAN ")
#: Where a look-alike or an invisible character is read as part of an ASCII word: next
#: to an ASCII letter, digit, ``_`` or ``-``. A Russian or Persian word is left alone.
_WORD = "A-Za-z0-9_\\-"


@cache
def _folds() -> dict[str, str]:
    """Non-ASCII BMP characters a reader takes for one ASCII letter or digit (or for
    nothing, the invisible ones): character → its ASCII stand-in, ``""`` for invisible."""
    table = {
        chr(code): target
        for code, target in prototypes().items()
        if 0x80 <= code <= 0xFFFF and len(target) == 1 and target.isascii() and target.isalnum()
        and unicodedata.name(chr(code), "").startswith(_SCRIPTS)
    }  # fmt: skip
    table.update({chr(code): "" for code in range(0x80, 0x10000) if is_invisible(chr(code))})
    return table


#: Full-width ASCII (``ｐａｓｓ``, ``ｓｋ－``, ``ｇｈｐ＿``), folded wherever it stands.
_FULLWIDTH = "\uff01-\uff5e"


@cache
def _runs() -> re.Pattern[str]:
    """Runs of look-alike or invisible characters: one character class, which the regular
    expression engine skips to at C speed (a look-behind first would cost every position)."""
    chars = "".join(re.escape(char) for char in sorted(_folds()))
    return re.compile(f"[{_FULLWIDTH}{chars}]++")


_ESCAPE = re.compile(_ESCAPES)
_WORD_CHAR = re.compile(f"[{_WORD}]")


def _decoded(escape: str) -> str:
    """The character one escape (or one non-ASCII character) stands for, folded."""
    if len(escape) == 1:
        code = ord(escape)
        return chr(code - 0xFEE0) if 0xFF01 <= code <= 0xFF5E else _folds()[escape]
    if escape.startswith("\x1b"):
        return ""  # a terminal escape shows nothing
    if escape[0] == "\\" and escape[1] in "0123":
        return chr(int(escape[1:], 8))
    if escape.startswith("%") or escape.startswith(("\\x", "\\u")):
        char = chr(int(escape[2:] if escape[0] == "\\" else escape[1:], 16))
    else:
        body = escape[2:-1]
        code = int(body[1:], 16) if body[:1] in "xX" else int(body)
        char = chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
    return _folds().get(char, char) if not char.isascii() else char


@dataclass(slots=True)
class View:
    """``text`` as read (see the module docstring), and where it differs from the original.

    ``at[i]`` is a position in :attr:`text` whose character stands for the original's
    ``start[i]:end[i]``; every other character maps one to one."""

    text: str
    at: list[int]
    start: list[int]
    end: list[int]
    #: Where the original stopped being read (past :data:`MOST` changes), else ``None``.
    cut: int | None = None

    def original(self, span: Span) -> Span:
        """The span of the original text that ``span`` of the view covers."""
        return self._position(span[0], start=True), self._position(span[1] - 1, start=False)

    def _position(self, position: int, *, start: bool) -> int:
        index = bisect_right(self.at, position) - 1
        if index < 0:
            return position if start else position + 1
        if self.at[index] == position:
            return self.start[index] if start else self.end[index]
        moved = self.end[index] + (position - self.at[index] - 1)
        return moved if start else moved + 1


def _changes(text: str) -> Iterator[tuple[int, int, str]]:
    """Each escape or character a reader reads otherwise: where, and what it reads as,
    in the order of the text. A look-alike or invisible run counts only next to an ASCII
    word character (full-width letters and digits count anywhere)."""
    escapes = ((m.start(), m.end(), _decoded(m.group())) for m in _ESCAPE.finditer(text))
    if len(text) > FOLD_CHARS or text.isascii():
        yield from escapes
    else:
        yield from heapq.merge(escapes, _folded(text))


def _folded(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _runs().finditer(text):
        start, end = match.span()
        near = (start and _WORD_CHAR.match(text, start - 1)) or _WORD_CHAR.match(text, end)
        for offset, char in enumerate(match.group(), start=start):
            if near or 0xFF01 <= ord(char) <= 0xFF5E:
                yield offset, offset + 1, _decoded(char)


def may_be_escaped(text: str) -> bool:
    """Whether ``text`` has anything :func:`unescaped` would change (a few ``str.find``)."""
    return not text.isascii() or "%" in text or "\\" in text or "&#" in text or "\x1b" in text


def unescaped(text: str) -> View | None:
    """The view of ``text``, or ``None`` when a reader would read it as written (most texts)."""
    if not may_be_escaped(text):
        return None
    pieces: list[str] = []
    view = View("", [], [], [])
    last = length = 0
    for start, end, char in _changes(text):
        if len(view.at) >= MOST:
            view.cut = start
            break
        pieces.append(text[last:start])
        length += start - last
        last = end
        if char:
            pieces.append(char)
            view.at.append(length)
            view.start.append(start)
            view.end.append(end)
            length += 1
        elif length and view.at and view.at[-1] == length - 1:
            view.end[-1] = end  # dropped: the character before it now covers it
        elif length:
            view.at.append(length - 1)
            view.start.append(start - 1)
            view.end.append(end)
        else:
            pieces.append(text[start:end])  # nothing before it to carry it: kept
            length += end - start
    if not view.at:
        return None
    pieces.append(text[last : view.cut if view.cut is not None else len(text)])
    view.text = "".join(pieces)
    return view


def unescaped_spans(text: str, find: Finder) -> Iterator[Span]:
    """Spans of ``text`` hiding a secret that ``find`` finds only in its view."""
    view = unescaped(text)
    if view is None:
        return
    windows = merge((max(0, at - REACH), min(len(view.text), at + REACH + 1)) for at in view.at)
    for low, high in windows:
        for start, end in find(view.text[low:high]):
            yield view.original((low + start, low + end))
    if view.cut is not None:
        yield view.cut, len(text)
