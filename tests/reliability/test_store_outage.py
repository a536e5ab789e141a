"""A store outage shorter than the retry window loses no run and no step (SPEC R4, issue 14).

A real, throwaway PostgreSQL server (scripts/start-postgres.sh, in a folder and on
a port of this test's own) is restarted while an agent runs: the run finishes
and every step is stored. A server that stays away longer than
``TAO_STORE_RETRY_S``, and a full disk, end the run with one clear line naming it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.fakes.models import CalculatorScript

from tao.agent import Agent
from tao.errors import StoreError
from tao.state.result import RunResult, Status
from tao.store import Store
from tao.store.factory import open_store
from tao.tools.calc import calculator_tool

ROOT = Path(__file__).resolve().parents[2]
BINDIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"))


def agent(steps: int, store: Store, pause_s: float = 0.0) -> Agent:
    return Agent(
        CalculatorScript(steps, pause_s), [calculator_tool()], max_steps=steps, record=store
    )


@dataclass
class Server:
    """A PostgreSQL server of this module's own: its URL, and pg_ctl on it."""

    url: str
    folder: Path
    port: int

    def ctl(self, *args: str) -> None:
        command = [str(BINDIRS[-1] / "pg_ctl"), "-D", str(self.folder / "data"), "-w", *args]
        if os.geteuid() == 0:  # the server refuses to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        # No pipes: the server it starts would hold them open, and wait for it forever.
        subprocess.run(
            command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60
        )

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off"
        self.ctl("-l", str(self.folder / "server.log"), "-o", options, "start")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    if not BINDIRS or shutil.which("bash") is None:
        pytest.skip("needs a PostgreSQL server installed (apt-get install -y postgresql)")
    pytest.importorskip("psycopg")
    folder = Path(f"/tmp/tao-outage-{uuid.uuid4().hex[:10]}")  # the postgres user must reach it
    env = {**os.environ, "PGDATA_DIR": str(folder), "PGPORT": str(_free_port())}
    started = subprocess.run(
        ["bash", str(ROOT / "scripts" / "start-postgres.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if started.returncode != 0:
        pytest.skip(f"could not start PostgreSQL: {started.stderr.strip()[-300:]}")
    url = started.stdout.strip().split("=", 1)[1]
    try:
        yield Server(url, folder, int(env["PGPORT"]))
    finally:
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "stop-postgres.sh")], env=env, timeout=120, check=False
        )


@pytest.fixture
def store(server: Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv("TAO_DATABASE_URL", server.url)
    with open_store() as opened:
        yield opened


def _server_started_at(store: Store) -> object:
    with store._read() as conn:
        row = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
    return None if row is None else row[0]


def test_a_postgres_restart_mid_run_loses_no_step_R4(server: Server, store: Store) -> None:
    """R4: the server restarts (~1 s) while steps are written; the run finishes, all stored."""
    before = _server_started_at(store)
    steps_when_restarted: list[int] = []
    result_box: list[RunResult] = []

    def restart_when_running() -> None:
        while not result_box and len(store.list_runs()) == 0:
            time.sleep(0.05)
        time.sleep(0.5)
        steps_when_restarted.append(store.list_runs()[0].steps)
        server.ctl("-l", str(server.folder / "server.log"), "-m", "fast", "restart")

    restarter = threading.Thread(target=restart_when_running)
    restarter.start()
    result = agent(60, store, pause_s=0.05).run("Add one and one, sixty times.")
    result_box.append(result)
    restarter.join(timeout=60)
    assert (result.status, len(result.steps)) == (Status.FINISHED, 60)
    assert steps_when_restarted and 0 < steps_when_restarted[0] < 60, steps_when_restarted
    assert _server_started_at(store) != before, "the server did not restart mid-run"
    stored = store.get_run(result.run_id)
    assert (stored.status, stored.steps) == (Status.FINISHED, result.steps)


def test_a_server_gone_beyond_the_window_is_one_line_naming_the_run_R4(
    server: Server, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R4: past TAO_STORE_RETRY_S the write fails, saying which run and what was not stored."""
    monkeypatch.setenv("TAO_STORE_RETRY_S", "1")
    result = RunResult(run_id="gone-run", task="t", model="m", started_at=1.0)
    store.begin_run(result)
    result.status, result.answer = Status.FINISHED, "2"
    server.ctl("-m", "fast", "stop")
    try:
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            store.finish_run(result)
        waited = time.monotonic() - started
    finally:
        server.start()
    message = str(caught.value)
    assert message.startswith("run gone-run: could not record its end"), message
    assert "within 1 s (TAO_STORE_RETRY_S)" in message and "\n" not in message
    assert 1 <= waited < 10
    store.finish_run(result)  # the server is back: the same write now goes through
    assert store.get_summary("gone-run").status is Status.FINISHED


def test_a_full_disk_ends_the_run_with_one_line_naming_it_R4(tmp_path: Path) -> None:
    """R4: SQLite's "database or disk is full" is a StoreError naming the run and the file."""
    with open_store(tmp_path / "tao.db") as store:
        with store._read() as conn:
            row = conn.execute("PRAGMA page_count").fetchone()
        pages = 0 if row is None else int(row[0])
        with store._read() as conn:
            conn.execute(f"PRAGMA max_page_count = {pages + 3:d}")
        with pytest.raises(StoreError) as caught:
            agent(400, store).run("Fill the disk.")
    message = str(caught.value)
    partial = caught.value.partial
    assert partial is not None and message.startswith(f"run {partial.run_id}: could not record")
    assert "is full" in message and str(tmp_path / "tao.db") in message and "\n" not in message
