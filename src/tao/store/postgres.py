"""The run log in PostgreSQL, for teams sharing one log (SPEC M3).

    export TAO_DATABASE_URL=postgresql://tao:secret@db.internal:5432/tao
    tao run "…"                  # recorded in PostgreSQL
    tao runs list                # read from it

:meth:`tao.store.Store.open` returns a :class:`PostgresStore` when
``TAO_DATABASE_URL`` is set. It *is* a :class:`~tao.store.Store`: every query
is the one the SQLite log runs (written with ``?`` placeholders, translated to
psycopg's ``%s`` here), and rows come back readable by name and position like
``sqlite3.Row``, so :mod:`tao.store.rows` maps both. Only connecting,
transactions, migrations (:mod:`tao.store.pg_schema`) and error messages
differ. Needs ``pip install 'tao[postgres]'`` (psycopg 3).

Each write is one short transaction, like SQLite's ``BEGIN IMMEDIATE``; reads
run in ``REPEATABLE READ`` so a multi-statement read sees one snapshot. One
connection per store, shared by threads under a lock; a connection that broke
(server restart) is replaced on the next call. Every psycopg failure leaves as
a :class:`tao.StoreError` naming host and database, never the password.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import RowMaker

from tao.errors import StoreError
from tao.store.pg_schema import migrate
from tao.store.rows import Connection, Cursor
from tao.store.schema import SCHEMA_VERSION, NotARunLogError, SchemaTooNewError
from tao.store.sqlite import Store

_CONNECT_TIMEOUT_S = 10
_SCHEMES = ("postgresql://", "postgres://")


class PostgresRecord:
    """One result row, readable like ``sqlite3.Row``: ``row["status"]``, ``row[0]``, unpacking."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)


def _records(cursor: psycopg.Cursor[Any]) -> RowMaker[PostgresRecord]:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: PostgresRecord(values, index)


class _Qmark:
    """A :class:`~tao.store.rows.Connection` over psycopg: ``?`` placeholders become ``%s``.

    The run log's SQL has no ``?`` or ``%`` inside string literals; a literal ``%``
    is doubled anyway, as psycopg requires.
    """

    def __init__(self, conn: psycopg.Connection[PostgresRecord]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        query = sql.replace("%", "%%").replace("?", "%s")
        return self._conn.execute(query.encode(), parameters)


def display_url(url: str) -> str:
    """``postgresql://user@host:port/db`` of a URL or conninfo string; the password never."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unparsable TAO_DATABASE_URL)"
    user = f"{info['user']}@" if info.get("user") else ""
    host = str(info.get("host") or "localhost")
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{user}{host}{port}/{info.get('dbname') or ''}"


def _password(url: str) -> str | None:
    try:
        value = conninfo_to_dict(url).get("password")
    except psycopg.ProgrammingError:
        return None
    return str(value) if value else None


class PostgresStore(Store):
    """The run log in one PostgreSQL database; same API and errors as the SQLite store."""

    def __init__(self, url: str, conn: psycopg.Connection[PostgresRecord]) -> None:
        """Use :meth:`connect` (or ``Store.open()`` with ``TAO_DATABASE_URL``)."""
        self.url = url
        self._pg = conn
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return display_url(self.url)

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def connect(cls, url: str) -> PostgresStore:
        """Connect to ``url`` (``postgresql://…``), creating or migrating the schema."""
        if not url.startswith(_SCHEMES):
            scheme = url.split("://", 1)[0] if "://" in url else url[:12]
            raise StoreError(
                f"TAO_DATABASE_URL must start with postgresql:// (got {scheme!r}…); "
                "unset it to use the SQLite run log in $TAO_HOME"
            )
        where = display_url(url)
        conn = _connect(url)
        try:
            with conn.transaction():
                migrate(conn)
        except SchemaTooNewError as error:
            conn.close()
            raise StoreError(
                f"the run log {where} was written by a newer tao (schema v{error.found}, "
                f"this tao knows v{SCHEMA_VERSION}); upgrade tao, or set TAO_DATABASE_URL to "
                "use another run log"
            ) from None
        except NotARunLogError:
            conn.close()
            raise StoreError(
                f"{where} already has tables named like tao's (runs, steps, model_calls) but "
                "is not a tao run log; point TAO_DATABASE_URL at another database or schema"
            ) from None
        except psycopg.Error as error:
            conn.close()
            raise _store_error(url, error) from None
        return cls(url, conn)

    def close(self) -> None:
        with self._lock:
            self._pg.close()

    # -- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """One consistent snapshot for a multi-statement read."""
        with self._transaction("REPEATABLE READ") as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One short write transaction, committed on exit, rolled back on error."""
        with self._transaction("READ COMMITTED") as conn:
            yield conn

    @contextmanager
    def _transaction(self, isolation: str) -> Iterator[Connection]:
        with self._lock:
            try:
                if self._pg.broken or self._pg.closed:
                    self._pg = _connect(self.url)  # the server restarted; start afresh
                with self._pg.transaction():
                    self._pg.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}".encode())
                    yield _Qmark(self._pg)
            except psycopg.Error as error:
                raise _store_error(self.url, error) from None


# -- helpers -----------------------------------------------------------------------------


def _connect(url: str) -> psycopg.Connection[PostgresRecord]:
    try:
        return psycopg.connect(
            url,
            autocommit=True,  # transactions are explicit: conn.transaction()
            row_factory=_records,
            connect_timeout=_CONNECT_TIMEOUT_S,
            application_name="tao",
        )
    except psycopg.Error as error:
        raise StoreError(
            f"cannot connect to the PostgreSQL run log {display_url(url)}: "
            f"{_first_lines(url, error)}; check TAO_DATABASE_URL and that the server is "
            "running (unset TAO_DATABASE_URL to use the SQLite run log in $TAO_HOME)"
        ) from None


def _store_error(url: str, error: psycopg.Error) -> StoreError:
    if isinstance(error, psycopg.OperationalError):
        return StoreError(
            f"lost the connection to the PostgreSQL run log {display_url(url)} "
            f"({_first_lines(url, error)}); try again"
        )
    return StoreError(
        f"cannot use the PostgreSQL run log {display_url(url)}: {_first_lines(url, error)}"
    )


def _first_lines(url: str, error: BaseException) -> str:
    """The error's text on one line, with the password (should libpq echo it) masked."""
    text = " ".join(str(error).split()) or type(error).__name__
    password = _password(url)
    return text.replace(password, "***") if password else text
