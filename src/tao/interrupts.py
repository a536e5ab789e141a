"""Ctrl-C ends a command cleanly, whatever it is waiting on: a C call, a line typed.

**A long C call that calls back into Python (loading a GGUF model).** Python runs its
SIGINT handler at the next Python instruction. While llama.cpp loads a model, that
instruction is inside a ctypes callback (its logger), where the ``KeyboardInterrupt`` is
printed as "Exception ignored on calling ctypes callback" and dropped: the load finished
and the run went on to its end with exit 0. Here Ctrl-C is held while such a call runs
and raised as soon as it returns, so the command still ends as interrupted (exit 130),
a second or two later.

    with held_interrupts():
        llama = llama_cpp.Llama(model_path=...)   # Ctrl-C here raises just after

**A line typed by a person in a worker thread.** ``tao run`` shows a run live while the
run goes on in a worker thread; an approval prompt, ``--human-tools`` and ``ask_human``
wait for the person in that thread. Ctrl-C reaches the main thread, which records the
run as interrupted and exits 130. Had the worker been inside ``sys.stdin.readline()``
or ``input()``, it would hold the lock of stdin's buffer, and the interpreter's
shutdown aborted with "Fatal Python error: _enter_buffered_busy" (exit 134).
:func:`read_line` reads the file descriptor itself and holds no lock.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["MAX_LINE", "held_interrupts", "read_line"]

#: A line longer than this is cut (a paste gone wrong); the rest is still read and dropped.
MAX_LINE = 64 * 1024


@contextmanager
def held_interrupts() -> Iterator[None]:
    """Hold Ctrl-C while the block runs; raise :class:`KeyboardInterrupt` when it ends.

    Only in the main thread (the only one Python lets set handlers), and only when
    SIGINT has Python's default handler: an application's own handler, or SIGINT
    ignored (``nohup``, a background job), is left as it is.
    """
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    pressed: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        pressed.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt


def read_line(fd: int | None = None) -> str | None:
    """The next line of standard input without its line ending; ``None`` at end of input.

    Byte by byte from the descriptor, so that nothing past the line is taken from a
    pipe, and no Python buffer lock is held while waiting. A ``sys.stdin`` replaced by
    an object with no descriptor (an application's own stream, a test's ``StringIO``)
    is read as it is.
    """
    if fd is None:
        try:
            fd = sys.stdin.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
            line = sys.stdin.readline()
            return line.rstrip("\r\n") if line else None
    data = bytearray()
    while True:
        byte = os.read(fd, 1)
        if not byte:
            return data.decode("utf-8", "replace") if data else None
        if byte == b"\n":
            return data.decode("utf-8", "replace").removesuffix("\r")
        if len(data) < MAX_LINE:
            data += byte
