"""Unit tests of :mod:`tao.lookalikes`: invisible characters and UTS #39 skeletons (SPEC S4)."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from tao.lookalikes import is_invisible, name_problem, skeleton, visible


def test_every_format_character_of_this_python_is_invisible() -> None:
    """The written-out ranges cover general category Cf of the running Python's Unicode
    (a newer Unicode adding one fails here, not silently in a fence)."""
    missing = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) == "Cf" and not is_invisible(chr(code))
    ]
    assert missing == []


@pytest.mark.parametrize(
    "char", ["\u034f", "\u115f", "\u3164", "\ufe0f", "\U000e0100", "\u180b", "\x1b", "\x85"]
)
def test_default_ignorables_and_controls_are_invisible_too(char: str) -> None:
    assert is_invisible(char) and visible(f"a{char}b") == "ab"


def test_visible_keeps_text_whitespace_and_scripts() -> None:
    text = "tab\tnew\nline\r\n — ärende, дата, データ, 😀"
    assert visible(text) == text


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("read_fiIe", "read_file"),
        ("re\u0430d_file", "read_file"),
        ("rn", "m"),
        ("0", "O"),
        ("\u2039", "<"),
        ("\u2215", "/"),
        ("pa\u03c1a", "papa"),
    ],
)
def test_lookalikes_share_a_skeleton(one: str, other: str) -> None:
    assert skeleton(one) == skeleton(other)


@pytest.mark.parametrize(("one", "other"), [("read_file", "read_files"), ("i", "l")])
def test_different_names_keep_different_skeletons(one: str, other: str) -> None:
    assert skeleton(one) != skeleton(other)


def test_name_problem_names_the_character() -> None:
    assert name_problem("read_file") is None
    problem = name_problem("read\u200bfile")
    assert problem is not None and "U+200B ZERO WIDTH SPACE" in problem
    assert "an invisible" in problem
