"""Unlabelled secrets in env-style lines: ``FOO=9f8e7d6c5b4a39281706f5e4d3c2b1a0``.

A ``NAME=VALUE`` line whose name says nothing (so :mod:`tao.redact.labels` passes it)
still holds a secret when its value looks random: long, mixing letters and digits, and
of high Shannon entropy. Decided, and tested, as left alone: words and identifiers
(``production``, ``my_service_name``), numbers, versions, dates, paths and URLs, and
UUIDs (identifiers far more often than keys; a UUID-shaped key in a secret-named
variable is still caught by its label).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

from tao.redact.marker import Span

#: ``NAME=VALUE`` (or ``export NAME=VALUE``, ``NAME: VALUE``), alone on its line.
_ENV_LINE = re.compile(
    r"(?m)^[ \t]*+(?:export[ \t]++)?[A-Za-z_][A-Za-z0-9_.\-]{0,100}+[ \t]*+[=:][ \t]*+"
    r"""(["']?+)([A-Za-z0-9+/=_\-.~]{16,1000}+)\1[ \t]*+\r?$"""
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_PARTS = re.compile(r"[_\-.~/+=]+|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
#: Least entropy (bits per character) of a value taken as random.
MIN_BITS = 3.0
MIN_LENGTH = 16


def entropy_spans(text: str) -> Iterator[Span]:
    """Values of env-style lines that look random (see :func:`looks_random`)."""
    if "=" not in text and ":" not in text:
        return
    for match in _ENV_LINE.finditer(text):
        if looks_random(match.group(2)):
            yield match.span(2)


@lru_cache(maxsize=2048)
def looks_random(value: str) -> bool:
    """Whether ``value`` reads as a generated secret rather than a word, number or id."""
    if len(value) < MIN_LENGTH or _UUID.fullmatch(value):
        return False
    digits = sum(char.isdigit() for char in value)
    letters = sum(char.isalpha() for char in value)
    if digits < 2 or letters < 2:  # numbers, or words without digits
        return False
    if all(
        part.isalpha() or (part.isdigit() and len(part) <= 4)
        for part in _PARTS.split(value)
        if part
    ):
        return False  # identifiers: my_service_v2_build_17, release-2024-05-01
    return bits_per_char(value) >= MIN_BITS


def bits_per_char(value: str) -> float:
    """Shannon entropy of ``value``'s characters, in bits per character."""
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())
