"""Child processes a run started, so that stopping the run stops them too (SPEC R2).

Tools that start processes (``run_tests``) give each child its own process group
and register it here while it runs. When a run is interrupted (Ctrl-C, SIGTERM)
or cancelled, :func:`kill_all` ends every registered group: nothing the run
started outlives it, and no timeout is left unenforced.

    with tracked(process):
        process.wait(timeout)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator

_running: set[int] = set()
_lock = threading.Lock()


@contextlib.contextmanager
def tracked(process: subprocess.Popen[bytes]) -> Iterator[None]:
    """Register ``process`` (the leader of its own process group) while the block runs."""
    with _lock:
        _running.add(process.pid)
    try:
        yield
    finally:
        with _lock:
            _running.discard(process.pid)


def kill_group(pid: int) -> None:
    """Kill a process group; one that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_all() -> int:
    """End every registered child's whole process group; how many there were."""
    with _lock:
        groups = list(_running)
        _running.clear()
    for pid in groups:
        kill_group(pid)
    return len(groups)
