"""Workers on the real PostgreSQL server (issue 28): worker processes of tests/workers/app.py,
a fresh database per test, and the ledger of side effects they write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tao.state.result import Status
from tao.store.base import Store
from tao.store.factory import open_store

APP = Path(__file__).with_name("app.py")
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Queue:
    """One queue's world: its database, the environment of its processes, its ledger."""

    env: dict[str, str]
    ledger: Path
    workers: list[subprocess.Popen[str]] = field(default_factory=list)

    def worker(self, concurrency: int = 4, **env: str) -> subprocess.Popen[str]:
        """A worker process of its own session (so its children die with it), once ready."""
        proc = subprocess.Popen(
            [sys.executable, str(APP), "worker", str(concurrency)],
            env={**self.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.workers.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ready "), line + proc.stdout.read()
        return proc

    def store(self) -> Store:
        return open_store()

    def statuses(self, run_ids: list[str]) -> dict[str, Status]:
        with open_store() as store:
            return {run_id: store.get_summary(run_id).status for run_id in run_ids}

    def wait_for(
        self, run_ids: list[str], done: Callable[[Status], bool], timeout: float
    ) -> dict[str, Status]:
        deadline = time.monotonic() + timeout
        while True:
            now = self.statuses(run_ids)
            if all(done(status) for status in now.values()) or time.monotonic() > deadline:
                return now
            time.sleep(0.2)

    def effects(self) -> Counter[str]:
        """How many times each key's side effect ran."""
        if not self.ledger.exists():
            return Counter()
        return Counter(line.split()[0] for line in self.ledger.read_text().splitlines())

    def pids(self) -> dict[str, list[int]]:
        ran: dict[str, list[int]] = {}
        for line in self.ledger.read_text().splitlines() if self.ledger.exists() else ():
            key, pid = line.split()
            ran.setdefault(key, []).append(int(pid))
        return ran


def stop(proc: subprocess.Popen[str], timeout: float = 20) -> int:
    """SIGTERM, and the exit code it ends with."""
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)


@pytest.fixture
def queue(
    pg_database: str, tmp_path: Path, tao_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Queue]:
    monkeypatch.setenv("TAO_DATABASE_URL", pg_database)
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("APP_LEDGER", str(ledger))
    env = {
        **os.environ,
        "TAO_HOME": str(tao_home),
        "PYTHONPATH": str(REPO),
        "APP_LEDGER": str(ledger),
    }
    world = Queue(env, ledger)
    try:
        yield world
    finally:
        for proc in world.workers:  # only the processes this test started, by pid
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
