"""Live updates of ``tao ui`` as server-sent events (SPEC M3).

One stream per open page: the server reads the run log every :data:`POLL_S` seconds (in a
worker thread), renders the page's body, and sends it only when it changed, as

    event: update
    data: {"version": "…", "html": "…", "live": true, …}

A stream ends with ``event: end`` once its run can no longer change, or after
:data:`MAX_STREAM_S` seconds (the browser's EventSource then reconnects by itself). At
most :data:`MAX_STREAMS` streams are open at once; more are answered 503.

    return streams.response(lambda: ui.run_update(run_id), known=request.query_params.get("v"))
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import NotRequired, TypedDict

import anyio
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from tao.errors import TaoError

__all__ = ["MAX_STREAMS", "LiveStreams", "LiveUpdate"]

POLL_S = 0.5
KEEPALIVE_S = 15.0
MAX_STREAM_S = 300.0
MAX_STREAMS = 64


class LiveUpdate(TypedDict):
    """A page's new body, its fingerprint, and whether it may still change."""

    version: str
    html: str
    live: bool
    run_id: NotRequired[str]
    status: NotRequired[str]
    steps: NotRequired[int]


def _event(name: str, data: LiveUpdate | dict[str, str]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class LiveStreams:
    """The open streams of one server, counted and bounded."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.limit = limit
        self.open = 0

    def response(self, update: Callable[[], LiveUpdate], known: str | None) -> Response:
        """Stream ``update()`` whenever its version differs from the last one sent
        (the first time: from ``known``, the version the page already shows)."""
        if self.open >= self.limit:
            return PlainTextResponse(
                "too many live pages open; reload later", status_code=503,
                headers={"Retry-After": "5"},
            )  # fmt: skip
        self.open += 1
        return StreamingResponse(
            self._events(update, known),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _events(
        self, update: Callable[[], LiveUpdate], known: str | None
    ) -> AsyncIterator[bytes]:
        try:
            yield b"retry: 2000\n\n"
            async for chunk in _changes(update, known):
                yield chunk
        finally:
            self.open -= 1


async def _changes(update: Callable[[], LiveUpdate], known: str | None) -> AsyncIterator[bytes]:
    started = quiet_since = time.monotonic()
    was_live = True
    while True:
        try:
            current = await anyio.to_thread.run_sync(update)
        except TaoError as error:  # the run went away, the log failed: say so and stop
            yield _event("end", {"error": str(error)})
            return
        now = time.monotonic()
        if current["version"] != known or current["live"] != was_live:
            known, was_live = current["version"], current["live"]  # the last one says it ended
            quiet_since = now
            yield _event("update", current)
        elif now - quiet_since >= KEEPALIVE_S:
            quiet_since = now
            yield b": still here\n\n"
        if not current["live"]:
            yield _event("end", {})
            return
        if now - started >= MAX_STREAM_S:
            return
        await anyio.sleep(POLL_S)
