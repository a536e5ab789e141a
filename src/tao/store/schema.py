"""The run log's schema and its ordered migrations (SPEC M3).

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` takes a
file from version ``i`` to ``i + 1``; a new release appends a migration and
never edits an old one, so any older file can be brought forward in place.
A file with a *newer* version is refused rather than guessed at: an old tao
writing rows a new tao does not expect is how logs get silently damaged.

Design notes:

* ``steps`` holds what the trace shows (thought, action, observation, timings);
  ``model_calls`` holds what the model saw and said (``messages``, ``reply``).
  A step's ``model_input``/``model_output`` are read back from its model call,
  so the (quadratically growing) transcript is stored once, not twice.
* ``runs.status`` adds ``running`` to the final statuses of SPEC L1: a run that
  was killed keeps its steps and stays visibly unfinished.
"""

from __future__ import annotations

import sqlite3

#: The version this tao writes; bump it together with a new entry in MIGRATIONS.
SCHEMA_VERSION = 1

#: Status of a run whose ``on_finish`` has not been recorded (yet).
RUNNING = "running"

_V1: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        id               TEXT PRIMARY KEY,
        task             TEXT NOT NULL,
        model            TEXT NOT NULL,
        lang             TEXT NOT NULL,
        status           TEXT NOT NULL CHECK (status IN
                         ('running', 'finished', 'max_steps', 'awaiting_approval', 'error')),
        answer           TEXT,
        error            TEXT,
        stop_reason      TEXT,
        started_at       REAL NOT NULL,
        finished_at      REAL,
        duration_s       REAL,
        model_calls      INTEGER NOT NULL DEFAULT 0,
        input_tokens     INTEGER NOT NULL DEFAULT 0,
        output_tokens    INTEGER NOT NULL DEFAULT 0,
        evaluated_tokens INTEGER,
        config           TEXT NOT NULL DEFAULT '{}',
        state            TEXT,
        pid              INTEGER,
        host             TEXT
    )
    """,
    "CREATE INDEX runs_started_at ON runs (started_at)",
    """
    CREATE TABLE steps (
        run_id           TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        idx              INTEGER NOT NULL,
        kind             TEXT NOT NULL,
        thought          TEXT,
        tool             TEXT,
        argument         TEXT,
        arguments        TEXT,
        observation      TEXT,
        duration_s       REAL NOT NULL,
        model_duration_s REAL NOT NULL,
        tool_duration_s  REAL NOT NULL,
        input_tokens     INTEGER NOT NULL,
        output_tokens    INTEGER NOT NULL,
        evaluated_tokens INTEGER,
        call_index       INTEGER NOT NULL DEFAULT 0,
        created_at       REAL NOT NULL,
        PRIMARY KEY (run_id, idx)
    )
    """,
    """
    CREATE TABLE model_calls (
        id               INTEGER PRIMARY KEY,
        run_id           TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step_index       INTEGER,
        model            TEXT NOT NULL,
        messages         TEXT NOT NULL,
        reply            TEXT NOT NULL,
        input_tokens     INTEGER NOT NULL,
        output_tokens    INTEGER NOT NULL,
        evaluated_tokens INTEGER,
        duration_s       REAL NOT NULL,
        created_at       REAL NOT NULL
    )
    """,
    "CREATE INDEX model_calls_run ON model_calls (run_id, step_index)",
)

#: ``MIGRATIONS[i]`` upgrades a file from schema version ``i`` to ``i + 1``.
MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1,)

assert len(MIGRATIONS) == SCHEMA_VERSION


class SchemaTooNewError(Exception):
    """The file was written by a newer tao; carries the version it found."""

    def __init__(self, found: int) -> None:
        super().__init__(found)
        self.found = found


class NotARunLogError(Exception):
    """The file is a valid SQLite database that tao did not create."""


def read_version(conn: sqlite3.Connection) -> int:
    """Return the file's schema version; raises sqlite3 errors on a corrupt file."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the file up to :data:`SCHEMA_VERSION` inside one write transaction.

    ``BEGIN IMMEDIATE`` takes the write lock *before* reading the version, so
    two processes opening a fresh file at once cannot both run a migration.
    Returns the version found before migrating.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = read_version(conn)
        if found > SCHEMA_VERSION:
            raise SchemaTooNewError(found)
        if found == 0:
            (tables,) = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            ).fetchone()
            if tables:
                raise NotARunLogError
        for version in range(found, SCHEMA_VERSION):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
        if found != SCHEMA_VERSION:
            # PRAGMA does not take parameters; the value is our own integer constant.
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
