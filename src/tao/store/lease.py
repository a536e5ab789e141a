"""The run lease: one process at a time acts for a run (SPEC R5, R1).

Two ``tao resume`` of one run, or a resume while the run still goes on elsewhere, would
each run its next step: a side effect twice. So whoever runs, resumes or decides for a run
first takes its lease, a row-level claim in the run log (``runs.lease_holder``,
``lease_since``, ``lease_until``, schema v7):

- **take**: one conditional ``UPDATE`` in a write transaction, which succeeds only when
  nobody holds the lease, the holder is this one, or its time ran out. SQLite's
  ``BEGIN IMMEDIATE`` and PostgreSQL's row lock (the second ``UPDATE`` waits, then sees the
  new holder) make it atomic: of two processes at once, exactly one gets it. The other gets
  a :class:`tao.errors.RunBusyError` naming the holder (host, pid, since) and changes
  nothing.
- **renew**: every ``lease_s / 6`` seconds one daemon thread per process (in
  :mod:`tao.store.heartbeat`)
  pushes ``lease_until`` on for every lease the process holds, even while a tool call or a
  model blocks the run's own thread for minutes.
- **release**: with the run's end (finished, paused, interrupted, cancelled: in the same
  transaction as its status), or when the process stops driving it some other way.
- **expire**: a killed holder renews nothing; after ``lease_s`` (``$TAO_LEASE_S``, 30 s)
  its lease may be taken. On the holder's own host a holder whose pid is gone is taken at
  once.

Every write of a leased run checks that this process still holds it (a fence): a process
that was stopped (SIGSTOP, a laptop lid) past its lease while another took over fails its
next write with :class:`~tao.errors.RunBusyError` instead of overwriting the new holder's run.

A holder is any string: ``host:pid:random`` for a tao process (:func:`holder_id`), which
is what lets a same-host dead pid be recognised; a worker on a queue (issue 28) may use
its own id with :meth:`tao.store.Store.take_lease`, ``renew_lease`` and ``release_lease``.
Times are the database's clock (:meth:`tao.store.Store.now`), so hosts sharing a
PostgreSQL log need not agree on theirs.

    lease = RunLease(store, run_id)   # tao.store.heartbeat
    lease.take()          # RunBusyError if another process holds it
    ...                   # renewed in the background meanwhile
    lease.release()
"""

from __future__ import annotations

import datetime
import os
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tao.errors import RunBusyError
from tao.paths import LEASE_ENV, lease_s
from tao.store.sql import HOST, Connection, process_gone

if TYPE_CHECKING:
    pass

#: A renewal comes this many times per lease, so a few late ones never lose it.
RENEWALS_PER_LEASE = 6


def holder_id() -> str:
    """``host:pid:random``: unique to this process and this lease, and telling where it runs."""
    return f"{HOST}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a run's lease, since when, and until when unless renewed."""

    holder: str
    since: float
    until: float

    @property
    def host(self) -> str | None:
        """The holder's host, when the holder is a tao process (``host:pid:random``)."""
        parts = self.holder.rsplit(":", 2)
        return parts[0] if len(parts) == 3 and parts[1].isdigit() else None

    @property
    def pid(self) -> int | None:
        parts = self.holder.rsplit(":", 2)
        return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None

    def dead(self) -> bool:
        """Whether the holder is a process on this host that is gone (killed, crashed)."""
        return self.host == HOST and process_gone(self.pid, self.host)

    def describe(self) -> str:
        """``host example, pid 4242, since 2025-01-31 12:00:00 UTC`` (or the worker's id)."""
        since = datetime.datetime.fromtimestamp(self.since, datetime.UTC)
        when = since.strftime("%Y-%m-%d %H:%M:%S UTC")
        if self.host is None:
            return f"holder {self.holder!r}, since {when}"
        return f"host {self.host}, pid {self.pid}, since {when}"


