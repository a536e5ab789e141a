"""``tao submit``, ``tao worker`` and ``tao runs wait`` on one machine: the SQLite run log and
DBOS's SQLite file beside it, no server (issue 28, SPEC M3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_a_submitted_run_waits_queued_then_a_worker_runs_it_M3(
    tao_cli: Any, tao_home: Path, replay: Callable[[list[str]], Path]
) -> None:
    """M3: `tao submit` prints the run id and records it `queued` with its settings; `tao runs
    list` shows it so; a `tao worker` runs it with its recorded tools; `tao runs wait` exits
    with the run's status's code once it ends, and the worker ends cleanly on SIGTERM. A run
    submitted from Python with Python tools cannot be rebuilt by `tao worker`: it ends
    `error`, saying why, instead of waiting forever."""
    script = replay(["Thought: add.\nAction: calculator[17*23+4]", "Action: finish[395]"])
    submitted = tao_cli("submit", "What is 17*23+4?", "-m", f"replay:{script}", "-t", "calc")
    assert submitted.returncode == 0, submitted.stderr
    run_id = submitted.stdout.strip()
    listed = tao_cli("runs", "list", "--status", "queued", "--json").json()
    assert [(r["run_id"], r["status"], r["config"]["tools"]) for r in listed] == [
        (run_id, "queued", ["calc"])
    ]
    early = tao_cli("runs", "wait", run_id, "--timeout", "0.5")
    assert early.returncode == 1 and "still queued" in early.stderr

    code = (
        "from tao import Agent, tool\n"
        "@tool\n"
        "def echo(text: str) -> str:\n"
        "    '''Say it back.'''\n"
        "    return text\n"
        f"print(Agent('replay:{script}', [echo]).submit('hi'))\n"
    )
    env = {**os.environ, "TAO_HOME": str(tao_home)}
    made = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    python_tools = made.stdout.strip()
    worker = subprocess.Popen(
        [sys.executable, "-m", "tao", "worker", "--concurrency", "1"],
        env={**os.environ, "TAO_HOME": str(tao_home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        waited = tao_cli("runs", "wait", run_id, "--json", "--timeout", "60")
        assert waited.returncode == 0, waited.stderr
        assert (waited.json()["status"], waited.json()["answer"]) == ("finished", "395")
        shown = tao_cli("runs", "show", run_id)
        assert "calculator" in shown.stdout and "395" in shown.stdout
        cannot = tao_cli("runs", "wait", python_tools, "--json", "--timeout", "60")
        assert cannot.returncode == 1
        assert "no worker could run it" in cannot.json()["error"]
        assert "Python tools" in cannot.json()["error"]
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "taking runs from queue 'tao'" in out


def test_submit_refuses_what_only_this_process_could_do_and_records_nothing(
    tao_cli: Any,
) -> None:
    """A submitted run is run by a worker later: `--no-log`, `--human-tools`, `--continue`
    and `--mcp` are refused with one line naming them (exit 2), and no run is recorded."""
    refused = tao_cli("submit", "hi", "--no-log", "--human-tools", "--json")
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["status"] == "error"
    assert "--human-tools, --no-log cannot go with tao submit" in refused.stderr
    assert tao_cli("runs", "list", "--json").json() == []
