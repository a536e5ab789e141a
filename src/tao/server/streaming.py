"""``stream: true``: the model's text as server-sent events, as the OpenAI SDK reads them.

The model runs in a worker thread and hands each piece of text to the event loop; the
response starts with the first piece, so a request that fails before any text is still
answered with a plain JSON error. Each piece is a ``chat.completion.chunk`` (with tools,
content and call pieces as OpenAI streams them: :mod:`tao.server.tool_stream`), then one
chunk with the finish reason, then with ``stream_options.include_usage`` one chunk of
usage and no choices, then ``data: [DONE]``. A client that goes away stops the
generation at its next piece, also while nothing was sent yet (a :class:`Hangup` watches
the connection from the start); the model's turn is given back only when the thread is
done.

    response = await stream_answer(chat, gate, request)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import anyio
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from tao.errors import TaoError
from tao.redact import redact
from tao.server.chat_request import ChatRequest
from tao.server.hangup import ClientGone, Hangup
from tao.server.openai_api import ChatServer, Reply
from tao.server.queue import ModelGate
from tao.server.tool_stream import ToolStream
from tao.server.wire import ApiError, ChatCompletionChunk, Delta, ErrorBody

__all__ = ["stream_answer"]

_Item = str | Reply | BaseException


def _event(payload: ChatCompletionChunk | ErrorBody) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n\n"


class _Pump:
    """One model call in a worker thread, its text handed to the event loop in order."""

    def __init__(self, chat: ChatServer, request: ChatRequest, hangup: Hangup) -> None:
        self.chat = chat
        self.request = request
        self.hangup = hangup
        self.loop = asyncio.get_running_loop()
        self.items: asyncio.Queue[_Item] = asyncio.Queue()

    def _put(self, item: _Item) -> None:
        self.loop.call_soon_threadsafe(self.items.put_nowait, item)

    def _on_text(self, text: str) -> None:
        self.hangup.on_text(text)  # raises ClientGone once the client left
        self._put(text)

    def run(self) -> None:  # in the worker thread
        try:
            self._put(self.chat.ask(self.request, self._on_text))
        except BaseException as error:  # handed to the loop, which answers or drops it
            self._put(error)


def shown_error(error: BaseException) -> ApiError:
    """The refusal a client is answered with, its message redacted (S8).

    Every error body of ``tao serve`` is made here, streamed or not, and many quote what
    was sent (``model 'ghp_…' not found``, ``unknown field(s): sk-…``, ``no run with id
    …``, a setting's bad value) or what a model said: redacted once here rather than at
    each ``raise``."""
    if isinstance(error, ApiError):
        shown = redact(error.message)
        if shown == error.message:
            return error
        return ApiError(
            error.status, shown, kind=error.kind, param=error.param, code=error.code,
            retry_after=error.retry_after,
        )  # fmt: skip
    if isinstance(error, TaoError):
        return ApiError(500, redact(str(error)), kind="server_error")
    return ApiError(500, "internal error", kind="server_error")


class _Finish:
    """Ends a streamed call once: stop the text, wait for the thread, give the turn back."""

    def __init__(self, pump: _Pump, worker: asyncio.Future[None], stack: AsyncExitStack) -> None:
        self.pump, self.worker, self.stack = pump, worker, stack
        self.done = False

    async def __call__(self) -> None:
        if self.done:
            return
        self.done = True
        self.pump.hangup.gone = True
        self.pump.hangup.stop()
        with anyio.CancelScope(shield=True):
            await asyncio.wait([self.worker])  # the model's turn ends when the thread does
            await self.stack.aclose()


class _EventResponse(StreamingResponse):
    """Server-sent events that end the call however the response ends (even unsent)."""

    def __init__(self, content: AsyncIterator[bytes], finish: _Finish) -> None:
        super().__init__(
            content,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        self.finish = finish

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.finish()


async def stream_answer(
    chat: ChatServer, gate: ModelGate, request: ChatRequest, receive: Receive
) -> Response:
    """Wait for the model's turn, start the call, answer with its events; ``receive`` is
    the request's, watched for the client hanging up."""
    hangup = Hangup(receive)  # watching from the start: a client may leave while it waits
    stack = AsyncExitStack()
    try:
        await stack.enter_async_context(gate.turn())
    except BaseException:
        hangup.stop()
        raise
    if hangup.gone:
        hangup.stop()
        await stack.aclose()
        hangup.log_stopped()
        return Response(status_code=499)
    pump = _Pump(chat, request, hangup)
    finish = _Finish(pump, asyncio.ensure_future(anyio.to_thread.run_sync(pump.run)), stack)
    try:
        first = await pump.items.get()
    except BaseException:
        await finish()
        raise
    if isinstance(first, ClientGone):  # left before the first piece: nobody to answer
        await finish()
        pump.hangup.log_stopped()
        return Response(status_code=499)
    if isinstance(first, BaseException):
        await finish()
        error = shown_error(first)
        headers = {"Retry-After": str(error.retry_after)} if error.retry_after else None
        return JSONResponse(dict(error.body()), status_code=error.status, headers=headers)
    return _EventResponse(_events(chat, request, pump, first), finish)


async def _events(
    chat: ChatServer, request: ChatRequest, pump: _Pump, first: _Item
) -> AsyncIterator[bytes]:
    chunk = chat.chunker(request)
    pieces = ToolStream(
        in_text=chat.prompted_tools(request), constrained=chat.model.supports_grammar
    )
    started = False

    def send(delta: Delta, finish_reason: str | None = None) -> bytes:
        nonlocal started
        if not started:  # the first delta says who speaks, as OpenAI's does
            delta = {"role": "assistant", "content": None, **delta}
            started = True
        return _event(chunk(delta, finish_reason))

    item = first
    while True:
        if isinstance(item, str):
            for delta in pieces.feed(item):
                yield send(delta)
        elif isinstance(item, Reply):
            for delta in pieces.finish(item.content, item.tool_calls):
                yield send(delta)
            yield send({}, item.finish_reason)
            if request.include_usage:
                yield _event(chunk.usage(item.reply))
            yield b"data: [DONE]\n\n"
            return
        elif isinstance(item, ClientGone):
            pump.hangup.log_stopped()
            return
        else:
            yield _event(shown_error(item).body())
            return
        item = await pump.items.get()
