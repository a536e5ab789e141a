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


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` now (``/proc/PID/task/*/children``, or a
    scan of ``/proc`` where the kernel lacks that file); none when ``pid`` is gone."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    try:
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as listed:
                found += [int(word) for word in listed.read().split()]
    except FileNotFoundError:
        return [other for other in _all_pids() if _parent(other) == pid]
    except (OSError, ValueError):
        pass  # a thread that ended meanwhile
    return found


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            return int(stat.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def kill_group(pid: int, *, children: bool = True) -> None:
    """Kill a process group and, first (``children``), the direct children of its leader
    ``pid``; one that is already gone is fine. Pass ``children=False`` once the leader
    has been reaped: its pid may then name another process, whose children are not ours.

    The leader of a sandboxed child is bubblewrap's monitor; its child is the sandbox's
    init, in a session of its own, which dies with its parent only through a
    parent-death signal a traced init could lose. Killed by pid, the init takes its
    whole PID namespace with it, whatever was done to it (issue 26)."""
    for child in children_of(pid) if children else ():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
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
