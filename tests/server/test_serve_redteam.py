"""Red team for ``tao serve`` (SPEC S9, issue 12 item 7): a real uvicorn server on 127.0.0.1,
raw sockets as the attacker's client, a stand-in model that counts its calls.

Each class has several variants: DNS-rebinding Host names, cross-site origins, content types
a web page can send without a preflight, oversized and slow bodies, malformed JSON and
``Content-Length`` forms. Every refusal is a 4xx with a JSON error, never a 5xx or a
traceback, and never reaches the model.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from tests.server.rawhttp import Reply, json_post, request, send

from tao.models.base import ModelReply, ModelRequest, OnText
from tao.server import Running, make_app
from tao.server import runner as runner_module

CHAT = "/v1/chat/completions"
GOOD = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


@dataclass
class CountingModel:
    """Answers "ok" after ``delay`` seconds, and counts the calls it got."""

    delay: float = 0.0
    #: Pieces of text handed to ``on_text``, ``delay`` seconds apart.
    pieces: int = 1
    name: str = "stand-in"
    supports_stop: bool = True
    supports_grammar: bool = True
    supports_tools: bool = False
    calls: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        self.calls.append(request)
        for _ in range(self.pieces):
            time.sleep(self.delay)
            if on_text is not None:
                on_text("ok")
        return ModelReply(text="ok", input_tokens=1, output_tokens=1, finish_reason="stop")

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        return self.complete(request, on_text)


@dataclass
class Server:
    model: CountingModel
    port: int


@pytest.fixture
def server() -> Iterator[Server]:
    model = CountingModel()
    with Running(make_app(model, body_timeout=1.0)) as running:
        yield Server(model, running.port)


def assert_refused(reply: Reply, *statuses: int) -> None:
    assert reply.status in statuses, (reply.status, reply.text)
    assert "Traceback" not in reply.text
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    assert reply.json()["error"]["message"]


# -- DNS rebinding: only loopback names (any port) or the bound host ---------------------------

REBOUND = [
    "evil.example",
    "evil.example:{port}",
    "127.0.0.1.nip.io:{port}",
    "localhost.evil.example:{port}",
    "127.0.0.2:{port}",
    "0.0.0.0:{port}",
    "[::ffff:127.0.0.1]:{port}",
    "127.0.0.1:{port}@evil.example",
    "127.0.0.1:abc",
    "127.1:{port}",
    "2130706433:{port}",
    "localhost:{port}:{port}",
]


@pytest.mark.parametrize("host", REBOUND)
def test_a_foreign_host_gets_nothing_S9(server: Server, host: str) -> None:
    host = host.format(port=server.port)
    assert_refused(request(server.port, "GET", "/v1/models", host=host), 403, 421)
    post = request(server.port, "POST", CHAT, {"Content-Type": "application/json"}, GOOD,
                   host=host)  # fmt: skip
    assert_refused(post, 403, 421)
    assert server.model.calls == []


def test_missing_empty_or_doubled_host_is_refused_S9(server: Server) -> None:
    no_host = send(server.port, b"GET /v1/models HTTP/1.0\r\n\r\n")
    assert_refused(no_host, 400, 403, 421)
    doubled = request(server.port, "GET", "/v1/models", [("Host", "127.0.0.1"), ("Host", "evil")])
    assert 400 <= doubled.status < 500
    assert_refused(request(server.port, "GET", "/health", host=" "), 400, 403, 421)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:{port}", "localhost:1", "[::1]:{port}",
                                  "LocalHost:{port}"])  # fmt: skip
def test_loopback_names_with_any_port_are_answered_S9(server: Server, host: str) -> None:
    reply = request(server.port, "GET", "/v1/models", host=host.format(port=server.port))
    assert reply.status == 200 and reply.json()["data"][0]["id"] == "stand-in"


# -- cross-site requests ---------------------------------------------------------------------

ORIGINS = [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "https://127.0.0.1:{port}"},
    {"Origin": "http://127.0.0.1:{other}"},
    {"Origin": "http://localhost.evil.example:{port}"},
    {"Origin": "http://127.0.0.1:{port}.evil.example"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://127.0.0.1:{port}", "Sec-Fetch-Site": "cross-site"},
]


@pytest.mark.parametrize("headers", ORIGINS)
def test_a_cross_site_post_is_refused_S9(server: Server, headers: dict[str, str]) -> None:
    filled = {k: v.format(port=server.port, other=server.port + 1) for k, v in headers.items()}
    assert_refused(json_post(server.port, CHAT, GOOD, filled), 403)
    assert server.model.calls == []


def test_same_origin_and_plain_json_clients_are_served_S9(server: Server) -> None:
    for headers in ({}, {"Origin": f"http://localhost:{server.port}", "Sec-Fetch-Site": "none"}):
        reply = json_post(server.port, CHAT, GOOD, headers)
        assert reply.status == 200, reply.text
    assert len(server.model.calls) == 2


# -- only JSON: no simple cross-site POST ------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
     "multipart/form-data; boundary=x", "application/json; charset=latin-1", "text/json",
     "application/jsonp", "application/json-patch+json"],
)  # fmt: skip
def test_non_json_posts_are_415_S9(server: Server, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    assert_refused(request(server.port, "POST", CHAT, headers, GOOD), 415)
    assert server.model.calls == []


def test_json_media_type_in_any_case_with_utf8_is_taken_S9(server: Server) -> None:
    for value in (
        "Application/JSON",
        "application/json; charset=UTF-8",
        'application/json;charset="utf-8"',
    ):
        assert request(server.port, "POST", CHAT, {"Content-Type": value}, GOOD).status == 200


# -- bounded bodies, in size and in time -------------------------------------------------------


def test_an_announced_huge_body_is_413_before_it_is_read_S9(server: Server) -> None:
    head = f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    for length, statuses in (("8388609", (413,)), ("9" * 30, (400, 413))):
        reply = send(server.port, f"{head}Content-Length: {length}\r\n\r\n".encode())
        assert_refused(reply, *statuses)


def test_a_chunked_body_is_cut_off_while_it_streams_S9(server: Server) -> None:
    head = (f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()  # fmt: skip
    chunk = b"x" * (1 << 20)
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(head)
        sent = 0
        try:
            for _ in range(16):  # 16 MiB offered, 8 MiB allowed
                conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                sent += 1
        except OSError:
            pass  # the server stopped reading: the body was refused
        data = conn.recv(200)
    assert data.startswith(b"HTTP/1.1 413"), data
    assert sent < 16 or data
    assert server.model.calls == []


def test_a_slow_body_or_a_silent_client_cannot_hold_a_connection_S9(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = (f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n{").encode()  # fmt: skip
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(head)  # 1 byte of 100, then nothing
        data = conn.recv(200)
    assert data.startswith(b"HTTP/1.1 408"), data
    assert time.monotonic() - started < 10
    monkeypatch.setattr(runner_module, "HEAD_TIMEOUT", 0.5)
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0")  # a head that never ends
        started = time.monotonic()
        assert conn.recv(200) == b""  # closed by the server
    assert time.monotonic() - started < 5


def test_a_huge_head_is_refused_S9(server: Server) -> None:
    try:
        reply = request(server.port, "GET", "/v1/models", {"X-Pad": "a" * 300_000})
    except (ConnectionResetError, BrokenPipeError):
        pass  # cut off before the refusal could be read: refused all the same
    else:
        assert_refused(reply, 400, 431)
    assert request(server.port, "GET", "/v1/models").status == 200


# -- malformed bodies: 400 with a message, never a 500 -----------------------------------------

MALFORMED = [
    b"{not json",
    b"",
    b"   ",
    b"\xff\xfe{}",
    b'{"messages": [{"role": "user", "content": "caf\xe9"}]}',
    b"[" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": ' + b"9" * 5000 + b"}",
    b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000000000000000000000}',
    b'{"messages": [{"role": "user", "content": "hi"}], "temperature": 1e400}',
    b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
    b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
    b'{"messages": "hi"}',
    b'{"messages": [5]}',
    b'{"messages": [{"role": "user", "content": {"x": 1}}]}',
    b'{"messages": [{"role": 7, "content": "hi"}]}',
    b'{"messages": [{"role": "user", "content": "hi"}], "stop": 7}',
    b'{"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}',
    b'{"messages": [{"role": "user", "content": "hi"}], "tools": "calculator"}',
    b'{"messages": [{"role": "user", "content": "hi"}], "n": 2}',
    b'{"messages": [{"role": "user", "content": "hi"}], "seed": 1e300}',
    b'{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}}',
    b'"just a string"',
    b"null",
]


@pytest.mark.parametrize("body", MALFORMED, ids=lambda body: repr(body[:40]))
def test_malformed_bodies_are_400_json_errors_S9(server: Server, body: bytes) -> None:
    assert_refused(json_post(server.port, CHAT, body), 400)
    assert server.model.calls == []


@pytest.mark.parametrize(
    "length", ["abc", "-1", "1.5", "+5", "0x10", "5, 6", "", "١٢"]
)  # fmt: skip
def test_malformed_content_lengths_are_4xx_S9(server: Server, length: str) -> None:
    raw = (f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           f"Content-Length: {length}\r\n\r\n").encode() + GOOD  # fmt: skip
    reply = send(server.port, raw)
    assert 400 <= reply.status < 500, reply.status
    assert "Traceback" not in reply.text
    assert server.model.calls == []


def test_conflicting_framing_is_4xx_S9(server: Server) -> None:
    both = [("Content-Length", "5"), ("Transfer-Encoding", "chunked")]
    twice = [("Content-Length", "5"), ("Content-Length", str(len(GOOD)))]
    for headers in (both, twice):
        reply = request(server.port, "POST", CHAT,
                        [("Content-Type", "application/json"), *headers], GOOD)  # fmt: skip
        assert 400 <= reply.status < 500, (headers, reply.status)
    assert send(server.port, b"NOT HTTP AT ALL\r\n\r\n").status == 400


def test_api_responses_carry_security_headers_S9(server: Server) -> None:
    for reply in (request(server.port, "GET", "/v1/models"), request(server.port, "GET", "/x")):
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert "frame-ancestors 'none'" in reply.headers["content-security-policy"]


# -- one model, a bounded line, cheap endpoints stay quick -------------------------------------


def test_the_line_is_bounded_and_cheap_endpoints_answer_during_generation() -> None:
    model = CountingModel(delay=1.5)
    with Running(make_app(model, max_waiting=1)) as running:
        replies: list[Reply] = []

        def post() -> None:
            replies.append(json_post(running.port, CHAT, GOOD))

        threads = [threading.Thread(target=post) for _ in range(2)]
        for thread in threads:
            thread.start()
            time.sleep(0.2)  # the first one runs, the second one waits
        started = time.monotonic()
        models = request(running.port, "GET", "/v1/models")
        took = time.monotonic() - started
        full = json_post(running.port, CHAT, GOOD)
        for thread in threads:
            thread.join(30)
    assert models.status == 200 and took < 0.5, took
    assert_refused(full, 429)
    assert int(full.headers["retry-after"]) >= 1
    assert [reply.status for reply in replies] == [200, 200]
    assert len(model.calls) == 2


def test_a_client_leaving_a_stream_stops_the_model_and_frees_the_line() -> None:
    model = CountingModel(delay=0.1, pieces=100)  # 10 s if nobody stopped it
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
    with Running(make_app(model, max_waiting=0)) as running:
        head = (f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
        with socket.create_connection(("127.0.0.1", running.port), timeout=20) as conn:
            conn.sendall(head + body)
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        started = time.monotonic()  # the client is gone; the model stops at its next piece
        model.pieces = 1
        reply = json_post(running.port, CHAT, GOOD)
        while reply.status == 429 and time.monotonic() - started < 5:
            time.sleep(0.1)
            reply = json_post(running.port, CHAT, GOOD)
    assert reply.status == 200, reply.text
    assert time.monotonic() - started < 5


def _post_and_leave(port: int, body: bytes, *, after: float) -> None:
    """Send a chat request, wait ``after`` seconds, and close the connection unanswered."""
    head = (f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(head + body)
        time.sleep(after)


def test_a_client_leaving_a_plain_request_stops_the_model_and_frees_the_line() -> None:
    """Issue 30: not streamed, a hung-up request stopped the model only at the end of its
    reply. Now it stops at the next piece of text and the next client is served at once."""
    model = CountingModel(delay=0.1, pieces=100)  # 10 s if nobody stopped it
    with Running(make_app(model, max_waiting=0)) as running:
        _post_and_leave(running.port, GOOD, after=0.5)  # the model is generating
        started = time.monotonic()
        model.pieces = 1
        reply = json_post(running.port, CHAT, GOOD)
        while reply.status == 429 and time.monotonic() - started < 5:
            time.sleep(0.1)
            reply = json_post(running.port, CHAT, GOOD)
    assert reply.status == 200, reply.text
    assert time.monotonic() - started < 5
    assert len(model.calls) == 2


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_leaving_while_it_waits_never_reaches_the_model(stream: bool) -> None:
    """A request whose client hung up while it waited for the model is dropped when its
    turn comes, instead of generating for nobody."""
    model = CountingModel(delay=0.1, pieces=20)  # the first call holds the model 2 s
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": stream}).encode()
    with Running(make_app(model, max_waiting=4)) as running:
        first = threading.Thread(target=json_post, args=(running.port, CHAT, GOOD))
        first.start()
        time.sleep(0.3)
        _post_and_leave(running.port, body, after=0.3)  # waits behind the first, then leaves
        first.join(30)
        model.pieces = 1
        reply = json_post(running.port, CHAT, GOOD)
    assert reply.status == 200, reply.text
    assert len(model.calls) == 2, [len(call.messages) for call in model.calls]
