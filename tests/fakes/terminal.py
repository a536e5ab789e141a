"""A real pseudo-terminal for CLI tests: the command sees a TTY, the test sees its screen.

The child runs on a pty (``os.openpty``) with a fixed window size; everything it
writes is fed to pyte, a VT100 emulator, so a test can assert what a person would
see *now* (a status line redrawn in place, a region erased when it ends), not just
the bytes that went by.

    with Terminal(["tao", "run", "…"], env=env) as term:
        term.wait_for(lambda screen: "step 1" in screen)
        assert term.finish() == 0
        assert "finished" in term.screen_text()
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

import pyte

__all__ = ["ANSI", "Terminal", "terminal_env"]

#: Escape sequences, to read the raw bytes as plain text.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


def terminal_env(base: Mapping[str, str], columns: int = 100, lines: int = 60) -> dict[str, str]:
    """``base`` as an interactive terminal's environment: no colour or TTY overrides."""
    env = {k: v for k, v in base.items() if k not in _OVERRIDES}
    env.update(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines))
    return env


_OVERRIDES = {"NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERM", "CI"}


class Terminal:
    """A child process whose stdin, stderr (and stdout unless ``stdout`` is given) are a pty."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        columns: int = 100,
        lines: int = 60,
        stdout: int | None = None,
    ) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        self.proc = subprocess.Popen(
            list(args),
            stdin=slave,
            stdout=slave if stdout is None else stdout,
            stderr=slave,
            env=dict(env),
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.raw = b""
        self.screen = pyte.Screen(columns, lines)
        self._stream = pyte.ByteStream(self.screen)
        self.closed = False

    def read(self, timeout: float) -> bool:
        """Read what the child wrote within ``timeout``; ``False`` once the pty is closed."""
        if self.closed:
            return False
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed its side
            data = b""
        if not data:
            self.closed = True
            return False
        self.raw += data
        self._stream.feed(data)
        return True

    def screen_text(self) -> str:
        """What the terminal shows now, trailing blanks trimmed."""
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip()

    def plain(self) -> str:
        """Every byte written so far with escape sequences removed (a transcript)."""
        return ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def wait_for(self, seen: Callable[[str], bool], timeout: float = 30.0) -> str:
        """Read until ``seen(screen text)``; the screen then, or AssertionError with it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if seen(self.screen_text()):
                return self.screen_text()
            if not self.read(0.05) and not seen(self.screen_text()):
                break
        raise AssertionError(f"not on the screen after {timeout}s:\n{self.screen_text()}")

    def finish(self, timeout: float = 60.0) -> int:
        """Read until the child exits; its exit code."""
        deadline = time.monotonic() + timeout
        while self.read(0.05) and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                while self.read(0.05) and not self.closed:
                    pass
                break
        return self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
