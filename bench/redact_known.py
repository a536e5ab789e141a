"""The cost of known secret values (SPEC S8, S11; issue 26): CPU time to redact 1 MB of
prose while 0, 3 and 20 values are registered (``tao.redact.known``), each value with its
precomputed disguises (:mod:`tao.redact.known_forms`); and the time to register them.

    .venv/bin/python bench/redact_known.py
    .venv/bin/python bench/redact_known.py --mb 10 --counts 0 1 3 20 100

Values are random, 15 letters and digits, seeded. ``cpu ms`` is the best of ``--repeat``
runs of the process's CPU time (a loaded box inflates it far less than the wall clock).
"""

from __future__ import annotations

import argparse
import random
import string
import time

from tao.redact import redact
from tao.redact.known import forget_all, remember


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0, help="size of the prose in MB")
    parser.add_argument("--counts", type=int, nargs="*", default=[0, 3, 20])
    parser.add_argument("--repeat", type=int, default=5, help="runs per count, best kept")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    prose = ("The quick brown fox jumps over the lazy dog. " * (size // 45 + 1))[:size]
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    values = ["".join(rng.choice(alphabet) for _ in range(15)) for _ in range(max(args.counts))]
    print(f"{'values':>6}  {'register ms':>11}  {'redact cpu ms':>13}  ({args.mb:g} MB of prose)")
    for count in args.counts:
        forget_all()
        started = time.process_time()
        remember(values[:count])
        registered = time.process_time() - started
        best = float("inf")
        for attempt in range(args.repeat):
            text = prose + str(attempt)  # a new text each time: no memo
            started = time.process_time()
            redact(text)
            best = min(best, time.process_time() - started)
        print(f"{count:>6}  {registered * 1000:>11.1f}  {best * 1000:>13.1f}")
    forget_all()


if __name__ == "__main__":
    main()
