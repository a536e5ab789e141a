"""``tao ui``'s routes as an ASGI app (Starlette), behind :class:`tao.server.guard.Guard`.

    GET  /                     runs, newest first (?q=TEXT&status=&model=&page=N), and
                               the runs waiting for approval
    GET  /runs/RUN_ID          one run's steps (a unique id prefix redirects to the full id)
    GET  /api/runs[/RUN_ID]    the same as JSON: {version, html, live, ...}
    GET  /live, /live/runs/ID  the same as server-sent events, whenever it changes
    POST /runs/RUN_ID/approve  approve the calls the form names, then resume in the background
    POST /runs/RUN_ID/deny     deny them, with the form's reason, then resume

A decision comes as the page's form (same origin, the per-process CSRF token) or as JSON
(``{"call": [ID, ...], "reason": ...}`` with the token in ``X-CSRF-Token``), and names the
exact pending calls; when the run has moved on it is refused with 409.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from tao.errors import ResumeError, StoreError, TaoError
from tao.redact import redact
from tao.server.guard import FORM
from tao.server.jsonbody import BadBody, decode_json
from tao.state.config import Via
from tao.state.jsontypes import JSON
from tao.state.result import Status
from tao.ui import listing, pages
from tao.ui.approval import Resumer, all_pending, pending_of
from tao.ui.live import LiveStreams, LiveUpdate

if TYPE_CHECKING:  # handed an open run log (tao.store.factory); only its type is named
    from tao.store.base import Store

__all__ = ["Decision", "UiApp", "message"]

_MAX_CALLS = 50


def message(status: int, title: str, text: str, *, where: str = "", back: str = "/") -> Response:
    """A small HTML page for an error or a notice; ``text`` redacted, since many quote what
    was asked for (``Nothing at /runs/ghp_…``, ``no run with id '…'``, a bad filter) (S8)."""
    body = pages.message_page(title, redact(text), back=back)
    html = pages.layout(title, body, csrf="", where=where, live_url=None)
    return HTMLResponse(html, status_code=status)


@dataclass(frozen=True, slots=True)
class Decision:
    """What a decision request carries: the token, the calls it names, the reason."""

    token: str
    calls: list[str]
    reason: str | None
    as_json: bool


def _strings(value: JSON) -> list[str] | None:
    items = value if isinstance(value, list) else [value] if value is not None else []
    return [str(item) for item in items] if all(isinstance(i, str) for i in items) else None


def _read_decision(request: Request, raw: bytes) -> Decision:
    """The decision in a form or a JSON body; :class:`BadBody` when it is malformed."""
    header = request.headers.get("x-csrf-token", "")
    if request.headers.get("content-type", "").split(";")[0].strip().lower() == FORM:
        try:
            fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=60)
        except (UnicodeDecodeError, ValueError) as error:
            raise BadBody(f"the form cannot be read: {error}") from None
        token = header or (fields.get("csrf") or [""])[0]
        reason = (fields.get("reason") or [""])[0].strip() or None
        return Decision(token, fields.get("call", []), reason, as_json=False)
    body = decode_json(raw)
    if not isinstance(body, dict):
        raise BadBody('send a JSON object: {"call": [ID, ...], "reason": ...}')
    calls = _strings(body.get("call", body.get("calls")))
    given_reason, given_token = body.get("reason"), body.get("csrf", header)
    if calls is None or not isinstance(given_reason, str | None):
        raise BadBody("'call' must be a list of call ids and 'reason' text")
    if not isinstance(given_token, str):
        raise BadBody("'csrf' must be text")
    return Decision(given_token, calls, (given_reason or "").strip() or None, as_json=True)


class UiApp:
    """The pages and decisions of one run log; rendering runs in worker threads."""

    def __init__(self, store: Store, csrf: str, resumer: Resumer) -> None:
        self.store = store
        self.csrf = csrf
        self.resumer = resumer
        self.streams = LiveStreams()

    # -- rendering (blocking: the run log) -------------------------------------------------

    def index_update(self, filters: listing.Filters) -> LiveUpdate:
        found = self.store.find_runs(filters.query())
        prefixes = self.store.unique_prefixes(s.run_id for s in found.runs)
        body = listing.index_body(found, filters, models=self.store.models(), prefixes=prefixes,
                                  pending=all_pending(self.store), csrf=self.csrf)  # fmt: skip
        return {"version": pages.version_of(body), "html": body, "live": True}

    def run_update(self, run_id: str) -> LiveUpdate:
        store, resumer = self.store, self.resumer
        summary = store.get_summary(run_id)
        result = store.get_run(summary.run_id)
        busy = resumer.busy(summary.run_id)
        note = resumer.failure(summary.run_id)
        if busy and summary.status == Status.AWAITING_APPROVAL:
            note = "Decision recorded; resuming the run…"
        pending = None if busy else pending_of(store, result)
        body = pages.run_body(summary, result, pending, csrf=self.csrf, note=note)
        return {
            "version": pages.version_of(body),
            "html": body,
            "live": busy or summary.status in pages.LIVE_STATUSES,
            "run_id": summary.run_id,
            "status": summary.status,
            "steps": summary.steps,
        }

    def page(self, title: str, update: LiveUpdate, live_url: str | None) -> Response:
        html = pages.layout(title, update["html"], csrf=self.csrf, where=self.store.where,
                            live_url=live_url if update["live"] else None)  # fmt: skip
        return HTMLResponse(html)

    # -- routes ----------------------------------------------------------------------------

    def _filters(self, request: Request) -> listing.Filters | Response:
        """The run list's filters from the query string, or a 400 page saying what is wrong."""
        try:
            return listing.Filters.parse(request.query_params)
        except StoreError as error:
            return message(400, "Bad filter", str(error), where=self.store.where)

    async def home(self, request: Request) -> Response:
        filters = self._filters(request)
        if isinstance(filters, Response):
            return filters
        update = await anyio.to_thread.run_sync(self.index_update, filters)
        query = request.url.query
        return self.page("Runs", update, f"/live?{query}" if query else "/live")

    async def runs_json(self, request: Request) -> Response:
        filters = self._filters(request)
        if isinstance(filters, Response):
            return filters
        return JSONResponse(dict(await anyio.to_thread.run_sync(self.index_update, filters)))

    async def run_page(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        update = await anyio.to_thread.run_sync(self.run_update, run_id)
        full_id = update.get("run_id", run_id)
        if full_id != run_id:
            return RedirectResponse(pages.run_url(full_id), status_code=302)
        return self.page(f"Run {full_id}", update, f"/live{pages.run_url(full_id)}")

    async def run_json(self, request: Request) -> Response:
        update = await anyio.to_thread.run_sync(self.run_update, request.path_params["run_id"])
        return JSONResponse(dict(update))

    async def live_index(self, request: Request) -> Response:
        filters = self._filters(request)
        if isinstance(filters, Response):
            return filters
        update = partial(self.index_update, filters)
        return self.streams.response(update, request.query_params.get("v"))

    async def live_run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await anyio.to_thread.run_sync(self.store.get_summary, run_id)  # unknown: 404
        update = partial(self.run_update, run_id)
        return self.streams.response(update, request.query_params.get("v"))

    async def approve(self, request: Request) -> Response:
        return await self._decide(request, approve=True)

    async def deny(self, request: Request) -> Response:
        return await self._decide(request, approve=False)

    async def _decide(self, request: Request, *, approve: bool) -> Response:
        run_id = request.path_params["run_id"]
        where, back = self.store.where, pages.run_url(run_id)
        try:
            decision = _read_decision(request, await request.body())
        except BadBody as error:
            return message(400, "Unreadable request", str(error), where=where, back=back)
        if not hmac.compare_digest(decision.token.encode(), self.csrf.encode()):
            text = "missing or wrong CSRF token; reload the page and try again"
            return message(403, "Refused", text, where=where, back=back)
        if not decision.calls or len(decision.calls) > _MAX_CALLS:
            text = "a decision names the calls it is for; reload the page and try again"
            return message(400, "Which call?", text, where=where, back=back)
        via: Via = "api" if decision.as_json else "web"
        decide = partial(self.resumer.decide, run_id, decision.calls, approve=approve,
                         reason=decision.reason, via=via)  # fmt: skip
        try:
            full_id = await anyio.to_thread.run_sync(decide)
        except StoreError:
            raise  # an unknown run: 404, as for its page
        except (ResumeError, TaoError) as error:
            text = f"The run has moved on; nothing was decided. {error}"
            return message(409, "Nothing to decide", text, where=where, back=back)
        if decision.as_json:
            return JSONResponse({"run_id": full_id, "calls": decision.calls, "approved": approve})
        return RedirectResponse(pages.run_url(full_id), status_code=303)
