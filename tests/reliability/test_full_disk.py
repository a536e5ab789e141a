"""A full disk under a real `tao run --json` (SPEC R1, R2, R4; issue 14 items 2 and 6).

The run log lives on a real, small filesystem (a tmpfs mounted for this test, which
needs root or a user namespace), filled up while the run goes: the command prints
exactly one JSON object, exits non-zero with one clear line naming the full run log,
and once space is freed `tao resume` finishes the run with every step stored once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tao.store.factory import open_store

Replay = Callable[[list[str]], Path]

#: Room left on the disk when the run starts: a few dozen steps' worth.
ROOM = 256 * 1024
STEPS = 300


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 16 MiB tmpfs of this test's own (SQLite's WAL grows to 4 MiB), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    where = Path(f"/tmp/tao-full-{uuid.uuid4().hex[:10]}")
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        where.rmdir()


def _fill(disk: Path, room: int) -> Path:
    """Take all but ``room`` bytes of the disk with one file."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(free - room, 0))
    return filler


def test_a_full_disk_prints_one_json_object_and_the_run_resumes_once_freed_R4(
    small_disk: Path, replay: Replay
) -> None:
    home = small_disk / "home"
    open_store(home / "tao.db").close()  # the run log exists: the disk fills with steps
    script = replay(
        [f"Thought: step {n}.\nAction: calculator[{n} + {n}]" for n in range(1, STEPS)]
        + ["Action: finish[all added]"]
    )
    env = {**os.environ, "TAO_HOME": str(home)}

    def tao(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tao", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    filler = _fill(small_disk, ROOM)
    full = tao("run", "add them all", "--model", f"replay:{script}", "--tools", "calc",
               "--max-steps", str(STEPS + 5), "--max-tokens", "100000000", "--json")  # fmt: skip
    assert full.returncode == 1, full.stderr
    lines = full.stdout.splitlines()
    assert len(lines) == 1, full.stdout[-500:]  # exactly one JSON object
    data = json.loads(lines[0])
    assert data["status"] == "error" and "is full" in data["error"], data["error"]
    # Steps wait for their write up to WRITE_WITHIN_S (group commit): a run this fast may
    # have done them all before the write that found the disk full.
    assert 0 < len(data["steps"]) <= STEPS
    with open_store(home / "tao.db") as store:
        assert len(store.get_run(data["run_id"]).steps) < STEPS  # the log did fill up
    (said,) = full.stderr.strip().splitlines()
    assert said.startswith(f"Error: run {data['run_id']}: could not record"), said
    assert "is full" in said and str(home / "tao.db") in said

    filler.unlink()  # space is back
    resumed = tao("resume", data["run_id"], "--json")
    done = json.loads(resumed.stdout)
    assert resumed.returncode == 0, resumed.stderr
    assert (done["status"], done["answer"]) == ("finished", "all added")
    assert [s["index"] for s in done["steps"]] == list(range(1, STEPS + 1))
    assert [s["observation"] for s in done["steps"][:-1]] == [str(2 * n) for n in range(1, STEPS)]
    with open_store(home / "tao.db") as store:
        assert [s.index for s in store.get_run(data["run_id"]).steps] == list(range(1, STEPS + 1))
