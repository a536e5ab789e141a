"""Record what a command shows on a terminal, screen by screen (docs/terminal.md was made so).

The command runs on a real pseudo-terminal (100×60); its output goes through a VT100
emulator (pyte, a dev dependency), and every distinct screen is kept with the second it
appeared. ``--at`` prints the screens nearest those seconds as Markdown code blocks.

    python scripts/capture_terminal.py out.json -- tao run "What is 17 * 23 + 4?" -m local -t calc
    python scripts/capture_terminal.py out.json --at 1 10 60 999   # the last screen: 999
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.terminal import Terminal, terminal_env

COLUMNS, LINES = 100, 60


def record(command: list[str]) -> dict[str, object]:
    """Every distinct screen of ``command`` with its time, its exit code and total time."""
    env = terminal_env(os.environ, columns=COLUMNS, lines=LINES)
    snaps: list[tuple[float, str]] = []
    started = time.monotonic()
    with Terminal(command, env=env, columns=COLUMNS, lines=LINES) as term:
        while True:
            alive = term.read(0.1)
            screen = term.screen_text()
            if not snaps or screen != snaps[-1][1]:
                snaps.append((round(time.monotonic() - started, 2), screen))
            if not alive:
                break
        code = term.proc.wait()
    return {"rc": code, "seconds": round(time.monotonic() - started, 1), "snaps": snaps}


def show(path: Path, times: list[float]) -> str:
    snaps = json.loads(path.read_text(encoding="utf-8"))["snaps"]
    blocks = []
    for want in times:
        at, screen = min(snaps, key=lambda snap: abs(snap[0] - want))
        blocks.append(f"At {at:.0f} s:\n\n```text\n{screen or '(an empty screen)'}\n```\n")
    return "\n".join(blocks)


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[1] == "--at":
        print(show(Path(argv[0]), [float(t) for t in argv[2:]]))
    elif len(argv) >= 3 and argv[1] == "--":
        recording = record(argv[2:])
        Path(argv[0]).write_text(json.dumps(recording, ensure_ascii=False), encoding="utf-8")
        screens = len(recording["snaps"])  # type: ignore[arg-type]
        print(f"exit {recording['rc']}, {screens} screens, {recording['seconds']} s")
    else:
        sys.exit(f"usage: {sys.argv[0]} FILE.json -- COMMAND ARGS…  |  FILE.json --at SECONDS…")


if __name__ == "__main__":
    main(sys.argv[1:])
