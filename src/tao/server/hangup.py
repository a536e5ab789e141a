"""Noticing that a client hung up, so ``tao serve`` stops generating for nobody (issue 26).

``tao serve`` has one model and a line of requests behind it. A client that sends a
request and closes its connection used to keep the model generating to the end of its
reply (a non-streamed one to ``max_tokens``), while the next client waited. Now each
model call has a :class:`Hangup`: a task that waits on the request's ASGI ``receive``
(after the body, the next message is ``http.disconnect``, whenever it comes) and marks
the call gone. The model hears it between two tokens, through the per-token ``on_text``
hook every streaming backend calls: :meth:`Hangup.on_text` raises :class:`ClientGone`
there, which the embedded model lets out before llama.cpp evaluates the token (as it does
for ``--max-seconds``), so its context stays whole. The worker thread ends, and the
model's turn (:class:`tao.server.queue.ModelGate`) goes to the next request.

    hangup = Hangup(request.receive)
    try:
        answer = await anyio.to_thread.run_sync(chat.complete, body, hangup.on_text)
    except ClientGone:
        ...                              # nobody to answer
    finally:
        hangup.stop()
"""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.types import Receive

__all__ = ["ClientGone", "Hangup"]

LOG = logging.getLogger("tao.server")


class ClientGone(Exception):
    """The client closed its connection during its model call: stop generating."""


class Hangup:
    """Watches one request's connection from the event loop; :attr:`gone` once it closed."""

    def __init__(self, receive: Receive) -> None:
        self.gone = False
        #: Text pieces the model produced before the call was stopped (for the log).
        self.pieces = 0
        self._receive = receive
        self._started = time.monotonic()
        self._task: asyncio.Task[None] | None = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        while True:
            message = await self._receive()
            if message.get("type") == "http.disconnect":
                self.gone = True
                return

    def on_text(self, text: str) -> None:
        """The model's per-token hook (in its worker thread): stop if nobody listens."""
        if self.gone:
            raise ClientGone
        self.pieces += 1

    def stop(self) -> None:
        """The call is over: stop watching (from the event loop)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def log_stopped(self) -> None:
        LOG.info(
            "client went away: stopped generating after %d pieces of text, %.2f s",
            self.pieces,
            time.monotonic() - self._started,
        )
