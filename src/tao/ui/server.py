"""``tao ui``'s HTTP server: the run log as web pages, on 127.0.0.1 only (SPEC M3, S3).

    GET  /                     runs, newest first, and the runs waiting for approval
    GET  /runs/RUN_ID          one run's steps (a unique id prefix redirects to the full id)
    GET  /api/runs[/RUN_ID]    the same as JSON: {version, html, live, ...} for live updates
    POST /runs/RUN_ID/approve  tao runs approve RUN_ID, then tao resume RUN_ID in the background
    POST /runs/RUN_ID/deny     tao runs deny RUN_ID --reason …, then the same resume

Protection, since a page in any browser tab can send requests to localhost:

* Every request must carry ``Host: 127.0.0.1:PORT`` or ``localhost:PORT``; anything
  else is refused, which defeats DNS rebinding (a hostile name resolving to 127.0.0.1).
* State changes are POST only, and need the per-server random token that the
  pages embed (form field ``csrf`` or header ``X-CSRF-Token``); a cross-site
  ``Origin`` or ``Sec-Fetch-Site`` is refused even before the token is checked.
* Responses forbid framing (no clickjacking of Approve) and inline script; every
  run text is escaped in :mod:`tao.ui.pages`.
"""

from __future__ import annotations

import hmac
import json
import secrets
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NotRequired, TypedDict
from urllib.parse import parse_qs, unquote, urlsplit

from tao.errors import StoreError, TaoError
from tao.store import Store
from tao.trace import Status
from tao.ui import pages
from tao.ui.approval import Resumer, all_pending, pending_of
from tao.ui.assets import CSS, JS

#: Only loopback; the page must never be reachable from another machine.
HOST = "127.0.0.1"
_MAX_BODY = 64 * 1024
_RUN_LIMIT = 100
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make form posts send Origin: null
    "Cache-Control": "no-store",
}


class LiveUpdate(TypedDict):
    """What ``/api/runs[/RUN_ID]`` answers: the page's new body and whether to keep polling."""

    version: str
    html: str
    live: bool
    run_id: NotRequired[str]
    status: NotRequired[str]
    steps: NotRequired[int]


class UiServer(ThreadingHTTPServer):
    """Serves one run log; ``port=0`` picks a free port (see :attr:`url`)."""

    daemon_threads = True

    def __init__(self, store: Store, port: int = 0) -> None:
        super().__init__((HOST, port), _Handler)
        self.store = store
        self.csrf = secrets.token_urlsafe(32)
        self.resumer = Resumer(store)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def host_allowed(self, host: str | None) -> bool:
        return (host or "").lower() in (f"{HOST}:{self.port}", f"localhost:{self.port}")

    def origin_allowed(self, origin: str | None) -> bool:
        """No ``Origin`` (old browsers, curl) is allowed; the CSRF token still decides."""
        if origin is None:
            return True
        return origin.lower() in (f"http://{HOST}:{self.port}", f"http://localhost:{self.port}")


