"""The run log in PostgreSQL, for teams sharing one log (SPEC M3).

    export TAO_DATABASE_URL=postgresql://tao:secret@db.internal:5432/tao
    tao run "…"                  # recorded in PostgreSQL
    tao runs list                # read from it

:meth:`tao.store.open_store` returns a :class:`PostgresStore` when
``TAO_DATABASE_URL`` is set. It implements :class:`tao.store.base.Store`, whose
queries are the ones the SQLite log runs (written with ``?`` placeholders,
translated to psycopg's ``%s`` here); rows come back readable by name and
position like ``sqlite3.Row``, so :mod:`tao.store.rows` maps both. Only
connecting, transactions, migrations (:mod:`tao.store.pg_schema`) and error
messages differ. Needs ``pip install 'tao[postgres]'`` (psycopg 3).

Each write is one short transaction, like SQLite's ``BEGIN IMMEDIATE``; reads
run in ``REPEATABLE READ`` so a multi-statement read sees one snapshot. One
connection per store, shared by threads under a lock. A lost connection (a
server restart) is :class:`tao.store.retry.ConnectionLost`: the store reconnects
and runs the whole transaction again, with growing pauses, for up to
``$TAO_STORE_RETRY_S`` (10 s) before the write fails (SPEC R4). Every psycopg
failure leaves as a :class:`tao.StoreError` naming host and database, never the
password.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import RowMaker

from tao.errors import StoreError
from tao.paths import DATABASE_URL_ENV
from tao.store.base import Store
from tao.store.pg_schema import migrate
from tao.store.retry import ConnectionLost
from tao.store.schema import SCHEMA_VERSION, NotARunLogError, SchemaTooNewError
from tao.store.sql import Connection, Cursor, SQLValue

_CONNECT_TIMEOUT_S = 10
_SCHEMES = ("postgresql://", "postgres://")


class PostgresRecord:
    """One result row, readable like ``sqlite3.Row``: ``row["status"]``, ``row[0]``, unpacking."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[object], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str) -> object:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[object]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)


def _records(cursor: psycopg.Cursor[PostgresRecord]) -> RowMaker[PostgresRecord]:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: PostgresRecord(values, index)


class QmarkConnection:
    """A :class:`~tao.store.sql.Connection` over psycopg: ``?`` placeholders become ``%s``.

    The run log's SQL has no ``?`` or ``%`` inside string literals; a literal ``%``
    is doubled anyway, as psycopg requires.
    """

    def __init__(self, conn: psycopg.Connection[PostgresRecord]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[SQLValue] = (), /) -> Cursor:
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
    """The run log in one PostgreSQL database; one connection shared by threads under a lock."""

    def __init__(self, url: str, conn: psycopg.Connection[PostgresRecord]) -> None:
        """Use :meth:`connect` (or ``open_store()`` with ``TAO_DATABASE_URL``)."""
        super().__init__(display_url(url))
        self.url = url
        self._pg = conn

    @classmethod
    def connect(cls, url: str) -> PostgresStore:
        """Connect to ``url`` (``postgresql://…``), creating or migrating the schema."""
        if not url.startswith(_SCHEMES):
            scheme = url.split("://", 1)[0] if "://" in url else url[:12]
            raise StoreError(
                f"{DATABASE_URL_ENV} must start with postgresql:// (got {scheme!r}…); "
                "unset it to use the SQLite run log in $TAO_HOME"
            )
        conn = _first_connect(url)
        try:
            with conn.transaction():
                migrate(QmarkConnection(conn))
        except (SchemaTooNewError, NotARunLogError, psycopg.Error) as error:
            conn.close()
            raise _refusal(url, error) from None
        return cls(url, conn)

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:
        # A read sees one snapshot for all its statements; a write, each row's latest.
        isolation = "READ COMMITTED" if write else "REPEATABLE READ"
        with self._lock:
            try:
                if self._pg.broken or self._pg.closed:
                    self._pg = _connect(self.url)  # the server restarted; start afresh
                with self._pg.transaction():
                    self._pg.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}".encode())
                    yield QmarkConnection(self._pg)
            except psycopg.OperationalError as error:  # the server went away, or is not back yet
                raise ConnectionLost(str(_store_error(self.url, error))) from None
            except psycopg.Error as error:
                raise _store_error(self.url, error) from None

    def now(self, conn: Connection) -> float:
        """The server's clock: every host sharing the log times leases by it."""
        row = conn.execute("SELECT extract(epoch from clock_timestamp())::double precision")
        value = row.fetchone()
        return float(value[0]) if value is not None else 0.0

    def _disconnect(self) -> None:
        self._pg.close()


# -- helpers -----------------------------------------------------------------------------


def _refusal(url: str, error: SchemaTooNewError | NotARunLogError | psycopg.Error) -> StoreError:
    """Why a database is not used, and what to do about it; nothing in it was changed."""
    if isinstance(error, psycopg.Error):
        return _store_error(url, error)
    where = display_url(url)
    if isinstance(error, SchemaTooNewError):
        return StoreError(
            f"the run log {where} was written by a newer tao (schema v{error.found}, "
            f"this tao knows v{SCHEMA_VERSION}); upgrade tao, or set {DATABASE_URL_ENV} to "
            "use another run log"
        )
    return StoreError(
        f"{where} already has tables named like tao's (runs, steps, model_calls) but "
        f"is not a tao run log; point {DATABASE_URL_ENV} at another database or schema"
    )


def _connect(url: str) -> psycopg.Connection[PostgresRecord]:
    """A new connection; psycopg's OperationalError (refused, starting up) is the caller's."""
    return psycopg.connect(
        url,
        autocommit=True,  # transactions are explicit: conn.transaction()
        row_factory=_records,
        connect_timeout=_CONNECT_TIMEOUT_S,
        application_name="tao",
    )


def _first_connect(url: str) -> psycopg.Connection[PostgresRecord]:
    try:
        return _connect(url)
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
