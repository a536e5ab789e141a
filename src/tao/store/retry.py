"""A store outage shorter than the retry window loses nothing (SPEC R4).

A backend raises :class:`ConnectionLost` when its database went away (a server
restart, a dropped network). :func:`retrying` then runs the whole transaction
again, on a new connection, with growing pauses (50 ms doubling to 1 s), for up
to ``$TAO_STORE_RETRY_S`` seconds (10 by default) after the first failure. Every
write of the run log is idempotent, so a transaction that did commit before its
answer was lost changes nothing when it runs again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from tao.errors import StoreError
from tao.paths import STORE_RETRY_ENV, store_retry_s
from tao.store.sql import Connection

T = TypeVar("T")

_FIRST_PAUSE_S = 0.05
_LONGEST_PAUSE_S = 1.0


class ConnectionLost(StoreError):
    """The database went away (a server restart): the transaction may be retried."""


def retrying(
    transaction: Callable[[], AbstractContextManager[Connection]],
    work: Callable[[Connection], T],
) -> T:
    """``work`` inside ``transaction()``, again while the connection is lost and time is left.

    Beyond the window the last failure is raised as a :class:`StoreError` saying so.
    """
    deadline, pause = 0.0, _FIRST_PAUSE_S
    while True:
        try:
            with transaction() as conn:
                return work(conn)
        except ConnectionLost as error:
            now = time.monotonic()
            deadline = deadline or now + store_retry_s()
            if now >= deadline:
                raise StoreError(
                    f"{error}, and it did not come back within {store_retry_s():g} s "
                    f"({STORE_RETRY_ENV})"
                ) from None
            time.sleep(min(pause, deadline - now))
            pause = min(pause * 2, _LONGEST_PAUSE_S)
