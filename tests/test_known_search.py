"""The pieces behind a known secret's disguises (SPEC S8, S11; issue 26): the signatures
that one needle per value makes enough for every ROT-n and every one-byte XOR key, and the
one-pass block search, which must find exactly what a ``find`` per form finds."""

from __future__ import annotations

import base64
import random
import string

import pytest

from tao.redact.known_forms import shift_signature, value_forms
from tao.redact.known_search import BLOCKED, Needles, find_all, find_forms
from tao.redact.known_xor import base64_spans, hex_spans, value_signatures, xor_signature


def _rot(text: bytes, shift: int, first: int, size: int) -> bytes:
    return bytes(first + (byte - first + shift) % size for byte in text)


@pytest.mark.parametrize("shift", range(26))
def test_a_letter_signature_is_the_same_for_every_rot_n_S8(shift: int) -> None:
    """ROT-n of lower-case letters keeps the signature; another word does not."""
    letters = b"zqhunterhorsewallet"
    assert shift_signature(_rot(letters, shift, 97, 26), 26) == shift_signature(letters, 26)
    assert shift_signature(b"zqhunterhorsewallez", 26) != shift_signature(letters, 26)


@pytest.mark.parametrize("shift", range(10))
def test_a_digit_signature_is_the_same_for_every_caesar_shift_S8(shift: int) -> None:
    digits = b"4111111111111111"
    assert shift_signature(_rot(digits, shift, 48, 10), 10) == shift_signature(digits, 10)


def test_an_xor_signature_is_the_same_for_every_one_byte_key_S8() -> None:
    data = b"Zq7hunter2horse"
    for key in range(256):
        assert xor_signature(bytes(byte ^ key for byte in data)) == xor_signature(data)


def test_a_uniform_or_short_value_gets_no_xor_signature_S8() -> None:
    """``aaaaaaaaaaaa`` XOR-ed is any run of one byte: hiding it would hide ordinary data."""
    assert value_signatures("aaaaaaaaaaaa") == ()
    assert value_signatures("abababababab") == ()
    assert value_signatures("Zq7") == ()
    assert len(value_signatures("Zq7hunter2horse")) == 1


def test_xor_runs_are_found_at_either_hex_parity_and_every_base64_alignment_S8() -> None:
    data = b"Zq7hunter2horse"
    signatures = value_signatures(data.decode())
    for key in (0x01, 0x5A, 0xFF):
        xored = bytes(byte ^ key for byte in data)
        for prefix in ("", "a", "ab"):
            view = (prefix + xored.hex() + "c").encode()
            assert hex_spans(view, signatures) == [(len(prefix), len(prefix) + 2 * len(data))]
        for head in (b"", b"x", b"xy", b"xyz"):
            text = ("id " + base64.b64encode(head + xored).decode() + " ok").encode()
            spans = base64_spans(text, signatures)
            assert spans, (key, head)
            start, end = spans[0]
            assert 3 <= start < end <= len(text) - 3  # inside the base64, not the words


@pytest.mark.parametrize("seed", range(5))
def test_the_block_search_finds_what_a_find_per_form_finds_S11(seed: int) -> None:
    """Forms of every length, a text full of them at every offset and in either case: the
    one-pass search and a ``find`` per form agree exactly."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    forms = [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 40))).encode()
        for _ in range(120)
    ]
    exact, folded = forms[:60], [form.lower() for form in forms[60:]]
    pieces = []
    for _ in range(200):
        pieces.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))).encode())
        form = rng.choice(forms)
        pieces.append(form.upper() if rng.random() < 0.3 else form)
    view = b"".join(pieces)
    lowered = view.lower()
    needles = Needles.of(exact, folded)
    assert needles.blocks  # enough long forms for the one-pass search
    expected = sorted(set(find_all(view, exact) + find_all(lowered, folded)))
    assert sorted(set(find_forms(view, lowered, needles))) == expected
    assert any(end - start >= BLOCKED for start, end in expected)


def test_every_form_of_a_value_is_at_least_eight_characters_S8() -> None:
    """A shorter form would hide ordinary words."""
    forms = value_forms("p@ss/w0rd:Kx9!")
    for view in (forms.exact, forms.raw, forms.folded, forms.zeroed):
        assert all(len(form) >= 8 for form in view)