class _Handler(BaseHTTPRequestHandler):
    server: UiServer
    _form: dict[str, list[str]]
    server_version = "tao-ui"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the terminal shows the URL, not every poll."""

    # -- GET ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        if not self.server.host_allowed(self.headers.get("Host")):
            self._text(HTTPStatus.FORBIDDEN, "tao ui answers only to 127.0.0.1 and localhost")
            return
        path = urlsplit(self.path).path
        try:
            if path == "/":
                self._page("Runs", self._index(), live_url="/api/runs")
            elif path == "/api/runs":
                body = self._index()
                self._json({"version": pages.version_of(body), "html": body, "live": True})
            elif path.startswith("/runs/") and path.count("/") == 2:
                self._run_page(unquote(path.removeprefix("/runs/")))
            elif path.startswith("/api/runs/") and path.count("/") == 3:
                self._run_json(unquote(path.removeprefix("/api/runs/")))
            elif path == "/static/app.css":
                self._send(HTTPStatus.OK, CSS.encode(), "text/css; charset=utf-8")
            elif path == "/static/app.js":
                self._send(HTTPStatus.OK, JS.encode(), "text/javascript; charset=utf-8")
            elif path == "/favicon.ico":
                self._send(HTTPStatus.NO_CONTENT, b"", "text/plain")
            else:
                self._message(HTTPStatus.NOT_FOUND, "Not found", f"Nothing at {path}.")
        except StoreError as error:
            missing = str(error).startswith(("no run with id", "run id prefix"))
            status = HTTPStatus.NOT_FOUND if missing else HTTPStatus.INTERNAL_SERVER_ERROR
            self._message(status, "Run log problem", str(error))

    def _index(self) -> str:
        store = self.server.store
        summaries = store.list_runs(limit=_RUN_LIMIT)
        prefixes = store.unique_prefixes(s.run_id for s in summaries)
        return pages.index_body(summaries, prefixes, all_pending(store), csrf=self.server.csrf)

    def _run(self, run_id: str) -> tuple[str, str, bool]:
        """(full id, body, live) of one run."""
        store, resumer = self.server.store, self.server.resumer
        summary = store.get_summary(run_id)
        result = store.get_run(summary.run_id)
        busy = resumer.busy(summary.run_id)
        note = resumer.failure(summary.run_id)
        if busy and summary.status == Status.AWAITING_APPROVAL:
            note = "Decision recorded; resuming the run…"
        pending = None if busy else pending_of(store, result)
        body = pages.run_body(summary, result, pending, csrf=self.server.csrf, note=note)
        return summary.run_id, body, busy or summary.status in pages.LIVE_STATUSES

    def _run_page(self, run_id: str) -> None:
        full_id, body, _ = self._run(run_id)
        if full_id != run_id:
            self._redirect(HTTPStatus.FOUND, pages.run_url(full_id))
            return
        self._page(f"Run {full_id}", body, live_url=f"/api{pages.run_url(full_id)}")

    def _run_json(self, run_id: str) -> None:
        full_id, body, live = self._run(run_id)
        summary = self.server.store.get_summary(full_id)
        self._json(
            {
                "version": pages.version_of(body),
                "html": body,
                "live": live,
                "run_id": full_id,
                "status": summary.status,
                "steps": summary.steps,
            }
        )

    # -- POST ---------------------------------------------------------------------------

    def do_POST(self) -> None:
        refusal = self._refusal()
        if refusal is not None:
            self.close_connection = True  # the body may be unread
            self._text(HTTPStatus.FORBIDDEN, refusal)
            return
        parts = urlsplit(self.path).path.split("/")
        if len(parts) != 4 or parts[:2] != ["", "runs"] or parts[3] not in ("approve", "deny"):
            self._message(HTTPStatus.NOT_FOUND, "Not found", "Nothing to do there.")
            return
        run_id, action = unquote(parts[2]), parts[3]
        reason = (self._form.get("reason") or [""])[0].strip() or None
        try:
            full_id = self.server.resumer.decide(run_id, approve=action == "approve", reason=reason)
        except TaoError as error:  # not waiting (already decided, finished), unknown id
            self._message(HTTPStatus.CONFLICT, "Nothing to decide", str(error),
                          back=pages.run_url(run_id))  # fmt: skip
            return
        self._redirect(HTTPStatus.SEE_OTHER, pages.run_url(full_id))

    def _refusal(self) -> str | None:
        """Why a state-changing request is refused (host, origin, fetch site, token), or None."""
        if not self.server.host_allowed(self.headers.get("Host")):
            return "tao ui answers only to 127.0.0.1 and localhost"
        if not self.server.origin_allowed(self.headers.get("Origin")):
            return "cross-site request refused (Origin)"
        if self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            return "cross-site request refused (Sec-Fetch-Site)"
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            return "request too large"
        raw = self.rfile.read(length).decode("utf-8", "replace") if length > 0 else ""
        self._form = parse_qs(raw, max_num_fields=20)
        token = self.headers.get("X-CSRF-Token") or (self._form.get("csrf") or [""])[0]
        if not hmac.compare_digest(token.encode(), self.server.csrf.encode()):
            return "missing or wrong CSRF token; reload the page and try again"
        return None

    # -- responses ----------------------------------------------------------------------

    def _page(self, title: str, body: str, *, live_url: str | None = None) -> None:
        html = pages.layout(title, body, csrf=self.server.csrf, where=self.server.store.where,
                            live_url=live_url)  # fmt: skip
        self._send(HTTPStatus.OK, html.encode(), "text/html; charset=utf-8")

    def _message(self, status: HTTPStatus, title: str, text: str, *, back: str = "/") -> None:
        html = pages.layout(title, pages.message_page(title, text, back=back),
                            csrf=self.server.csrf, where=self.server.store.where,
                            live_url=None)  # fmt: skip
        self._send(status, html.encode(), "text/html; charset=utf-8")

    def _json(self, data: LiveUpdate) -> None:
        body = json.dumps(data, ensure_ascii=False).encode()
        self._send(HTTPStatus.OK, body, "application/json")

    def _text(self, status: HTTPStatus, text: str) -> None:
        self._send(status, f"{text}\n".encode(), "text/plain; charset=utf-8")

    def _redirect(self, status: HTTPStatus, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        for name, value in _SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in _SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