@dataclass(frozen=True, slots=True)
class Terms:
    """What a holder asks for: its id, and how long each take or renewal lasts."""

    holder: str
    seconds: float


# -- the SQL, written once for both databases ------------------------------------------------

_COLUMNS = "SELECT lease_holder, lease_since, lease_until FROM runs WHERE id = ?"


def read(conn: Connection, run_id: str) -> Lease | None:
    """The run's lease; ``None`` when nobody holds it (or there is no such run)."""
    row = conn.execute(_COLUMNS, (run_id,)).fetchone()
    if row is None or row[0] is None:
        return None
    return Lease(str(row[0]), float(row[1] or 0.0), float(row[2] or 0.0))


def take(conn: Connection, run_id: str, terms: Terms, now: float) -> Lease | None:
    """Take the run's lease in the caller's write transaction; returns the live lease of
    another holder when it cannot (nothing changed then), else ``None``. A run with no row
    yet (a new run, written with its first checkpoint) has nothing to take: ``None``."""
    until, holder = now + terms.seconds, terms.holder
    conn.execute(
        """UPDATE runs SET lease_since = CASE WHEN lease_holder = ? THEN lease_since ELSE ? END,
               lease_holder = ?, lease_until = ?
           WHERE id = ? AND (lease_holder IS NULL OR lease_holder = ? OR lease_until < ?)""",
        (holder, now, holder, until, run_id, holder, now),
    )
    other = read(conn, run_id)
    if other is None or other.holder == holder:
        return None
    if other.dead():  # same host, pid gone: no need to wait for its time to run out
        conn.execute(
            """UPDATE runs SET lease_holder = ?, lease_since = ?, lease_until = ?
               WHERE id = ? AND lease_holder = ?""",
            (holder, now, until, run_id, other.holder),
        )
        again = read(conn, run_id)
        return None if again is not None and again.holder == holder else again
    return other


def renew(conn: Connection, run_id: str, terms: Terms, now: float) -> bool:
    """Push the lease on; ``False`` when this holder no longer holds it."""
    conn.execute(
        "UPDATE runs SET lease_until = ? WHERE id = ? AND lease_holder = ?",
        (now + terms.seconds, run_id, terms.holder),
    )
    held = read(conn, run_id)
    return held is not None and held.holder == terms.holder


def release(conn: Connection, run_id: str, holder: str) -> None:
    """Give the lease up, if this holder still holds it."""
    conn.execute(
        """UPDATE runs SET lease_holder = NULL, lease_since = NULL, lease_until = NULL
           WHERE id = ? AND lease_holder = ?""",
        (run_id, holder),
    )


def fence(conn: Connection, run_id: str, terms: Terms, now: float) -> None:
    """Inside a write for a leased run: refuse it when another holder has the run now."""
    row = conn.execute(_COLUMNS, (run_id,)).fetchone()
    if row is None or row[0] == terms.holder:
        return  # not written yet (a new run's first write takes it), or still ours
    if row[0] is None:  # nobody acts for it (only a holder releases): hold it again
        take(conn, run_id, terms, now)
        return
    other = Lease(str(row[0]), float(row[1] or 0.0), float(row[2] or 0.0))
    raise busy(run_id, other, lost=True)


def busy(run_id: str, other: Lease, *, lost: bool = False) -> RunBusyError:
    """The error for a run another process acts for: who, since when, what to do."""
    if lost:
        return RunBusyError(
            f"run {run_id} was taken over by another process ({other.describe()}) after "
            "this one let its lease run out; this process stops without writing to it",
            other.holder,
        )
    return RunBusyError(
        f"run {run_id} is being run by another process ({other.describe()}); nothing was "
        "changed. Wait for it to end or pause, or stop that process: a killed one's lease "
        f"runs out within {lease_s():g} s (${LEASE_ENV})",
        other.holder,
    )


# -- the holder's side: take, renew in the background, release ------------------------------
