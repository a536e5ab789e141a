"""Time limits for tool calls (SPEC L5, issue 12 item 5): a hung tool never hangs the run.

A Python function cannot be killed from outside: :func:`run_with_limit` runs it
in a daemon thread and, at the limit, *abandons* it — the run goes on with an
error observation while the thread finishes (or not) on its own, and never keeps
the process alive at exit. Tools that start children do better: they read
:func:`remaining_s` (the deadline of the call they run in) and kill their whole
process group when it passes, so nothing outlives the call.

    outcome = run_with_limit(lambda: slow_tool(), 5.0)   # Finished(value) or TimedOut()

``async def`` tools are bounded the same way, but stopped rather than abandoned:
:func:`await_with_limit` cancels one at its limit on the running loop
(``Agent.arun``), and :func:`run_coroutine` runs one for synchronous code
(``Agent.run``) on tao's own loop thread, cancelling it at the call's deadline.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import FrameType
from typing import Generic, TypeVar, cast

from tao.state.frozen import frozen

T = TypeVar("T")

#: The monotonic time by which the tool call running in this context must end.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "tao_tool_deadline", default=None
)


def remaining_s() -> float | None:
    """Seconds left to the call running in this context; ``None`` when it has no limit."""
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


@frozen
class Finished(Generic[T]):
    """The call returned ``value`` (or raised ``error``) within its limit."""

    value: T | None = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The call was still running at its limit and was abandoned."""

    limit_s: float


def run_with_limit(
    fn: Callable[..., T], limit_s: float | None, *args: object
) -> Finished[T] | TimedOut:
    """Run ``fn(*args)`` with at most ``limit_s`` seconds of waiting; ``None`` waits as long
    as it takes.

    The worker is a daemon thread that runs ``fn`` in a copy of the caller's context
    plus the deadline, so a tool can ask :func:`remaining_s`. Exceptions are carried
    back, not raised, so the caller decides what becomes an observation.
    """
    if limit_s is None:
        return _call(fn, *args)
    if _can_alarm() and (alarmed := _alarmed(fn, args, limit_s)) is not None:
        return alarmed
    context = contextvars.copy_context()
    context.run(_DEADLINE.set, time.monotonic() + limit_s)
    job: _Job[T] = _Job(lambda: context.run(_call, fn, *args))
    _WORKERS.submit(job)
    if job.done.wait(limit_s) and not isinstance(job.result.error, _Alarm):
        return job.result
    return TimedOut(limit_s)


class _Alarm(BaseException):
    """The call's time is up (raised inside it by SIGALRM); not an error of the tool's."""


_armed = False
_installed = False
#: When the interval timer tao set will ring (monotonic seconds); ``None``: not set.
_timer_at: float | None = None
#: A timer ringing this close to a call's deadline is kept for it (no system call).
_SLACK_S = 0.01


def _ring(signum: int, frame: FrameType | None) -> None:
    global _timer_at
    _timer_at = None
    if _armed:
        raise _Alarm


def _can_alarm() -> bool:
    """The cheap way (no thread handoff) works in the main thread, where signals arrive,
    when nobody else handles SIGALRM (whether someone set the timer, :func:`_alarmed`
    learns from the timer itself)."""
    if _MAIN is None or threading.get_ident() != _MAIN:
        return False
    global _installed
    if _installed:
        return True
    if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN, None):
        return False  # someone else uses SIGALRM: leave it to them
    signal.signal(signal.SIGALRM, _ring)  # installed once; it rings only when armed
    _installed = True
    return True


#: The main thread, where signals arrive (no interval timer on platforms without one).
_MAIN = threading.main_thread().ident if hasattr(signal, "setitimer") else None


def _alarmed(
    fn: Callable[..., T], args: tuple[object, ...], limit_s: float
) -> Finished[T] | TimedOut | None:
    """Run ``fn`` here, interrupted by SIGALRM at the limit: a thread handoff per call cost
    more than the rest of a step. Python code (sleeps and I/O included) is stopped at the
    limit; a call stuck inside C code ends when that returns, then counts as timed out.

    The calls of a run share one deadline (the run's ``--max-seconds``), so the timer
    set for the first is kept for the next ones: setting it costs more than the rest of
    a step. It rings at most once, outside a call harmlessly; :func:`disarm` stops it
    when the run ends. ``None``: somebody else had set the timer; it is put back, and
    ``fn`` did not run.
    """
    global _armed, _timer_at
    now = time.monotonic()
    deadline = now + limit_s
    token = _DEADLINE.set(deadline)
    try:
        _armed = True  # before the timer starts, so that an early ring is never lost
        if _timer_at is None or not (now < _timer_at and abs(_timer_at - deadline) <= _SLACK_S):
            earlier = signal.setitimer(signal.ITIMER_REAL, limit_s)
            if earlier[0] != 0 and _timer_at is None:
                signal.setitimer(signal.ITIMER_REAL, *earlier)
                return None
            _timer_at = deadline
        outcome = _call(fn, *args)
    except _Alarm:  # rang between the call's end and the disarming
        outcome = Finished(error=_Alarm())
    finally:
        _armed = False
        _DEADLINE.reset(token)
    return TimedOut(limit_s) if isinstance(outcome.error, _Alarm) else outcome


