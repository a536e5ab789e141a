"""The SQL vocabulary of the run log: a connection, its rows, JSON columns, this host.

The bottom of :mod:`tao.store`: the row codecs (:mod:`tao.store.rows`, ``steps``,
``transcript``, ``query``), the schema, the lease and the retries all speak to a
:class:`Connection` and read JSON columns the same way, without needing each other.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypeAlias

from tao.errors import StateError
from tao.state.jsontypes import JSON, JSONObject

#: What a query parameter may be.
SQLValue: TypeAlias = str | int | float | None

#: This machine's name, stored with a running row so liveness is only judged locally.
HOST = socket.gethostname()


class Row(Protocol):
    """A result row readable by column name and by position (``sqlite3.Row`` and the like).

    Values are whatever the column holds (text, number or NULL); the schema types
    them, so the mapping below reads them as such.
    """

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __len__(self) -> int: ...


class Cursor(Protocol):
    """The part of a DB-API cursor the run log uses."""

    def fetchone(self) -> Row | None: ...

    def fetchall(self) -> Sequence[Row]: ...

    def __iter__(self) -> Iterator[Row]: ...


class Connection(Protocol):
    """A connection taking ``?`` placeholders: ``sqlite3.Connection``, or the PostgreSQL
    adapter in :mod:`tao.store.postgres`; the run log's SQL is written once for both."""

    def execute(self, sql: str, parameters: Sequence[SQLValue] = ..., /) -> Cursor: ...


#: Made once: a step writes a few small JSON values, and building an encoder costs as much.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(data: JSON) -> str:
    """Compact JSON that keeps non-ASCII text readable (Turkish, Arabic, Japanese runs)."""
    return _ENCODER.encode(data)


def loads(text: str, what: str) -> JSON:
    """Parse a JSON column; ``what`` names it (``run X: its config``) if it is damaged."""
    try:
        value: JSON = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise StateError(f"the run log holds damaged JSON in {what}: {error}") from None
    return value


def loads_object(text: str, what: str) -> JSONObject:
    """Parse a JSON column that must hold an object."""
    value = loads(text, what)
    if not isinstance(value, dict):
        raise StateError(f"the run log holds {type(value).__name__} in {what}, not an object")
    return value


def process_gone(pid: int | None, host: str | None) -> bool:
    """Whether the process that wrote a ``running`` row is known to be dead."""
    if pid is None or host != HOST or os.name != "posix":
        return False  # cannot tell; and on Windows os.kill would terminate, not probe
    try:
        os.kill(pid, 0)  # signal 0 delivers nothing; it only checks existence
    except ProcessLookupError:
        return True
    except OSError:
        return False  # exists, but belongs to another user
    return False
