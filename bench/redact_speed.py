"""Redaction speed on crafted text (SPEC S11; issue 26): MB/s per input shape.

Each input is built to defeat a scanner that backtracks or rescans: long runs of token
characters, thousands of labels, URLs, near-miss token prefixes, no line breaks, nested
quotes, base64 blobs. A linear pass keeps every shape near the same speed.

    .venv/bin/python bench/redact_speed.py            # 10 MB per shape
    .venv/bin/python bench/redact_speed.py --mb 2
"""

from __future__ import annotations

import argparse
import base64
import time
from collections.abc import Callable

from tao.redact import redact

#: One piece of each shape, repeated to the size asked for.
SHAPES: dict[str, Callable[[int], str]] = {
    "prose": lambda n: ("The quick brown fox jumps over the lazy dog. " * (n // 45 + 1))[:n],
    "token run": lambda n: ("aB3" * (n // 3 + 1))[:n],
    "labels": lambda n: ("password=" * (n // 9 + 1))[:n],
    "short labels": lambda n: ("pw: x " * (n // 6 + 1))[:n],
    "assignments": lambda n: ("a=b:c " * (n // 6 + 1))[:n],
    "urls": lambda n: ("://a:b" * (n // 6 + 1))[:n],
    "near-miss prefixes": lambda n: (
        "sk- ghp_ AKIA xoxb- glpat- eyJ AIza npm_ pypi- SG. hf_ -----BEGIN PRIVATE KEY----- "
        * (n // 80 + 1)
    )[:n],
    "nested quotes": lambda n: ('"\'"`key="' * (n // 10 + 1))[:n],
    "base64 blobs": lambda n: base64.b64encode(bytes(range(256)) * (n // 342 + 1)).decode()[:n],
    "env lines": lambda n: ("API_THING=9f8e7d6c5b4a39281706f5e4d3c2b1a0\n" * (n // 43 + 1))[:n],
    "options": lambda n: ("--token x -p y " * (n // 15 + 1))[:n],
}


def measure(text: str) -> float:
    """Seconds to redact ``text`` once."""
    started = time.perf_counter()
    redact(text)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of each input in MB")
    size = int(parser.parse_args().mb * 1_000_000)
    print(f"{'shape':<20} {'seconds':>8} {'MB/s':>8}")
    for name, make in SHAPES.items():
        text = make(size)
        seconds = measure(text)
        print(f"{name:<20} {seconds:>8.3f} {len(text) / 1e6 / seconds:>8.1f}")


if __name__ == "__main__":
    main()
