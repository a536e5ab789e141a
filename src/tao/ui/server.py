"""``tao ui``'s server: the run log as web pages, on 127.0.0.1 only (SPEC M3, S3, S9).

The routes are :mod:`tao.ui.app`'s; this module guards and serves them (Starlette on
uvicorn, see :mod:`tao.server.runner`). Protection, since a page in any browser tab can
send requests to localhost:

* Every request must be addressed to ``127.0.0.1``, ``localhost`` or ``[::1]``; anything
  else is refused (403), which defeats DNS rebinding (a hostile name resolving to 127.0.0.1).
* State changes are POST only, from this origin (``Origin`` and ``Sec-Fetch-Site`` are
  checked, a form without ``Origin`` is refused), as a form or JSON only (415 otherwise),
  bounded (413), and need the per-process random token the pages embed (form field ``csrf``
  or header ``X-CSRF-Token``).
* Responses forbid framing (no clickjacking of Approve), inline script and sniffing; every
  run text is escaped in :mod:`tao.ui.pages`.

    server = UiServer(store, port=0).start()     # in a thread
    print(server.url); server.stop()
    UiServer(store, 8765).serve_forever()        # in the foreground, until Ctrl-C
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tao.errors import StoreError
from tao.server.guard import FORM, JSON_TYPE, Guard, Policy, allowed_names
from tao.server.runner import Running, serve
from tao.ui.app import UiApp, message
from tao.ui.approval import Resumer
from tao.ui.assets import CSS, JS

if TYPE_CHECKING:  # handed an open run log (tao.store.factory); only its type is named
    from tao.store.base import Store

__all__ = ["HOST", "UiServer"]

#: Only loopback; the page must never be reachable from another machine.
HOST = "127.0.0.1"
_MAX_BODY = 64 * 1024
_SECURITY_HEADERS = (
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),  # "no-referrer" would make form posts send Origin: null
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
)


def _refuse(status: int, text: str) -> Response:
    return message(status, "Refused", text)


async def _css(request: Request) -> Response:
    return Response(CSS, media_type="text/css; charset=utf-8")


async def _js(request: Request) -> Response:
    return Response(JS, media_type="text/javascript; charset=utf-8")


async def _favicon(request: Request) -> Response:
    return Response(b"", status_code=204)


def _errors(where: str) -> dict[type[Exception] | int, object]:
    async def on_error(request: Request, error: Exception) -> Response:
        if isinstance(error, StoreError):
            missing = str(error).startswith(("no run with id", "run id prefix"))
            return message(404 if missing else 500, "Run log problem", str(error), where=where)
        if isinstance(error, HTTPException):
            title = "Not found" if error.status_code == 404 else "Not allowed"
            text = f"Nothing at {request.url.path}." if error.status_code == 404 else error.detail
            return message(error.status_code, title, text, where=where)
        return message(500, "Internal error", "the page could not be made", where=where)

    return {StoreError: on_error, HTTPException: on_error, Exception: on_error}


def make_app(ui: UiApp) -> Starlette:
    """The guarded ASGI app of one :class:`UiApp`."""
    routes = [
        Route("/", ui.home, methods=["GET"]),
        Route("/api/runs", ui.runs_json, methods=["GET"]),
        Route("/runs/{run_id}", ui.run_page, methods=["GET"]),
        Route("/api/runs/{run_id}", ui.run_json, methods=["GET"]),
        Route("/live", ui.live_index, methods=["GET"]),
        Route("/live/runs/{run_id}", ui.live_run, methods=["GET"]),
        Route("/runs/{run_id}/approve", ui.approve, methods=["POST"]),
        Route("/runs/{run_id}/deny", ui.deny, methods=["POST"]),
        Route("/static/app.css", _css, methods=["GET"]),
        Route("/static/app.js", _js, methods=["GET"]),
        Route("/favicon.ico", _favicon, methods=["GET"]),
    ]
    policy = Policy(
        names=allowed_names(HOST),
        media_types=frozenset({FORM, JSON_TYPE}),
        max_body=_MAX_BODY,
        body_timeout=10.0,
        headers=_SECURITY_HEADERS,
        refuse=_refuse,
    )
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, policy=policy)],
        exception_handlers=_errors(ui.store.where),  # type: ignore[arg-type]
    )


class UiServer:
    """Serves one run log on 127.0.0.1; ``port=0`` picks a free port (see :attr:`url`).

    The port is bound at once (``OSError`` if it is taken); serving starts with
    :meth:`start` (a background thread) or :meth:`serve_forever` (this thread).
    """

    def __init__(self, store: Store, port: int = 0, *, quiet: bool = True) -> None:
        self.store = store
        self.csrf = secrets.token_urlsafe(32)
        self.resumer = Resumer(store)
        self.app = make_app(UiApp(store, self.csrf, self.resumer))
        self.running = Running(self.app, HOST, port, quiet=quiet)

    @property
    def port(self) -> int:
        return self.running.port

    @property
    def url(self) -> str:
        return f"{self.running.url}/"

    def start(self) -> UiServer:
        self.running.start()
        return self

    def stop(self) -> None:
        self.running.stop()

    def serve_forever(self) -> None:
        """Serve in this thread until Ctrl-C or SIGTERM."""
        try:
            serve(self.app, self.running.socket, quiet=True)
        except KeyboardInterrupt:
            pass
        finally:
            self.running.socket.close()
