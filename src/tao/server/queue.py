"""The wait line in front of the single llama.cpp context of ``tao serve``.

One model call runs at a time, in a worker thread, so the event loop keeps answering
``/v1/models`` and ``/health`` while the model thinks. Up to ``max_waiting`` more requests
wait their turn, first come first served; the next one is told at once, 429 with a
``Retry-After`` from the recent call times, instead of piling up without end.

    gate = ModelGate(max_waiting=8)
    async with gate.turn():
        reply = await anyio.to_thread.run_sync(model_call)
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tao.server.wire import ApiError

__all__ = ["ModelGate"]

_RECENT = 8


class ModelGate:
    """One model call at a time, a bounded line behind it (create it in the server's loop)."""

    def __init__(self, max_waiting: int = 8) -> None:
        self.max_waiting = max_waiting
        self.waiting = 0
        self._lock = asyncio.Lock()
        self._recent: deque[float] = deque([5.0], maxlen=_RECENT)

    def retry_after(self) -> int:
        """Seconds until the line has likely moved on: the mean call time, times its length."""
        mean = sum(self._recent) / len(self._recent)
        return max(1, min(120, round(mean * (self.waiting + 1))))

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Wait for the model; 429 when the line is full."""
        if self._lock.locked() and self.waiting >= self.max_waiting:
            raise ApiError(
                429,
                f"the model is busy and {self.waiting} requests are waiting; try again later",
                kind="rate_limit_error",
                code="queue_full",
                retry_after=self.retry_after(),
            )
        self.waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self.waiting -= 1
        started = time.monotonic()
        try:
            yield
        finally:
            self._recent.append(time.monotonic() - started)
            self._lock.release()
