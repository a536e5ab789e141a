"""``tao serve``'s ASGI app: routes, JSON errors, streamed answers (Starlette, uvicorn).

    GET  /v1/models, /v1/models/ID, /health
    POST /v1/chat/completions          (``stream: true`` answers text/event-stream)
    POST /v1/runs, GET /v1/runs/ID     (with ``queue``: runs for a queue of workers)

Every request passes :class:`tao.server.guard.Guard` first (loopback Host, same-origin or
JSON-only state changes, bounded bodies); every failure is answered in OpenAI's JSON error
shape, never with a traceback (SPEC S9). Model calls go through one
:class:`~tao.server.queue.ModelGate` and run in a worker thread.

    app = make_app(LocalModel())                    # an ASGI app
    with Running(app, port=0) as running: ...       # served in a thread (tests)
    serve_forever(model, "127.0.0.1", 8000)         # what ``tao serve`` runs
"""

from __future__ import annotations

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tao.errors import TaoError
from tao.models.base import Model
from tao.server.chat_request import read_chat_request
from tao.server.guard import Guard, Policy, allowed_names
from tao.server.hangup import ClientGone, Hangup
from tao.server.jsonbody import BadBody, decode_json
from tao.server.openai_api import ChatServer
from tao.server.queue import ModelGate
from tao.server.runner import bind, serve, url_of
from tao.server.streaming import shown_error, stream_answer
from tao.server.wire import ApiError

__all__ = ["MAX_BODY_BYTES", "error_response", "make_app", "serve_forever"]

#: Request bodies larger than this are refused (a chat request is a few hundred KB at most).
MAX_BODY_BYTES = 8 * 1024 * 1024
_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
)


def error_response(error: ApiError) -> JSONResponse:
    error = shown_error(error)  # redacted: a refusal may quote what was sent
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after else None
    return JSONResponse(dict(error.body()), status_code=error.status, headers=headers)


def _refuse(status: int, message: str) -> Response:
    return error_response(ApiError(status, message, code="refused"))


class _Api:
    """The routes, over one :class:`ChatServer` and its :class:`ModelGate`."""

    def __init__(self, chat: ChatServer, max_waiting: int) -> None:
        self.chat = chat
        self.max_waiting = max_waiting
        self._gate: ModelGate | None = None

    @property
    def gate(self) -> ModelGate:
        if self._gate is None:  # made in the server's event loop, on first use
            self._gate = ModelGate(self.max_waiting)
        return self._gate

    async def models(self, request: Request) -> Response:
        return JSONResponse(dict(self.chat.models()))

    async def model(self, request: Request) -> Response:
        wanted = request.path_params["name"]
        if wanted != self.chat.served_name:
            raise ApiError(404, f"model {wanted!r} not found", code="model_not_found")
        return JSONResponse(dict(self.chat.model_card()))

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": self.chat.served_name})

    async def completions(self, request: Request) -> Response:
        try:
            body = decode_json(await request.body())
        except BadBody as error:
            raise ApiError(400, str(error)) from None
        chat_request = read_chat_request(body)
        if chat_request.stream:
            return await stream_answer(self.chat, self.gate, chat_request, request.receive)
        hangup = Hangup(request.receive)  # a client gone stops the model at its next token
        try:
            async with self.gate.turn():
                if hangup.gone:  # left while waiting for the model: nothing to start
                    raise ClientGone
                answer = await anyio.to_thread.run_sync(
                    self.chat.complete, chat_request, hangup.on_text
                )
        except ClientGone:
            hangup.log_stopped()
            return Response(status_code=499)  # nobody reads it: the connection is closed
        finally:
            hangup.stop()
        return JSONResponse(dict(answer))


async def _api_error(request: Request, error: Exception) -> Response:
    if isinstance(error, ApiError):
        return error_response(error)
    if isinstance(error, TaoError):
        return error_response(ApiError(500, str(error), kind="server_error"))
    if isinstance(error, HTTPException):
        method, path = request.method, request.url.path
        message = f"no route for {method} {path}" if error.status_code == 404 else error.detail
        return error_response(ApiError(error.status_code, message))
    return error_response(ApiError(500, "internal error", kind="server_error"))


def make_app(
    model: Model,
    *,
    host: str = "127.0.0.1",
    max_waiting: int = 8,
    chat: ChatServer | None = None,
    body_timeout: float = 15.0,
    queue: str | None = None,
) -> Starlette:
    """The ASGI app serving ``model``; ``host`` is the address bound (its name is answered),
    ``max_waiting`` the requests that may wait for the model, ``body_timeout`` the seconds
    a client has to send its request body; ``queue``: also take agent runs for that queue
    of workers (:mod:`tao.server.runs_api`)."""
    api = _Api(chat or ChatServer(model), max_waiting)
    routes = [
        Route(path, api.models, methods=["GET"]) for path in ("/v1/models", "/models")
    ] + [
        Route(f"{prefix}/models/{{name:path}}", api.model, methods=["GET"])
        for prefix in ("/v1", "")
    ] + [
        Route(path, api.health, methods=["GET"]) for path in ("/health", "/v1/health")
    ] + [
        Route(path, api.completions, methods=["POST"])
        for path in ("/v1/chat/completions", "/chat/completions")
    ]  # fmt: skip
    if queue is not None:
        from tao.server.runs_api import RunsApi

        runs = RunsApi(queue)
        routes += [
            Route("/v1/runs", runs.submit, methods=["POST"]),
            Route("/v1/runs/{run_id}", runs.show, methods=["GET"]),
        ]
    policy = Policy(
        names=allowed_names(host),
        max_body=MAX_BODY_BYTES,
        body_timeout=body_timeout,
        headers=_HEADERS,
        refuse=_refuse,
    )
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, policy=policy)],
        exception_handlers={
            kind: _api_error for kind in (ApiError, TaoError, HTTPException, Exception)
        },
    )


def serve_forever(
    model: Model, host: str = "127.0.0.1", port: int = 8000, *, quiet: bool = False,
    max_waiting: int = 8, queue: str | None = None,
) -> None:  # fmt: skip
    """Serve until interrupted, printing the base URL once it listens."""
    sock = bind(host, port)
    print(f"tao serve: {model.name} at {url_of(sock)}/v1", flush=True)
    app = make_app(model, host=host, max_waiting=max_waiting, queue=queue)
    try:
        serve(app, sock, quiet=quiet)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
