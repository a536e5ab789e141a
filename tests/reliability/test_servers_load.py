"""16 concurrent clients against each local server (issue 14: "the servers stall under load").

Each server runs in its own process, as a user runs it; 16 client threads each send
:data:`REQUESTS` requests over one keep-alive connection to a cheap endpoint and time
each one. No request may fail, and p99 must stay within 10x p50 (on http.server with a
backlog of 5 it was about 1 s at p99, with hundreds of listen overflows).

    PYTHONPATH=src python -m pytest tests/reliability/test_servers_load.py -q -s

prints one line of figures per server (see docs/performance.md).
"""

from __future__ import annotations

import http.client
import os
import re
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tao.state.config import RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store.factory import open_store

CLIENTS = 16
REQUESTS = 40
WARMUP = 3
#: The whole test, server start included, must end well within this (seconds).
BUDGET_S = 120

_SERVE = textwrap.dedent(
    """
    import sys
    from tao.models.base import ModelReply
    from tao.server import make_app
    from tao.server.runner import bind, serve, url_of

    class Stub:
        name = "stub"
        supports_stop = supports_grammar = True
        supports_tools = False
        def complete(self, request, on_text=None):
            return ModelReply(text="ok")
        async def acomplete(self, request, on_text=None):
            return self.complete(request, on_text)

    sock = bind("127.0.0.1", 0)
    print(url_of(sock), flush=True)
    serve(make_app(Stub()), sock, quiet=True)
    """
)


def _start(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env})  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    assert match, (line, proc.stderr.read() if proc.stderr else "")
    return proc, int(match.group(1))


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()  # our own child
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _client(port: int, paths: list[str], times: list[float], errors: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for index in range(WARMUP + REQUESTS):
            path = paths[index % len(paths)]
            started = time.perf_counter()
            try:
                conn.request("GET", path, headers={"Accept": "application/json"})
                reply = conn.getresponse()
                reply.read()
            except (OSError, http.client.HTTPException) as error:
                errors.append(f"{path}: {error!r}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                continue
            took = time.perf_counter() - started
            if reply.status != 200:
                errors.append(f"{path}: HTTP {reply.status}")
            elif index >= WARMUP:
                times.append(took)
    finally:
        conn.close()


def _load(name: str, port: int, paths: list[str]) -> tuple[float, float]:
    times: list[float] = []
    errors: list[str] = []
    threads = [threading.Thread(target=_client, args=(port, paths, times, errors))
               for _ in range(CLIENTS)]  # fmt: skip
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BUDGET_S)
    wall = time.perf_counter() - started
    assert errors == [], errors[:5]
    assert len(times) == CLIENTS * REQUESTS
    cuts = statistics.quantiles(times, n=100)
    p50, p99 = statistics.median(times), cuts[98]
    print(f"\n{name}: {CLIENTS} clients x {REQUESTS} requests {' '.join(paths)}: "
          f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {max(times) * 1000:.1f} ms, "
          f"{len(times) / wall:.0f} req/s, 0 errors")  # fmt: skip
    return p50, p99


@pytest.fixture
def recorded_runs(tao_home: Path) -> None:
    """Twenty finished runs of three steps in the run log."""
    config = RunConfig(model="replay:x", tools=("calc",))
    with open_store() as store:
        for number in range(20):
            result = RunResult(run_id=f"0193load{number:04d}", task=f"Sum {number}",
                               model="replay:x", started_at=time.time())  # fmt: skip
            store.begin_run(result, config)
            for index in (1, 2, 3):
                step = Step(index=index, kind=StepKind.ACTION, thought="Add.", tool="calculator",
                            arguments={"expression": f"{index}+1"}, observation=str(index + 1),
                            model_output="Action: calculator[1+1]", duration_s=0.1)  # fmt: skip
                result.add_step(step)
                store.add_step(result, step)
            result.status, result.answer = Status.FINISHED, "done"
            store.finish_run(result, config)


@pytest.mark.timeout(BUDGET_S * 2)
def test_tao_serve_under_16_concurrent_clients() -> None:
    proc, port = _start([sys.executable, "-c", _SERVE], {})
    try:
        p50, p99 = _load("tao serve", port, ["/v1/models", "/health"])
    finally:
        _stop(proc)
    assert p99 <= 10 * p50, (p50, p99)


@pytest.mark.timeout(BUDGET_S * 2)
def test_tao_ui_under_16_concurrent_clients(recorded_runs: None) -> None:
    proc, port = _start([sys.executable, "-m", "tao", "ui", "--port", "0"], {})
    try:
        p50, p99 = _load("tao ui", port, ["/api/runs/0193load0007", "/static/app.css"])
        page50, page99 = _load("tao ui", port, ["/", "/api/runs"])
    finally:
        _stop(proc)
    assert p99 <= 10 * p50, (p50, p99)
    assert page99 <= 10 * page50, (page50, page99)
