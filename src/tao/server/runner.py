"""Serving an ASGI app on uvicorn with bounds on everything a client controls (SPEC S9).

Both ``tao serve`` and ``tao ui`` run here. What a client cannot do any more:

* overflow the listen queue: the socket listens with a backlog of :data:`BACKLOG`;
* hold a connection by saying nothing, or by trickling a request's head: the head must be
  complete within :data:`HEAD_TIMEOUT` seconds (uvicorn alone has no such limit), an idle
  keep-alive connection closes after :data:`KEEP_ALIVE` seconds, and a head is at most
  :data:`MAX_HEAD` bytes;
* hold the server with many connections: past :data:`MAX_CONNECTIONS` uvicorn answers 503;
* get a traceback: a request that is not HTTP gets a one-line JSON 400.

The body's size and time limits are :mod:`tao.server.guard`'s.

    with Running(app, port=0) as running:     # a thread, for tests and embedding
        print(running.url)
    serve(app, bind("127.0.0.1", 8000))       # the foreground, until Ctrl-C
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import socket
import threading
import time

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from tao.redact import redact

__all__ = [
    "BACKLOG",
    "HEAD_TIMEOUT",
    "KEEP_ALIVE",
    "MAX_CONNECTIONS",
    "MAX_HEAD",
    "Running",
    "bind",
    "serve",
    "url_of",
]

BACKLOG = 1024
HEAD_TIMEOUT = 10.0
KEEP_ALIVE = 5
MAX_HEAD = 16 * 1024
MAX_CONNECTIONS = 512
_BAD_REQUEST = (
    b'{"error": {"message": "malformed HTTP request", "type": "invalid_request_error", '
    b'"param": null, "code": "bad_http"}}'
)


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head and JSON 400s."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()
        elif self._head_timer is None:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        idle = self.cycle is None or self.cycle.response_complete
        if idle and self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=_BAD_REQUEST),
            h11.EndOfMessage(),
        ):
            with contextlib.suppress(h11.LocalProtocolError):
                self.transport.write(self.conn.send(event) or b"")
        self.transport.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (``port=0``: any free port); ``OSError`` when it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT`` of a bound socket (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class RedactedRecords(logging.Filter):
    """Redacts every record the server logs (S8): the access log prints each request's
    path, and a path can hold a secret (``GET /v1/runs/ghp_…``, ``/v1/models/sk-…``, a
    token in the query); so can an error uvicorn logs. The message and each string
    argument are redacted before the formatter sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def _log_config() -> dict[str, object]:
    """uvicorn's own logging set-up, with every handler's records redacted."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["filters"] = {"redacted": {"()": RedactedRecords}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redacted"]
    return config


def _server(app: ASGIApp, *, quiet: bool) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        http=_Protocol,
        lifespan="off",
        proxy_headers=False,  # a client never chooses the address it is seen from
        server_header=False,
        backlog=BACKLOG,
        timeout_keep_alive=KEEP_ALIVE,
        timeout_graceful_shutdown=2,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEAD,
        access_log=not quiet,
        log_level="error" if quiet else "info",
        log_config=None if quiet else _log_config(),
    )
    return uvicorn.Server(config)


def serve(app: ASGIApp, sock: socket.socket, *, quiet: bool = False) -> None:
    """Serve on ``sock`` in this thread until Ctrl-C or SIGTERM (then ``KeyboardInterrupt``
    may follow, re-raised by uvicorn after a graceful stop)."""
    _server(app, quiet=quiet).run(sockets=[sock])


class Running:
    """An app served by uvicorn in a background thread, on 127.0.0.1 unless told otherwise."""

    def __init__(
        self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0, *, quiet: bool = True
    ) -> None:
        self.socket = bind(host, port)
        self.server = _server(app, quiet=quiet)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.socket.getsockname()[1])

    @property
    def url(self) -> str:
        return url_of(self.socket)

    def start(self, timeout: float = 30.0) -> Running:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.socket.close()

    def __enter__(self) -> Running:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
