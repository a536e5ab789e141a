"""Profile tao's loop on the scripted episode of ``bench/overhead.py`` with pyinstrument.

    .venv/bin/pip install pyinstrument        # a dev tool, not a project dependency
    python bench/profile_tao.py               # record=False
    python bench/profile_tao.py --record      # record=True (SQLite run log in a temp folder)

Prints pyinstrument's call tree of the measured episodes (warm-up excluded).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import overhead  # the same scripted episode and tools


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="profile with the run log on")
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("pyinstrument is missing: .venv/bin/pip install pyinstrument", file=sys.stderr)
        return 2
    clock = overhead.Clock()
    harness = overhead.build_tao(overhead.script(args.steps), clock, recorded=args.record)
    assert harness.cursor is not None
    for _ in range(20):  # warm-up
        harness.cursor.rewind()
        harness.run_episode()
    profiler = Profiler(interval=0.0001)
    profiler.start()
    for _ in range(args.episodes):
        harness.cursor.rewind()
        harness.run_episode()
    profiler.stop()
    print(profiler.output_text(unicode=False, color=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
