"""Replicas over one PostgreSQL run log (issue 28, "Replicas"): two `tao ui` processes and two
`tao serve --queue` processes, real servers on 127.0.0.1, each a process of its own."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.workers.conftest import Queue, stop
from tests.workers.test_queue import ENDED, submit

from tao.state.result import Status
from tao.store.factory import open_store
from tao.ui.approval import pending_of


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def replica(queue: Queue, *args: str) -> Iterator[int]:
    """One `tao ARGS --port P` process until it answers; its port. Ended by its pid."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tao", *args, "--port", str(port)],
        env=queue.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, f"tao {args[0]} never listened"
                time.sleep(0.1)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def call(
    port: int, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = None if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json"} if data is not None else {}
    conn.request(method, path, body=data, headers={**sent, **(headers or {})})
    response = conn.getresponse()
    raw = response.read().decode()
    return response.status, json.loads(raw) if raw.startswith(("{", "[")) else raw


def test_a_run_paused_under_one_ui_replica_is_approved_on_the_other_S3(queue: Queue) -> None:
    """Issue 28, S3: two `tao ui` replicas over one PostgreSQL run log both show the paused
    run; approving it on replica B (JSON, B's own CSRF token) puts it back on the queue, a
    worker finishes it, its side effect runs once, and replica A shows it finished too.
    Replica A, which never saw the decision, then refuses a second one (409)."""
    worker = queue.worker(1, APP_APPROVE="0")
    with replica(queue, "ui") as a:
        (paused,) = submit(1, "u")
        got = queue.wait_for([paused], lambda s: s in ENDED, 30)[paused]
        assert got is Status.AWAITING_APPROVAL
        with replica(queue, "ui") as b:
            for port in (a, b):
                status, shown = call(port, "GET", f"/api/runs/{paused}")
                assert status == 200 and shown["status"] == "awaiting_approval", shown
            with open_store() as store:
                pending = pending_of(store, store.get_run(paused))
            assert pending is not None
            ids = [c.id for c in pending.calls]
            _, page = call(b, "GET", "/")
            token = re.search(r'name="csrf-token" content="([^"]+)"', page)
            assert token is not None
            status, decided = call(
                b,
                "POST",
                f"/runs/{paused}/approve",
                {"call": ids},
                {"X-CSRF-Token": token.group(1), "Origin": f"http://127.0.0.1:{b}"},
            )
            assert status == 200 and decided["approved"] is True, decided
            ended = queue.wait_for([paused], lambda s: s is Status.FINISHED, 60)[paused]
            assert ended is Status.FINISHED
            for port in (a, b):
                status, shown = call(port, "GET", f"/api/runs/{paused}")
                assert status == 200 and shown["status"] == "finished", shown
        _, page = call(a, "GET", "/")
        token = re.search(r'name="csrf-token" content="([^"]+)"', page)
        assert token is not None
        status, refused = call(
            a,
            "POST",
            f"/runs/{paused}/approve",
            {"call": ids},
            {"X-CSRF-Token": token.group(1), "Origin": f"http://127.0.0.1:{a}"},
        )
        assert status == 409, refused
    assert queue.effects() == {"u0": 1}
    assert stop(worker) == 0


def test_two_serve_replicas_submit_to_one_queue_drained_by_one_worker(queue: Queue) -> None:
    """Issue 28, S9: runs POSTed to two `tao serve --queue` replicas go to one queue; one
    worker drains it; every run finishes once, readable from either replica."""
    serve = ("serve", "--model", "local", "--queue", "tao")  # tao serve loads its model
    worker = queue.worker(2)
    made: list[str] = []
    with replica(queue, *serve) as a, replica(queue, *serve) as b:
        for n in range(6):
            port = (a, b)[n % 2]
            status, run = call(port, "POST", "/v1/runs", {"task": f"job s{n}"})
            assert status == 202 and run["status"] == "queued", run
            made.append(run["id"])
        ended = queue.wait_for(made, lambda s: s in ENDED, 90)
        assert set(ended.values()) == {Status.FINISHED}, ended
        for n, run_id in enumerate(made):
            status, shown = call((b, a)[n % 2], "GET", f"/v1/runs/{run_id}")
            assert status == 200 and shown["status"] == "finished", shown
    assert queue.effects() == {f"s{n}": 1 for n in range(6)}
    assert stop(worker) == 0
