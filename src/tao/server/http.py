"""``tao serve``'s HTTP plumbing: routes, bounded JSON bodies, JSON errors, server-sent events.

    GET  /v1/models, /v1/models/ID, /health
    POST /v1/chat/completions          (``stream: true`` answers text/event-stream)

The standard library's threaded HTTP server accepts requests concurrently; model calls
are serialised by the model itself (one llama.cpp context). Every failure is answered
in OpenAI's JSON error shape, never with a traceback (SPEC S9).

    server = make_server(LocalModel(), port=0)     # port 0: any free port
    serve_forever(model, "127.0.0.1", 8000)        # what ``tao serve`` runs
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tao.errors import TaoError
from tao.jsontypes import JSON
from tao.models.base import Model
from tao.server.chat_request import ChatRequest, read_chat_request
from tao.server.openai_api import ChatServer
from tao.server.wire import (
    ApiError,
    ChatCompletion,
    ChatCompletionChunk,
    Delta,
    ErrorBody,
    Health,
    ModelCard,
    ModelList,
)

__all__ = ["MAX_BODY_BYTES", "ChatHTTPServer", "make_server", "serve_forever"]

#: Request bodies larger than this are refused (a chat request is a few hundred KB at most).
MAX_BODY_BYTES = 8 * 1024 * 1024

_Payload = ModelList | ModelCard | Health | ChatCompletion | ChatCompletionChunk | ErrorBody


def _encode(payload: _Payload) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


class _ClientGone(Exception):
    """The client closed the connection while the reply streamed; stop generating."""


class _EventStream:
    """Server-sent events on one response; the headers go out with the first event, so
    that a request failing before any text is still answered with a JSON error."""

    def __init__(self, handler: _Handler) -> None:
        self.handler = handler
        self.started = False
        self.gone = False

    def _write(self, data: bytes) -> None:
        handler = self.handler
        if not self.started:
            self.started = True
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.close_connection = True
        try:
            handler.wfile.write(data)
            handler.wfile.flush()
        except OSError as error:
            self.gone = True
            raise _ClientGone from error

    def send(self, payload: ChatCompletionChunk | ErrorBody) -> None:
        self._write(b"data: " + _encode(payload) + b"\n\n")

    def done(self) -> None:
        self._write(b"data: [DONE]\n\n")


class ChatHTTPServer(ThreadingHTTPServer):
    """One :class:`ChatServer` behind HTTP; ``quiet`` leaves requests unlogged."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], chat: ChatServer, *, quiet: bool = False) -> None:
        super().__init__(address, _Handler)
        self.chat = chat
        self.quiet = quiet


class _Handler(BaseHTTPRequestHandler):
    server: ChatHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "tao-serve"

    def log_message(self, format: str, *args: object) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    def _send_json(self, status: int, payload: _Payload) -> None:
        data = _encode(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: ApiError) -> None:
        self._send_json(error.status, error.body())

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:
        path = self._path()
        chat = self.server.chat
        if path in ("/v1/models", "/models"):
            self._send_json(200, chat.models())
        elif path.startswith(("/v1/models/", "/models/")):
            wanted = path.split("/models/", 1)[1]
            if wanted == chat.served_name:
                self._send_json(200, chat.model_card())
            else:
                self._send_error(
                    ApiError(404, f"model {wanted!r} not found", code="model_not_found")
                )
        elif path in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok", "model": chat.served_name})
        else:
            self._send_error(ApiError(404, f"no route for GET {path}"))

    def do_POST(self) -> None:
        path = self._path()
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._discard_body()
            self._send_error(ApiError(404, f"no route for POST {path}"))
            return
        try:
            request = read_chat_request(self._read_json())
            if request.stream:
                self._stream(request)
            else:
                self._send_json(200, self.server.chat.complete(request))
        except ApiError as error:
            self._send_error(error)
        except TaoError as error:
            self._send_error(ApiError(500, str(error), kind="server_error"))

    def _discard_body(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if 0 < length <= MAX_BODY_BYTES:
            self.rfile.read(length)
        else:
            self.close_connection = True

    def _read_json(self) -> JSON:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length <= 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            raise ApiError(400 if length <= 0 else 413, "missing or oversized request body")
        raw = self.rfile.read(length)
        try:
            body: JSON = json.loads(raw)
        except ValueError as error:
            raise ApiError(400, f"request body is not valid JSON: {error}") from error
        return body

    def _stream(self, request: ChatRequest) -> None:
        """Each piece of text as a chunk, then one with the finish reason, then ``[DONE]``."""
        chunk = self.server.chat.chunker(request)
        events = _EventStream(self)

        def on_text(text: str) -> None:
            delta: Delta = (
                {"content": text} if events.started else {"role": "assistant", "content": text}
            )
            events.send(chunk(delta, None))

        try:
            answer = self.server.chat.ask(request, on_text)
            if not events.started:
                on_text("")
            events.send(chunk({}, answer.finish_reason))
            events.done()
        except (TaoError, _ClientGone) as error:
            if events.gone:
                return  # the client went away; nothing is left to tell it
            failure = (
                error
                if isinstance(error, ApiError)
                else ApiError(500, str(error), kind="server_error")
            )
            if not events.started:
                raise failure from error
            try:
                events.send(failure.body())
            except _ClientGone:
                return


def make_server(
    model: Model, host: str = "127.0.0.1", port: int = 8000, *, quiet: bool = False
) -> ChatHTTPServer:
    """Build (but do not start) the HTTP server for ``model``; ``port=0`` picks a free one."""
    return ChatHTTPServer((host, port), ChatServer(model), quiet=quiet)


def serve_forever(
    model: Model, host: str = "127.0.0.1", port: int = 8000, *, quiet: bool = False
) -> None:
    """Serve until interrupted, printing the base URL once it listens."""
    server = make_server(model, host, port, quiet=quiet)
    bound_port = server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"tao serve: {model.name} at http://{shown}:{bound_port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
