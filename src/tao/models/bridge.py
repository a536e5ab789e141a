"""Each backend writes one path, async or sync; this module derives the other one.

Network backends are async by nature: :class:`AsyncFirstModel` gets ``complete`` by
running ``acomplete`` on a private event loop kept per thread, so a sync caller reuses
one SDK client and its connection pool across calls (``tao run``, worker threads).
CPU-bound backends (llama.cpp, a replay script) are sync by nature:
:class:`SyncFirstModel` gets ``acomplete`` by running ``complete`` in a worker thread,
so ``Agent.arun`` never blocks its event loop.

    class MyBackend(AsyncFirstModel):
        async def acomplete(self, request, on_text=None) -> ModelReply: ...

    MyBackend(...).complete(request)   # works with or without a running loop
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from tao.models.base import ModelReply, ModelRequest, OnText

__all__ = ["AsyncFirstModel", "SyncFirstModel", "run_sync"]

T = TypeVar("T")


class _ThreadLoop(threading.local):
    """This thread's private runner; it lives as long as the thread, so clients are reused."""

    runner: asyncio.Runner | None = None


_THREAD = _ThreadLoop()
_HELPERS: ThreadPoolExecutor | None = None
_HELPERS_LOCK = threading.Lock()


def run_sync(coroutine: Coroutine[object, object, T]) -> T:
    """Run ``coroutine`` to completion from sync code and return its result.

    In a thread without a running event loop it runs on that thread's private loop.
    Called from inside a running loop (a notebook, an ``async def`` calling sync code)
    it cannot block that loop's own thread on it, so it runs on a helper thread's loop
    and this thread waits: the caller blocks, as any sync call does.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _here(coroutine)
    return _helpers().submit(_here, coroutine).result()


def _here(coroutine: Coroutine[object, object, T]) -> T:
    runner = _THREAD.runner
    if runner is None:
        runner = _THREAD.runner = asyncio.Runner()
    return runner.run(coroutine)


def _helpers() -> ThreadPoolExecutor:
    global _HELPERS
    with _HELPERS_LOCK:
        if _HELPERS is None:
            _HELPERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tao-sync-model")
        return _HELPERS


class AsyncFirstModel(ABC):
    """A backend written as ``acomplete``; ``complete`` is derived by :func:`run_sync`."""

    @abstractmethod
    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        """The reply to ``request``, without blocking the event loop."""

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        """The same call for sync code; ``on_text`` runs in the calling thread."""
        return run_sync(self.acomplete(request, on_text))


class SyncFirstModel(ABC):
    """A backend written as ``complete``; ``acomplete`` runs it in a worker thread."""

    @abstractmethod
    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        """The reply to ``request``; blocks the calling thread."""

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        """The same call off the event loop; ``on_text`` still runs on the loop, in order.

        Text is handed back with ``call_soon_threadsafe``, which queues it before the
        worker's result, so every piece reaches ``on_text`` before this returns.
        """
        if on_text is None:
            return await asyncio.to_thread(self.complete, request)
        loop = asyncio.get_running_loop()

        def relay(text: str) -> None:
            loop.call_soon_threadsafe(on_text, text)

        return await asyncio.to_thread(self.complete, request, relay)
