"""Redaction speed on crafted text (SPEC S11; issue 26): MB/s per input shape.

Each input is built to defeat a scanner that backtracks or rescans: long runs of token
characters, thousands of labels, URLs, near-miss token prefixes, no line breaks, nested
quotes, base64 blobs, encoded words, wrapped lines; and text full of real-looking secrets,
each one different. A linear pass keeps every shape near the same speed.

    .venv/bin/python bench/redact_speed.py            # 10 MB per shape
    .venv/bin/python bench/redact_speed.py --mb 2 --only options "env lines"

Each shape is redacted ``--repeat`` times (best kept). ``cpu s`` is the process's CPU time,
which a shared, loaded box inflates far less than the wall clock. ``tool ms``: the same
text as a tool's output, redacted where a cut to 8,000 characters keeps it (head and
tail, the slower; :mod:`tao.redact.kept`), which is what a run pays for it.
"""

from __future__ import annotations

import argparse
import base64
import time
from collections.abc import Callable

from tao.redact import redact
from tao.redact.kept import redact_kept

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
    "label-word run": lambda n: ("pass" * (n // 4 + 1))[:n],
    "base64 words": lambda n: _words(n, lambda i: base64.b64encode(_plain(i)).decode()),
    "hex words": lambda n: _words(n, lambda i: _plain(i).hex()),
    "wrapped lines": lambda n: ("abcdefghijklmnopqrstuvwxyz012345\n" * (n // 33 + 1))[:n],
    "netrc lines": lambda n: ("machine h login u password p\n" * (n // 29 + 1))[:n],
    # Text full of real-looking secrets, each one different (nothing is cached).
    "json secrets": lambda n: _words(n, lambda i: f'"password": "s3cr3t{i:06d}",'),
    "env secrets": lambda n: _words(n, lambda i: f"CONF_VALUE=9f8e7d6c5b4a{i:06d}f5e4d3c2b1a0\n"),
    "provider tokens": lambda n: _words(n, lambda i: f"k=ghp_{'a1B2c3D4e5' * 3}{i:06d}"),
    "mixed secrets": lambda n: _words(n, lambda i: f"pw: x{i} token: y{i} secret: z{i}\n"),
}


def _plain(index: int) -> bytes:
    return f"hello world number {index:06d}".encode()


def _words(size: int, make: Callable[[int], str]) -> str:
    """Pieces ``make(0)``, ``make(1)``... joined by spaces, ``size`` characters in all."""
    parts: list[str] = []
    total = index = 0
    while total < size:
        parts.append(make(index))
        total += len(parts[-1]) + 1
        index += 1
    return " ".join(parts)[:size]


def measure(text: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds to redact ``text`` once."""
    started, cpu = time.perf_counter(), time.process_time()
    redact(text)
    return time.perf_counter() - started, time.process_time() - cpu


def tool_cpu(text: str) -> float:
    """CPU seconds to redact ``text`` as a tool's output cut to 8,000 characters."""
    worst = 0.0
    for keep in ("head", "tail"):
        cpu = time.process_time()
        redact_kept(text, 8_000, keep)  # type: ignore[arg-type]
        worst = max(worst, time.process_time() - cpu)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of each input in MB")
    parser.add_argument("--repeat", type=int, default=3, help="runs per shape, best kept")
    parser.add_argument("--only", nargs="*", default=[], help="shapes to run (default: all)")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    redact("warm up: password=x ghp_ AKIA xoxb- eyJ. -----BEGIN PRIVATE KEY----- aGVsbG8=")
    print(f"{'shape':<20} {'seconds':>8} {'MB/s':>8} {'cpu s':>8} {'cpu MB/s':>9} {'tool ms':>8}")
    for name, make in SHAPES.items():
        if args.only and name not in args.only:
            continue
        text = make(size)
        runs = [measure(text) for _ in range(args.repeat)]
        wall, cpu = min(run[0] for run in runs), min(run[1] for run in runs)
        mb = len(text) / 1e6
        kept = min(tool_cpu(text) for _ in range(args.repeat)) * 1000
        speeds = f"{wall:>8.3f} {mb / wall:>8.1f} {cpu:>8.3f} {mb / cpu:>9.1f}"
        print(f"{name:<20} {speeds} {kept:>8.1f}")


if __name__ == "__main__":
    main()
