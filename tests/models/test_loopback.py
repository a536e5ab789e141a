"""Hard limits against servers on this machine (SPEC L5): nothing waits minutes on 127.0.0.1.

- a loopback base URL on a closed port fails in seconds, with a clear error;
- one whose server never accepts the connection (its backlog is full) fails within the
  short loopback connect timeout, not the minutes-long call timeout;
- one whose server accepts and then never answers is cut by ``--max-seconds``, model
  call and SDK retries included.

Real sockets on 127.0.0.1 and the real ``tao`` command; nothing is mocked.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tao.errors import ModelError
from tao.models.base import ModelRequest
from tao.models.loopback import LOOPBACK_CONNECT_TIMEOUT_S, is_loopback
from tao.models.openai import OpenAIModel

HI = ModelRequest(messages=[{"role": "user", "content": "hi"}], timeout_s=60)


def closed_port() -> int:
    with socket.socket() as sock:  # bound, then closed: nobody listens there
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def full_backlog() -> Iterator[int]:
    """A port whose listener never accepts and whose queue is full: a connect hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = int(server.getsockname()[1])
    queued: list[socket.socket] = []
    while True:
        client = socket.socket()
        client.settimeout(0.3)
        try:
            client.connect(("127.0.0.1", port))
        except OSError:
            client.close()
            break
        queued.append(client)
    try:
        yield port
    finally:
        for client in queued:
            client.close()
        server.close()


@pytest.fixture
def stalled_server() -> Iterator[int]:
    """A server that accepts every connection, reads the request and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.3.4.5:8000/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.7:8000/v1", False),
        ("http://[::1", False),  # malformed: not loopback, and no crash
        (None, False),
    ],
)
def test_which_base_urls_are_loopback(url: str | None, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_closed_loopback_port_fails_fast_with_a_clear_error_L5(tao_cli: Any) -> None:
    port = closed_port()
    out = tao_cli(
        "run", "hi", "-m", "openai:gpt-4o-mini", "--base-url", f"http://127.0.0.1:{port}/v1",
        "--json", timeout=60,
    )  # fmt: skip
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["status"] == "error"
    assert f"cannot reach http://127.0.0.1:{port}/v1" in data["error"]
    assert data["duration_s"] < 10  # the SDK's retries of a refused connection included


def test_a_loopback_server_that_never_accepts_fails_within_the_connect_timeout_L5(
    full_backlog: int,
) -> None:
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{full_backlog}/v1", max_retries=0)
    began = time.monotonic()
    with pytest.raises(ModelError, match=r"cannot reach .*no connection within"):
        model.complete(HI)  # the call itself may take 60 s; connecting may not
    took = time.monotonic() - began
    assert LOOPBACK_CONNECT_TIMEOUT_S - 0.5 < took < LOOPBACK_CONNECT_TIMEOUT_S + 3


def test_max_seconds_bounds_a_model_call_to_a_stalled_server_L5(
    tao_cli: Any, stalled_server: int
) -> None:
    """The issue's 9 min 53 s run: 3 retries of 120 s against a server that never answers."""
    out = tao_cli(
        "run", "hi", "-m", "openai:gpt-4o-mini",
        "--base-url", f"http://127.0.0.1:{stalled_server}/v1", "--max-seconds", "2", "--json",
        timeout=60,
    )  # fmt: skip
    data = json.loads(out.stdout)
    assert out.returncode == 3  # a spent budget (SPEC L1), not a failed backend (1)
    assert data["status"] == "max_steps" and data["error"] is None
    assert data["stop_reason"] == "time limit of 2 s reached during a model call"
    assert "timed out" in data["steps"][-1]["observation"]  # the cut call, kept as a step
    assert 1.5 < data["duration_s"] < 4
