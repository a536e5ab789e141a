"""The tool call in progress, as the code it calls can see it: which run, which step.

An agent used as a tool (``Agent.as_tool``) starts a child run; the child must know
its parent (to be recorded under it), the parent's budget left (it gets no more), and
be reachable by the parent's cancel; a child that waits for a person nobody can ask
inline pauses the parent, whose pending calls become the child's. The driver sets a
:class:`CallContext` around each call it runs, in the thread that runs it (a context
variable: parallel calls each see their own), and reads back the child run the call
started and what it waits on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from tao.run.act import Approver, Person
from tao.run.exchange import ChildResume
from tao.state.budget import ChildRun
from tao.state.config import PendingCall
from tao.state.status import Status

#: Stops a child run from outside (the parent was cancelled or interrupted).
Stop = Callable[[Status], None]


@dataclass(frozen=True, slots=True)
class Remaining:
    """What is left of the parent run's budget when the call starts."""

    tokens: int
    seconds: float
    #: ``None``: the parent has no money limit.
    cost_usd: float | None


@dataclass(slots=True, eq=False)
class CallContext:
    """One tool call of a run: set by the driver, read (and filled in) by the tool."""

    run_id: str
    step: int
    tool: str
    remaining: Remaining
    #: The call's place among its reply's calls: with ``run_id`` and ``step``, where a
    #: child run it starts is recorded, so a resumed parent finds that child again.
    position: int = 0
    #: The parent run's approver: a child run with none of its own asks it, so a person at
    #: ``tao run``'s prompt decides the child's calls inline and neither run pauses.
    approve: Approver | Person | None = None
    #: The paused child run this call continues (the parent stopped on it), if any.
    resume: ChildResume | None = None
    #: The child run the call started, once it has ended; the step records it.
    child: ChildRun | None = None
    #: The child's calls that wait for a person nobody could ask inline: the parent
    #: pauses on them (issue 31).
    waiting: tuple[PendingCall, ...] = ()
    _stops: list[Stop] = field(default_factory=list)
    _stopped: Status | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_stop(self, stop: Stop) -> None:
        """Have ``stop`` called when the parent stops (at once, if it already has)."""
        with self._lock:
            stopped = self._stopped
            if stopped is None:
                self._stops.append(stop)
        if stopped is not None:
            stop(stopped)

    def stop(self, status: Status) -> None:
        with self._lock:
            self._stopped, stops = status, list(self._stops)
        for stop in stops:
            stop(status)


_CURRENT: ContextVar[CallContext | None] = ContextVar("tao_call", default=None)


def current() -> CallContext | None:
    """The call being run in this thread or task; ``None`` outside a run's tool call."""
    return _CURRENT.get()


@contextmanager
def calling(context: CallContext) -> Iterator[CallContext]:
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)
