"""Red team, secrets and output channels, round 2 (SPEC S5, S8, S11; issue 26 item 4).

Variants invented for this round: a token wrapped early (a line break before its 16th
character), encodings that must keep holding, and text that must stay readable. Shapes
only: none of these is a real credential.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import uuid

import pytest

from tao.redact import redact

OPENAI = "sk-proj-" + "Qw7Er9Ty" * 6
GITHUB = "ghp_" + "Zx8Cv6Bn4M" * 4
TOKENS = [OPENAI, GITHUB]


def leaks(text: str, secret: str) -> bool:
    """Whether any 8-character piece of ``secret`` past its prefix is still readable."""
    shown = redact(text)
    return any(secret[i : i + 8] in shown for i in range(4, len(secret) - 8))


@pytest.mark.parametrize("secret", TOKENS)
@pytest.mark.parametrize("cut", [8, 10, 12, 15])
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\n    "])
def test_a_token_wrapped_before_its_16th_character_is_hidden(
    secret: str, cut: int, newline: str
) -> None:
    """S5: a key wrapped by a narrow terminal or a log wrapper at 8 to 15 columns is
    still the key; the joint is removed and the whole token hidden."""
    text = f"key:\n{secret[:cut]}{newline}{secret[cut:]}\nnext line"
    assert leaks(text, secret) is False


def test_a_token_wrapped_early_in_a_real_process_output_is_hidden() -> None:
    """S5: the bytes a real child prints (the tool's observation) with a token cut at 10."""
    code = f"print({OPENAI[:10]!r}); print({OPENAI[10:]!r})"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert OPENAI[12:20] in out  # the child really printed it
    assert leaks(out, OPENAI) is False


@pytest.mark.parametrize("secret", TOKENS)
def test_encodings_that_held_keep_holding(secret: str) -> None:
    """S5: base64, URL-safe base64 without padding, hex, percent-escapes, HTML entities,
    backslash escapes, quoted-printable and base64 wrapped at 76 columns stay hidden."""
    raw = secret.encode()
    wrapped = base64.b64encode(raw * 3).decode()
    variants = [
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(),
        raw.hex().upper(),
        "".join(f"%{c:02X}" for c in raw),
        "".join(f"&#{c};" for c in raw),
        "".join(f"\\x{c:02x}" for c in raw),
        "\n".join(wrapped[i : i + 76] for i in range(0, len(wrapped), 76)),
        f"ValueError: bad key {secret!r}",
        secret[:8] + "\u200b" + secret[8:],
    ]
    for text in variants:
        shown = redact(text)
        assert shown != text, text


def test_hashes_uuids_code_and_prose_on_short_lines_stay_readable() -> None:
    """S8: the shorter joint must not glue ordinary short lines into a 'token': sha256
    listings, git ids, UUIDs, identifiers and paths one per line read as before."""
    texts = [
        "\n".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(30)),
        "\n".join(hashlib.sha1(str(i).encode()).hexdigest() for i in range(30)),
        "\n".join(str(uuid.UUID(int=i * 7919 + 1)) for i in range(30)),
        "commit_abcdefgh\nanother_line_here\nsome_identifier_x\nmore_identifier_y\n",
        "src/tao/redact\ntests/security\nnode_modules/package\n",
        "The quick brown fox\njumps over the lazy\ndog, as prose does.\n",
    ]
    for text in texts:
        assert redact(text) == text


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else c for c in text)


@pytest.mark.parametrize("secret", TOKENS)
def test_a_token_in_full_width_octal_or_with_a_terminal_escape_inside_is_hidden(
    secret: str,
) -> None:
    """S5: what a terminal or a reader still reads as the token: full-width ASCII with
    its dash or underscore (``ｓｋ－``, ``ｇｈｐ＿``), octal escapes (``\\163\\153``), an
    SGR escape (``\\x1b[0m``) or a cursor move cut into it."""
    variants = [
        _fullwidth(secret),
        "".join(f"\\{c:03o}" for c in secret.encode()),
        secret[:8] + "\x1b[0m" + secret[8:],
        secret[:5] + "\x1b[1;31m" + secret[5:12] + "\x1b[2K" + secret[12:],
    ]
    for text in variants:
        assert redact(text) != text, text


def test_full_width_prose_octal_modes_and_colours_stay_readable() -> None:
    """S8: CJK punctuation, ``chmod \\755``-like text and coloured output hold no secret."""
    texts = [
        "你好，世界（测试）！ｈｅｌｌｏ",
        "mode \\755 and \\644 on files",
        "\x1b[32mPASSED\x1b[0m tests/test_a.py::test_one",
    ]
    for text in texts:
        assert redact(text) == text
