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

from tao.redact.budget import Blocks
from tao.redact.marker import Span

#: ``NAME=VALUE`` (or ``export NAME=VALUE``, ``NAME: VALUE``), alone on its line.
_ENV_LINE = re.compile(
    r"(?m)^[ \t]*+(?:export[ \t]++)?[A-Za-z_][A-Za-z0-9_.\-]{0,100}+[ \t]*+[=:][ \t]*+"
    r"""(["']?+)([A-Za-z0-9+/=_\-.~]{16,1000}+)\1[ \t]*+\r?$"""
)
_PATH = re.compile(r"(?:\.{0,2}/|~/)|.*\.[A-Za-z][A-Za-z0-9]{0,5}\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_PARTS = re.compile(r"[_\-.~/+=]+")
#: Tables for :func:`looks_random`: it judges every env line, in Python (issue 26).
_DIGITS = b"0123456789"
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_N_LOG_N = [0.0] + [n * math.log2(n) for n in range(1, 1_001)]
#: Least entropy (bits per character) of a value taken as random.
MIN_BITS = 3.0
MIN_LENGTH = 16
#: Env lines judged per 1 KB block before the rest of it is hidden whole (a block of
#: short ``NAME=VALUE`` lines holds about 25; :mod:`tao.redact.budget`).
MOST = 32
#: Random values hidden per 1 KB block before the rest of it is hidden whole.
DENSE = 12


def entropy_spans(text: str) -> Iterator[Span]:
    """Values of env-style lines that look random (see :func:`looks_random`)."""
    if "=" not in text and ":" not in text:
        return
    tried, found = Blocks(text, MOST), Blocks(text, DENSE)
    position = 0
    while (match := _ENV_LINE.search(text, position)) is not None:
        position = match.end()
        at = match.start()
        full = tried.full(at)
        random = not full and looks_random(match.group(2))  # judged once per line
        if full or (random and found.full(at)):
            span = tried.hide(at)
            yield span
            position = max(position, span[1])
        elif random:
            yield match.span(2)


@lru_cache(maxsize=2048)
def looks_random(value: str) -> bool:
    """Whether ``value`` reads as a generated secret rather than a word, number or id."""
    if len(value) < MIN_LENGTH or _UUID.fullmatch(value) or _PATH.match(value):
        return False  # a path may hold a random folder name (/tmp/tmpa8Xk2_9q/x.json)
    raw = value.encode("ascii", "replace")  # the env-line expression takes ASCII only
    digits = len(raw) - len(raw.translate(None, _DIGITS))
    letters = len(raw) - len(raw.translate(None, _LETTERS))
    if digits < 2 or letters < 2:  # numbers, or words without digits
        return False
    if all(_wordlike(part) for part in _PARTS.split(value) if part):
        return False  # identifiers and paths: my_service_v2_build_17, /tmp/run-3/x.json
    return bits_per_char(value) >= MIN_BITS


def _wordlike(part: str) -> bool:
    """A word (``alice``, ``Build``, ``JSON``), a short number, or a short lower-case
    name with digits (``v2``, ``py311``): what identifiers are made of; random text mixes
    cases and digits at length."""
    if part.isalpha():
        return part.islower() or part.isupper() or part.istitle()
    if part.isdigit():
        return len(part) <= 4
    return len(part) <= 6 and part.islower()


def bits_per_char(value: str) -> float:
    """Shannon entropy of ``value``'s characters, in bits per character."""
    size = len(value)
    if size > len(_N_LOG_N):
        return -sum(n / size * math.log2(n / size) for n in Counter(value).values())
    # H = log2(size) - sum(n log2 n) / size, the sum from a table (a C-level map). The
    # counts come from str.count per distinct character: env values hold at most ~70
    # distinct ones, and Counter's Python set-up costs more than all of them (issue 26).
    counts = map(value.count, set(value))
    return math.log2(size) - sum(map(_N_LOG_N.__getitem__, counts)) / size
