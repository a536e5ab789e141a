"""A run's lease held by this process: taken, renewed in the background, given up.

:mod:`tao.store.lease` is the claim in the run log (SQL on one connection); this is the
process side of it, over a :class:`~tao.store.base.Store`: one daemon thread per process
renews every lease the process holds, so a tool call or a model that blocks the run's own
thread for minutes never loses it (SPEC R5).

    lease = RunLease(store, run_id)
    lease.take()          # RunBusyError if another process holds it
    ...                   # renewed in the background meanwhile
    lease.release()
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from tao.errors import StoreError
from tao.paths import lease_s
from tao.store.base import Store
from tao.store.lease import RENEWALS_PER_LEASE, Terms, holder_id


class RunLease:
    """This process's lease on one run; renewed by the process's heartbeat while held."""

    def __init__(self, store: Store, run_id: str, seconds: float | None = None) -> None:
        self.store, self.run_id = store, run_id
        self.terms = Terms(holder_id(), lease_s() if seconds is None else seconds)
        #: Taken and not yet released (by this object).
        self.held = False
        #: A renewal found another holder: this process must not act for the run any more.
        self.lost = False

    def take(self) -> None:
        """Take it now (:class:`~tao.errors.RunBusyError` if another process holds it)."""
        self.store.take_lease(self.run_id, self.terms)
        self.taken()

    def taken(self) -> None:
        """Taken (by :meth:`take`, or inside the run's first write): renew it from now on."""
        if not self.held:
            self.held = True
            _HEARTBEAT.add(self)

    def ended(self) -> None:
        """Released by the write that recorded the run's end: stop renewing."""
        self.held = False
        _HEARTBEAT.remove(self)

    def release(self) -> None:
        """Give it up now, if held; a failing run log is not an error here (the lease then
        runs out by itself)."""
        if not self.held:
            return
        self.ended()
        with suppress(StoreError):
            self.store.release_lease(self.run_id, self.terms.holder)

    @contextmanager
    def holding(self) -> Iterator[RunLease]:
        """``with lease.holding():`` take, act, release."""
        self.take()
        try:
            yield self
        finally:
            self.release()

    def renew(self) -> None:
        """The heartbeat's renewal; a lost lease is noted (the run's next write refuses)."""
        try:
            if not self.store.renew_lease(self.run_id, self.terms):
                self.lost = True
                _HEARTBEAT.remove(self)
        except StoreError:
            pass  # the database is away: retried at the next beat, and the lease has slack


class _Heartbeat:
    """One daemon thread per process renewing every lease it holds, each
    ``RENEWALS_PER_LEASE`` times per lease, the first a beat after it was taken (a quick
    run ends before any: no write of its own). Started on first use, and again in a forked
    child (which holds none of its parent's leases)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        #: Each held lease, and when (``time.monotonic``) it is next renewed.
        self._due: dict[int, tuple[float, RunLease]] = {}
        self._wake = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        #: When the thread wakes next by itself; a lease due before then wakes it sooner.
        #: Waking a thread costs more than a step, so back-to-back runs do not.
        self._sleeps_until = 0.0

    def add(self, lease: RunLease) -> None:
        with self._wake:
            due = time.monotonic() + _beat(lease)
            self._due[id(lease)] = (due, lease)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="tao-lease", daemon=True)
                self._thread.start()
            elif due < self._sleeps_until:
                self._wake.notify()

    def remove(self, lease: RunLease) -> None:
        with self._wake:
            self._due.pop(id(lease), None)

    def _serve(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                if not self._due:  # idle: look again a beat of the default lease later
                    self._sleeps_until = now + lease_s() / RENEWALS_PER_LEASE
                    self._wake.wait(self._sleeps_until - now)
                    continue
                first = min(due for due, _ in self._due.values())
                if first > now:
                    self._sleeps_until = first
                    self._wake.wait(first - now)  # or sooner, for a lease due sooner
                    continue
                ready = [(key, lease) for key, (due, lease) in self._due.items() if due <= now]
                for key, lease in ready:
                    self._due[key] = (now + _beat(lease), lease)
            for _, lease in ready:
                if lease.held:
                    lease.renew()


def _beat(lease: RunLease) -> float:
    return lease.terms.seconds / RENEWALS_PER_LEASE


_HEARTBEAT = _Heartbeat()
os.register_at_fork(after_in_child=_HEARTBEAT.reset)
