"""Encoded secrets among many other encoded runs (issue 26 round 6; SPEC S8, S11).

Base64 and hex runs are decoded all at once (one ``a2b_base64`` or ``unhexlify`` of
every run, then cut back into runs). These cases check that cutting: each run is read
as it would be alone, whatever the lengths, padding and alphabet of its neighbours, so
a secret is hidden in any position and its harmless neighbours stay readable.
"""

from __future__ import annotations

import base64
import gzip
import random

import pytest

from tao.redact import redact

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2  # a GitHub token shape


def _neighbours(seed: int, count: int) -> list[str]:
    """Harmless encoded words of every length modulo 4, padded or not, URL-safe or not,
    and runs that decode to binary."""
    rng = random.Random(seed)
    words: list[str] = []
    for index in range(count):
        plain = f"note {index} " + "x" * rng.randrange(12, 40)
        kind = index % 4
        if kind == 0:
            words.append(base64.b64encode(plain.encode()).decode())
        elif kind == 1:
            words.append(base64.urlsafe_b64encode(plain.encode()).decode().rstrip("="))
        elif kind == 2:
            words.append(plain.encode().hex())
        else:
            words.append(base64.b64encode(rng.randbytes(rng.randrange(18, 60))).decode())
    return words


ENCODINGS = {
    "base64": lambda raw: base64.b64encode(raw).decode(),
    "base64 unpadded": lambda raw: base64.b64encode(raw).decode().rstrip("="),
    "url-safe": lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("="),
    "hex": lambda raw: raw.hex(),
    "gzip base64": lambda raw: base64.b64encode(gzip.compress(raw)).decode(),
}


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("position", [0, 1, 7, 38, 79])
@pytest.mark.parametrize("prefix", ["", "k", "ke", "key: "])
def test_an_encoded_token_among_encoded_words_is_hidden_and_they_are_not_S8(
    encoding: str, position: int, prefix: str
) -> None:
    """The token, with 0-5 characters before it (so every alignment of its encoding),
    is hidden at any place among 80 other runs; none of those is hidden with it."""
    words = _neighbours(position, 80)
    secret = ENCODINGS[encoding]((prefix + TOKEN).encode())
    words.insert(position, secret)
    out = redact(" ".join(words))
    assert secret not in out
    assert out.count("[REDACTED]") == 1
    for word in words:
        if word is not secret:
            assert word in out


def test_many_encoded_tokens_each_hidden_in_a_megabyte_of_encoded_words_S11() -> None:
    """Every one of 200 encoded tokens, each different, spread through a megabyte of
    encoded words, is hidden; the words between them stay (a few random ones that end in
    ``=`` read as a label to the next word, and that word is hidden too: accepted)."""
    rng = random.Random(7)
    words = _neighbours(1, 20_000)
    secrets = []
    for index in range(200):
        token = f"ghp_{index:04d}" + "".join(rng.choices("abcdefXYZ0123456789", k=32))
        encode = ENCODINGS[sorted(ENCODINGS)[index % len(ENCODINGS)]]
        secrets.append(encode(token.encode()))
        words.insert(rng.randrange(len(words)), secrets[-1])
    out = redact(" ".join(words))
    assert all(secret not in out for secret in secrets)
    assert len(secrets) <= out.count("[REDACTED]") <= len(secrets) + 20
    kept = set(out.split(" "))
    assert sum(word in kept for word in words) >= len(words) - len(secrets) - 20
