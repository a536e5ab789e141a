"""Fake HTTP servers for tests and benchmarks: a real socket on 127.0.0.1, scripted answers.

One server, many uses: the provider wire-replay fixture, the chat-completions server
of the CLI tests, the eval oracle and the concurrency benchmark all answer through
``handle(request) -> Reply``. The server speaks HTTP/1.1 with keep-alive (as real
APIs do, so a client's connection pool is really exercised), sends each chunk of a
streamed reply as its own write, and never listens beyond loopback.

    with FakeServer(lambda request: Reply.json({"ok": True}), prefix="/v1") as server:
        OpenAIModel("m", base_url=server.base_url).complete(...)
        server.requests[0].body

Benchmarks import it after putting the repository root on ``sys.path``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FakeServer", "Reply", "Request", "chat_completion", "streamed_chat"]


@dataclass(frozen=True, slots=True)
class Request:
    """One request as it arrived."""

    method: str
    path: str
    #: Header names in lower case.
    headers: dict[str, str]
    #: The decoded JSON body; ``{}`` when there is none.
    body: Any
    #: The client's port: the same port on two requests means a reused connection.
    port: int


@dataclass(frozen=True, slots=True)
class Reply:
    """What to answer: a status, headers, and the body as one or more writes."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: tuple[bytes, ...] = ()
    #: Seconds to wait before answering (a slow model, a latency to measure).
    delay_s: float = 0.0
    #: Called with each chunk's index before it is written: a test holds a stream there.
    before_chunk: Callable[[int], None] | None = None

    @classmethod
    def json(
        cls,
        body: object,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> Reply:
        data = json.dumps(body).encode()
        return cls(
            status, {"Content-Type": "application/json", **(headers or {})}, (data,), delay_s
        )

    @classmethod
    def sse(cls, events: Sequence[str]) -> Reply:
        """A server-sent event stream, one write per event."""
        return cls(200, {"Content-Type": "text/event-stream"}, tuple(e.encode() for e in events))


Handle = Callable[[Request], Reply]


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) drops connections when many clients connect at once.
    request_queue_size = 256
    daemon_threads = True


class FakeServer:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 answering every request with ``handle``.

    ``handle`` runs on the request's own thread, so a slow answer (``delay_s``) does
    not hold up the others; it keeps its own lock if it shares state. Every request
    is kept in :attr:`requests`, in arrival order.
    """

    def __init__(self, handle: Handle, *, prefix: str = "", model_info: bool = False) -> None:
        self.handle = handle
        #: Whether ``handle`` answers model-info requests (``GET …/models``, ``/props``,
        #: ``POST /api/show``); else they get a 404, unrecorded, as a chat-only server's
        #: (a run whose window is unknown asks them once before its first step).
        self.model_info = model_info
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self.port = self._httpd.server_address[1]
        #: The URL clients are given, e.g. ``http://127.0.0.1:PORT/v1``.
        self.base_url = f"http://127.0.0.1:{self.port}{prefix}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.01,))
        self._thread.daemon = True

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket (idempotent)."""
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real server would
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle plus the
        # client's delayed ACK adds ~40 ms to every call.
        disable_nagle_algorithm = True
        timeout = 30  # an idle kept-alive connection ends, and its thread with it

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self._answer()

        def do_GET(self) -> None:
            self._answer()

        def _answer(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if not server.model_info and _asks_model_info(self.command, self.path):
                self._send(Reply.json({"error": {"message": "not found"}}, 404))
                return
            request = Request(
                self.command,
                self.path,
                {name.lower(): value for name, value in self.headers.items()},
                json.loads(data) if data.strip() else {},
                self.client_address[1],
            )
            server.record(request)
            try:
                reply = server.handle(request)
            except Exception as error:  # a broken script shows up as a 500, not a hang
                reply = Reply.json({"error": {"message": f"fake server: {error!r}"}}, 500)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if len(reply.chunks) == 1:
                self.send_header("Content-Length", str(len(reply.chunks[0])))
            else:  # a stream ends when the connection does
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            for index, chunk in enumerate(reply.chunks):
                if reply.before_chunk is not None:
                    reply.before_chunk(index)
                self.wfile.write(chunk)
                self.wfile.flush()

    return Handler


def _asks_model_info(method: str, path: str) -> bool:
    """A request for what a model is (its window), not for a completion."""
    path = path.split("?", 1)[0].rstrip("/")
    if method == "GET":
        return path.endswith("/models") or "/models/" in path or path.endswith("/props")
    return path.endswith("/api/show")


def chat_completion(content: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` answering ``request`` with ``content``.

    Usage is estimated at four characters a token, as a server that counts would.
    """
    messages = request.get("messages", [])
    prompt = sum(len(str(m.get("content", ""))) for m in messages) // 4 + 1
    completion = len(content) // 4 + 1
    return {
        "id": f"chatcmpl-test{len(content)}",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": request.get("model", "test"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def streamed_chat(pieces: Sequence[str], request: Mapping[str, Any]) -> list[str]:
    """An OpenAI ``chat.completion.chunk`` stream of ``pieces``, usage last, as SSE events.

    Usage is that of :func:`chat_completion` for the whole text.
    """
    usage = chat_completion("".join(pieces), request)["usage"]

    def event(delta: dict[str, Any] | None, reason: str | None = None) -> str:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": reason}]
        body = {
            "id": "chatcmpl-stream",
            "object": "chat.completion.chunk",
            "created": 1_764_000_000,
            "model": request.get("model", "test"),
            "choices": choices,
            "usage": usage if delta is None else None,
        }
        return f"data: {json.dumps(body)}\n\n"

    return [
        event({"role": "assistant", "content": ""}),
        *(event({"content": piece}) for piece in pieces),
        event({}, "stop"),
        event(None),
        "data: [DONE]\n\n",
    ]


def recorded_chunks(
    *deltas: dict[str, Any], usage: Mapping[str, Any], finish: str = "stop"
) -> list[str]:
    """OpenAI's ``chat.completion.chunk`` stream as recorded from gpt-4o-mini, as SSE events:
    the role, each delta, the finish reason, ``usage`` last, then ``[DONE]``."""

    def chunk(choices: list[dict[str, Any]], usage: Mapping[str, Any] | None = None) -> str:
        body = {
            "id": "chatcmpl-CN3mU6zYjYq3",
            "object": "chat.completion.chunk",
            "created": 1_764_000_000,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_560af6e559",
            "choices": choices,
            "usage": usage,
        }
        return f"data: {json.dumps(body)}\n\n"

    def choice(delta: dict[str, Any], reason: str | None = None) -> list[dict[str, Any]]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}]

    return [
        chunk(choice({"role": "assistant", "content": "", "refusal": None})),
        *(chunk(choice(delta)) for delta in deltas),
        chunk(choice({}, finish)),
        chunk([], usage),
        "data: [DONE]\n\n",
    ]
