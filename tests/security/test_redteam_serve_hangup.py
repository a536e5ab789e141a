"""Red team: hanging up on ``tao serve`` must not keep its only model busy (issue 26).

A client that sends a long request and closes its socket used to leave the model
generating to ``max_tokens`` while every other client waited. Each test runs the real
server (uvicorn on 127.0.0.1, the app ``tao serve`` runs) over a model that makes one
token every 20 ms and counts them, and hangs up with a raw socket: non-streamed,
streamed, and while still waiting in line. The next client must get its answer within
2 s, and the abandoned call must have stopped generating.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from tests.server.rawhttp import json_post

from tao.models.base import ModelReply, ModelRequest, OnText
from tao.server import Running, make_app

TOKENS = 400  # 8 s at 20 ms a token: far longer than any bound below
TOKEN_S = 0.02


@dataclass
class SlowTokens:
    """Answers ``max_tokens`` (default :data:`TOKENS`) tokens, one per ``TOKEN_S``, through
    ``on_text``; records how many each call made and whether it was stopped."""

    name: str = "slow-tokens"
    supports_stop: bool = True
    supports_grammar: bool = False
    supports_tools: bool = False
    made: list[int] = field(default_factory=list)
    stopped: list[bool] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        self.made.append(0)
        self.started.set()
        wanted = request.max_tokens or TOKENS
        try:
            for _ in range(wanted):
                time.sleep(TOKEN_S)
                self.made[-1] += 1
                if on_text is not None:
                    on_text("tok ")
        except BaseException:
            self.stopped.append(True)
            raise
        self.stopped.append(False)
        return ModelReply(text="tok " * wanted, output_tokens=wanted, finish_reason="length")

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        return self.complete(request, on_text)


@pytest.fixture
def served() -> Iterator[tuple[SlowTokens, int]]:
    model = SlowTokens()
    with Running(make_app(model)) as running:
        yield model, running.port


def _hang_up_after_sending(port: int, body: dict[str, object]) -> socket.socket:
    """Send a whole chat request on a raw socket; the caller closes it."""
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\n"
        + f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    return sock


def _ask(port: int, tokens: int) -> tuple[int, float]:
    started = time.monotonic()
    reply = json_post(
        port,
        "/v1/chat/completions",
        json.dumps(
            {"messages": [{"role": "user", "content": "hi"}], "max_tokens": tokens}
        ).encode(),
    )
    return reply.status, time.monotonic() - started


def _wait(check: object, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_client_that_hangs_up_frees_the_model_for_the_next_one(
    served: tuple[SlowTokens, int], stream: bool
) -> None:
    """The first client hangs up mid-generation; its call stops within a few tokens and
    the second client's 5-token answer comes within 2 s."""
    model, port = served
    body = {"messages": [{"role": "user", "content": "count"}], "stream": stream}
    sock = _hang_up_after_sending(port, body)
    _wait(lambda: model.made and model.made[0] >= 5, "the first call to generate")
    if stream:
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")  # it was streaming to us
    sock.close()
    status, took = _ask(port, 5)
    assert status == 200
    assert took < 2.0, f"the next client waited {took:.2f} s"
    assert model.stopped[0] is True
    assert model.made[0] < TOKENS / 4, f"the abandoned call made {model.made[0]} tokens"


def test_a_client_that_hangs_up_while_waiting_in_line_costs_nothing(
    served: tuple[SlowTokens, int],
) -> None:
    """A request queued behind another, whose client leaves before its turn, never reaches
    the model (issue 30, item 7: it used to be dropped at its first token): the model is
    called for the first client and the next one only, and the next is not kept waiting."""
    model, port = served
    first = threading.Thread(target=_ask, args=(port, 40))  # 0.8 s of work, then done
    first.start()
    _wait(lambda: model.started.is_set(), "the first call")
    queued = _hang_up_after_sending(port, {"messages": [{"role": "user", "content": "x"}]})
    time.sleep(0.2)  # in line behind the first
    queued.close()
    first.join(10)
    status, took = _ask(port, 5)
    assert status == 200
    assert took < 2.0, f"the client after a hung-up one waited {took:.2f} s"
    assert model.stopped == [False, False]
    assert model.made == [40, 5]