def disarm() -> None:
    """Stop the timer tao set (at the end of a run), so that it rings nobody else's handler."""
    global _timer_at
    if _timer_at is not None and _MAIN is not None and threading.get_ident() == _MAIN:
        _timer_at = None
        signal.setitimer(signal.ITIMER_REAL, 0)


class _Job(Generic[T]):
    __slots__ = ("done", "result", "run")

    def __init__(self, run: Callable[[], Finished[T]]) -> None:
        self.run = run
        self.done = threading.Event()
        self.result: Finished[T] = Finished()


class _Workers:
    """Daemon threads kept for the next call: starting a thread per call cost more than the
    rest of a step. A worker stuck in an abandoned call is simply not reused until it ends;
    being a daemon, it never keeps the process alive."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """No workers yet; in a forked child, the parent's threads are not there to serve."""
        self._idle: list[queue.SimpleQueue[_Job[object]]] = []
        self._lock = threading.Lock()

    def submit(self, job: _Job[T]) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(
                target=self._serve, args=(inbox,), name="tao-tool", daemon=True
            ).start()
        inbox.put(cast("_Job[object]", job))

    def _serve(self, inbox: queue.SimpleQueue[_Job[object]]) -> None:
        while True:
            job = inbox.get()
            job.result = job.run()
            job.done.set()
            with self._lock:
                self._idle.append(inbox)


_WORKERS = _Workers()
os.register_at_fork(after_in_child=_WORKERS.reset)


def _call(fn: Callable[..., T], *args: object) -> Finished[T]:
    try:
        return Finished(fn(*args))
    except BaseException as error:  # carried back to the caller, who turns it into text
        return Finished(error=error)


async def await_with_limit(
    make: Callable[[], Awaitable[T]], limit_s: float | None
) -> Finished[T] | TimedOut:
    """:func:`run_with_limit` for a coroutine, on the running loop: at the limit it is
    cancelled (it stops at its next ``await``), not abandoned."""
    token = _DEADLINE.set(None if limit_s is None else time.monotonic() + limit_s)
    scope = asyncio.timeout(limit_s)
    try:
        async with scope:
            value = await make()
    except Exception as error:  # carried back, as run_with_limit does
        return TimedOut(limit_s or 0.0) if scope.expired() else Finished(error=error)
    finally:
        _DEADLINE.reset(token)
    return Finished(value)


def run_coroutine(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` from synchronous code: an ``async def`` tool under ``Agent.run``.

    It runs on one event loop in a daemon thread of tao's, not on a loop made per call:
    ``asyncio.run`` refuses to start in a thread whose own loop is running (code calling
    ``agent.run`` from inside a coroutine), and a loop closed after each call would break
    the clients a tool keeps between calls (an ``httpx.AsyncClient`` belongs to its loop).
    This thread waits until the deadline of the call it runs in (:func:`remaining_s`);
    then, or when it is interrupted (Ctrl-C, the limit's alarm), the coroutine is
    cancelled, so nothing keeps running unseen.
    """
    future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), _LOOP.get())
    try:
        return future.result(timeout=remaining_s())
    except TimeoutError:
        if future.done():  # it ended just now, or raised a TimeoutError of its own
            return future.result()
        future.cancel()
        raise _Alarm from None
    except BaseException:
        future.cancel()
        raise


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


class _LoopThread:
    """The event loop async tools run on for synchronous callers, started on first use
    (and again in a forked child, which inherits the loop but not its thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._loop, self._pid = asyncio.new_event_loop(), os.getpid()
                threading.Thread(
                    target=self._loop.run_forever, name="tao-async-tools", daemon=True
                ).start()
            return self._loop


_LOOP = _LoopThread()
