"""The run log in one SQLite file: every run, step and model call (SPEC M3, L1).

The file is ``$TAO_HOME/tao.db`` (:func:`tao.paths.default_db_path`). Several
``tao`` processes may write to it at once: WAL mode lets readers and one writer
proceed together, ``busy_timeout`` makes writers queue instead of failing, and
every write is one short ``BEGIN IMMEDIATE`` transaction so no process ever holds
the lock while a model is thinking. Copying the WAL back into the file (a
checkpoint, with its fsync) is done by a thread of its own every few hundred
writes, so no step waits for the disk (SPEC R3: a logged step costs little more
than an unlogged one); SQLite's own checkpoint stays on as a backstop.

    store = SQLiteStore.connect(Path("runs.db"))   # or open_store(path)

Every sqlite3 failure leaves this module as a :class:`tao.errors.StoreError` that
names the file and says what to do; a damaged file is never deleted or
overwritten, so nothing is lost by opening it. The queries live in
:class:`tao.store.base.Store`; this module only connects, locks and words errors.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tao.errors import StoreError
from tao.paths import default_db_path, private_dir, tighten
from tao.store.base import Store
from tao.store.schema import (
    SCHEMA_VERSION,
    NotARunLogError,
    SchemaTooNewError,
    migrate,
    read_version,
)
from tao.store.sql import Connection

_BUSY_TIMEOUT_MS = 15_000
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_NOTADB = 26
#: Write transactions between two background checkpoints (a step makes about two).
_CHECKPOINT_EVERY = 200
#: WAL pages after which a writer checkpoints itself, should the background one fall behind.
_WAL_BACKSTOP_PAGES = 10_000


class _Checkpointer:
    """Checkpoints the WAL from a daemon thread with its own connection, when poked.

    ``PASSIVE`` never waits for (or blocks) a reader or writer; a checkpoint that
    cannot finish now is finished by a later one, or by the last connection to close.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def poke(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="tao-wal", daemon=True)
            self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=_BUSY_TIMEOUT_MS / 1000)

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            while not self._stopping:
                self._wake.wait()
                self._wake.clear()
                if not self._stopping:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            pass  # only an optimisation: the writers' own checkpoints take over
        finally:
            conn.close()


def _owner_only(path: Path) -> None:
    """The run log file made 0600 before SQLite opens it, and its ``-wal``/``-shm``
    tightened if an older tao left them readable: SQLite creates those two with the
    log's own permissions, so a 0600 log keeps them owner-only whatever the umask.

    An existing log is never opened here, only stat'ed and chmod'ed: closing any
    descriptor of a file drops every POSIX lock this process holds on it, SQLite's
    included. A second store opened while the first was live would leave that one
    without its locks; another process closing the log would then take itself for the
    last one and delete the WAL under it, and the first store's later writes were lost
    (``disk I/O error`` on the next open)."""
    try:
        if not path.exists():
            with suppress(FileExistsError):
                os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
        for suffix in ("", "-wal", "-shm", "-journal"):
            with suppress(FileNotFoundError):
                tighten(f"{path}{suffix}")
    except OSError:
        pass  # a read-only or special path: SQLite reports the real problem next


class SQLiteStore(Store):
    """The run log in one SQLite file; one connection shared by threads under a lock."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        """Use :meth:`connect`; this only wraps an already prepared connection."""
        super().__init__(str(path))
        self.path = path
        self._conn = conn
        self._writes = 0
        self._checkpointer = _Checkpointer(path)

    @classmethod
    def connect(cls, path: Path | str | None = None) -> SQLiteStore:
        """Open the file at ``path`` (default ``$TAO_HOME/tao.db``), creating or migrating it."""
        path = Path(path) if path is not None else default_db_path()
        try:
            private_dir(path.parent)
        except OSError as error:
            raise StoreError(f"cannot create the folder for the run log {path}: {error}") from None
        _owner_only(path)
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(
                path,
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # guarded by SQLiteStore._lock
            )
            _prepare(conn)
        except (SchemaTooNewError, NotARunLogError, sqlite3.Error) as error:
            if conn is not None:
                conn.close()
            raise _refusal(path, error) from None
        return cls(path, conn)

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    # SQLite may have rolled back already (a full disk): keep the first error.
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as error:
                raise _store_error(self.path, error) from None
            self._writes += write
            if write and self._writes % _CHECKPOINT_EVERY == 0:
                self._checkpointer.poke()

    def _disconnect(self) -> None:
        self._checkpointer.stop()
        self._conn.close()


def _prepare(conn: sqlite3.Connection) -> None:
    """Pragmas, then the schema: a foreign or newer file is refused before it is changed."""
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS:d}")
    found = read_version(conn)
    if found > SCHEMA_VERSION:
        raise SchemaTooNewError(found)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; loses no integrity
    conn.execute(f"PRAGMA wal_autocheckpoint = {_WAL_BACKSTOP_PAGES:d}")  # see _Checkpointer
    if migrate(conn) == 0:  # with foreign keys off: the rebuilds drop and rename `runs`
        _compact(conn)
    conn.execute("PRAGMA foreign_keys = ON")


def _compact(conn: sqlite3.Connection) -> None:
    """A new file went through every migration, whose rebuilds of ``runs`` split the schema
    onto two pages; rewriting it once puts the schema back on the first page, so damage to
    any other page is found when read, not when opened. Best effort: another process that
    opened the new file meanwhile only leaves it as it is."""
    with suppress(sqlite3.OperationalError):
        conn.execute("VACUUM")


def _refusal(path: Path, error: SchemaTooNewError | NotARunLogError | sqlite3.Error) -> StoreError:
    """Why a file is not opened, and what to do about it; the file stays as it was."""
    if isinstance(error, sqlite3.Error):
        return _store_error(path, error)
    if isinstance(error, SchemaTooNewError):
        return StoreError(
            f"the run log {path} was written by a newer tao (schema v{error.found}, "
            f"this tao knows v{SCHEMA_VERSION}); upgrade tao, or set TAO_HOME to use "
            "another run log"
        )
    return StoreError(
        f"{path} is an SQLite database but not a tao run log; move it aside "
        "or set TAO_HOME to another folder"
    )


def _store_error(path: Path, error: sqlite3.Error) -> StoreError:
    """Turn a sqlite3 failure into one actionable sentence naming the file."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return StoreError(
            f"the run log {path} is damaged or not a database ({error}); tao leaves it "
            f"untouched: move it aside (e.g. `mv {path} {path}.broken`) and tao will start "
            "a new one, or set TAO_HOME to another folder"
        )
    if code is not None and code & 0xFF == _SQLITE_FULL:
        return StoreError(
            f"the run log {path} is full ({error}); free some disk space, or set TAO_HOME "
            "to a folder on another disk"
        )
    if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
        return StoreError(
            f"the run log {path} stayed locked by another process for "
            f"{_BUSY_TIMEOUT_MS // 1000} s ({error}); try again"
        )
    return StoreError(f"cannot use the run log {path}: {error}")
