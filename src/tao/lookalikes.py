"""Text that looks like something it is not: invisible characters and look-alikes (SPEC S4).

Three defences share this module, because they fail the same way: what the model or a
person *sees* differs from the code points tao compares.

* :func:`visible` drops characters that render as nothing (format characters such as
  zero-width spaces, bidi controls, tag characters, variation selectors, controls), so
  untrusted text cannot hide a mark inside a fence (issue 26).
* :func:`skeleton` is the UTS #39 skeleton: two strings that look alike have the same
  one (``read_fiIe`` and ``read_file``; Cyrillic ``а`` and Latin ``a``). It reads the
  official ``confusables.txt`` shipped as package data.
* :func:`name_problem` says why a tool name is not plain ASCII: tool names must be
  (single script by construction), so no tool can pass for another.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from importlib import resources

#: Format (Cf) and default-ignorable code points, by range (Unicode 15.1, DerivedCoreProperties
#: ``Default_Ignorable_Code_Point`` plus general category Cf), and the C0/C1 controls except
#: tab and newlines. Written out: scanning all of Unicode for them costs a second at start-up.
_INVISIBLE_RANGES = (
    (0x00, 0x08),
    (0x0B, 0x0C),
    (0x0E, 0x1F),
    (0x7F, 0x9F),
    (0xAD, 0xAD),
    (0x34F, 0x34F),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)


def _class(ranges: tuple[tuple[int, int], ...]) -> re.Pattern[str]:
    return re.compile("[" + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges) + "]")


# Three classes, not one: a class of BMP characters compiles to a bitmap, one with astral
# ranges to a list scanned for every character (ten times slower on every observation).
_CONTROLS = _class(tuple(r for r in _INVISIBLE_RANGES if r[1] <= 0x7F))
_INVISIBLE_BMP = _class(tuple(r for r in _INVISIBLE_RANGES if r[1] <= 0xFFFF))
_INVISIBLE_ASTRAL = _class(tuple(r for r in _INVISIBLE_RANGES if r[0] > 0xFFFF))
_ASTRAL = re.compile("[\\U00010000-\\U0010ffff]")


def is_invisible(char: str) -> bool:
    """Whether ``char`` renders as nothing (or moves text around) where it stands."""
    pattern = _INVISIBLE_ASTRAL if ord(char) > 0xFFFF else _INVISIBLE_BMP
    return pattern.fullmatch(char) is not None


def visible(text: str) -> str:
    """``text`` without the characters :func:`is_invisible` names; text without any comes
    back as it is, after a scan or two."""
    if text.isascii():
        return _CONTROLS.sub("", text) if _CONTROLS.search(text) else text
    text = _INVISIBLE_BMP.sub("", text)
    return _INVISIBLE_ASTRAL.sub("", text) if _ASTRAL.search(text) else text


@cache
def prototypes() -> dict[int, str]:
    """``confusables.txt`` as a translation table: code point → its prototype."""
    data = resources.files("tao.tools") / "data" / "confusables.txt"
    table: dict[int, str] = {}
    for line in data.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        source, target, *_ = line.split(";")
        table[int(source, 16)] = "".join(chr(int(code, 16)) for code in target.split())
    return table


def skeleton(text: str) -> str:
    """The UTS #39 skeleton of ``text``: NFD, each character replaced by its prototype,
    NFD again. Equal skeletons mean the two strings can be mistaken for each other."""
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFD", decomposed.translate(prototypes()))


def describe(char: str) -> str:
    """``'а' (U+0430 CYRILLIC SMALL LETTER A)``: a character a message can show safely."""
    name = unicodedata.name(char, "unnamed character")
    shown = repr(char) if char.isprintable() and not is_invisible(char) else "an invisible"
    return f"{shown} (U+{ord(char):04X} {name})"


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a tool, or ``None``: it must be printable ASCII.

    UTS #39 asks identifiers to be single-script; ASCII is the one script every model
    writes and every person reads alike, and it holds no invisible characters, so a
    name like ``reаd_file`` (Cyrillic ``а``) cannot pass for ``read_file``.
    """
    odd = next((char for char in name if not (char.isascii() and char.isprintable())), None)
    if odd is None:
        return None
    return (
        f"the tool name {name!r} holds {describe(odd)}: tool names must be ASCII, so that "
        "no tool can pass for another with look-alike letters (Unicode UTS #39)"
    )
