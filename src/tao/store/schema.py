"""The run log's schema and its ordered migrations, written once for both databases (SPEC M3).

The tables are one template rendered per :class:`Dialect` (SQLite here,
PostgreSQL in :mod:`tao.store.pg_schema`), so the two schemas cannot drift apart.

In SQLite the schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]``
takes a file from version ``i`` to ``i + 1``; a new release appends a migration
and never edits an old one, so any older file can be brought forward in place.
A file with a *newer* version is refused rather than guessed at: an old tao
writing rows a new tao does not expect is how logs get silently damaged.

Versions:

* v1 (tao 0.1): ``runs``, ``steps``, ``model_calls``; ``runs.status`` one of
  running, finished, max_steps, awaiting_approval, error.
* v2: ``runs.status`` may also be ``interrupted`` and ``cancelled`` (issue 11:
  statuses that say what happened). A CHECK constraint cannot be altered in
  SQLite, so ``runs`` is rebuilt: copied into a new table, rowids kept (they
  order runs that started at the same instant), then renamed over the old one.
* v3 (issue 14, SPEC R3): the run log is linear in the run's length. A new
  ``run_messages`` table keeps each run's transcript once, append-only (``seq``
  from 0); ``model_calls.input_count`` says a step's input is the run's first
  ``input_count`` messages (then ``model_calls.messages`` holds only what
  follows them, ``[]`` as a rule), and ``runs.state_messages`` says the
  checkpoint's transcript is the run's first ``state_messages`` messages (then
  ``runs.state`` carries no ``messages``). Both are NULL in rows written before
  v3, or when a transcript did not extend the stored one (stored in full then).
* v4: ``steps.repeat_of`` and ``steps.forced``.
* v5 (issue 15): ``runs.parent_id``, the run a follow-up continues (``tao run
  --continue``); NULL for every other run, and for every run written before v5.
* v6 (issue 15): ``steps.cost_usd`` and ``runs.cost_usd``, money in US dollars (NULL:
  unknown, as in every row written before v6).
* v7 (issue 26, SPEC R5): the run lease, ``runs.lease_holder`` (who acts for the run:
  ``host:pid:random`` for a tao process, any string for a worker), ``runs.lease_since``
  and ``runs.lease_until`` (seconds since the epoch, by the database's clock). NULL
  holder: nobody holds it (every row written before v7). See :mod:`tao.store.lease`.
* v8 (issue 28): ``runs.status`` may also be ``queued`` (``tao submit``: waiting for a
  worker). SQLite rebuilds ``runs`` again, as for v2, with every column v3 to v7 added.
* v9 (issue 27): ``steps.compactions``, the compactions made just before a step's model
  request (JSON, :class:`tao.state.compaction.Compaction`); NULL: none (every row written
  before v9). The checkpoint in ``runs.state`` holds all of a run's, for resume.
* v10 (issue 30): ``steps.approval``, who decided on a step's call with side effects, when,
  from where and why (JSON, :class:`tao.state.config.Approval`); NULL: no such call.
* v11 (issue 31): ``steps.model`` and ``steps.model_failures`` (the fallback model that
  answered, and why the ones before it did not: a JSON list), ``steps.child_run`` (the
  run an agent-as-tool call started; that run's ``parent_id`` is this run) and what that
  child spent, ``steps.child_input_tokens``, ``child_output_tokens``, ``child_cost_usd``.
* v12 (issue 30): one field for a call's arguments (``steps.argument`` becomes ``unparsed``).
* v13 (issue 31): ``runs.parent_step`` and ``runs.parent_position``, the parent's step and
  the call's place in it, for a child run an agent-as-tool call started (written when the
  child starts, so a parent resumed after a crash continues that child rather than start
  another); NULL for every other run (a follow-up has ``parent_id`` only) and before v13.

Design notes:

* ``steps`` holds what the trace shows (thought, action, observation, timings);
  ``model_calls`` holds what the model saw and said (``messages``, ``reply``).
  A step's ``model_input``/``model_output`` are read back from its model call
  and the ``run_messages`` table, so each message is stored once (v3).
* ``runs.status`` stays ``running`` until the run's end is recorded: a run that
  was killed keeps its steps and stays visibly unfinished (read as ``interrupted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tao.errors import InternalError, StoreError
from tao.store.sql import Connection

#: The version this tao writes; bump it together with a new entry in MIGRATIONS.
SCHEMA_VERSION = 13

#: Statuses a v1 log accepts (tao 0.1); frozen, as the migration that made them.
V1_STATUSES = ("running", "finished", "max_steps", "awaiting_approval", "error")
#: Statuses a v2 log accepts.
V2_STATUSES = (*V1_STATUSES, "interrupted", "cancelled")
#: Statuses a v8 log accepts: every :class:`tao.Status`.
V8_STATUSES = (*V2_STATUSES, "queued")


@dataclass(frozen=True)
class Dialect:
    """How one database spells the column types the run log needs."""

    real: str
    """A double-precision float (times, durations)."""
    big: str
    """A 64-bit counter (tokens, process ids)."""
    key: str
    """A run id column: compared byte by byte, as the unique-prefix lookup needs."""
    serial: str
    """An auto-numbered integer primary key."""
    rowid: str
    """An extra leading column standing in for SQLite's implicit rowid (or nothing)."""


SQLITE = Dialect(real="REAL", big="INTEGER", key="TEXT", serial="INTEGER PRIMARY KEY", rowid="")


def status_check(statuses: Sequence[str]) -> str:
    """The CHECK expression limiting ``runs.status`` to ``statuses``."""
    return "status IN (" + ", ".join(f"'{status}'" for status in statuses) + ")"


def runs_table(d: Dialect, name: str, statuses: Sequence[str]) -> str:
    """``CREATE TABLE`` for the runs table (named ``name``, for a rebuild)."""
    return f"""
    CREATE TABLE {name} (
        {d.rowid}id      {d.key} PRIMARY KEY,
        task             TEXT NOT NULL,
        model            TEXT NOT NULL,
        lang             TEXT NOT NULL,
        status           TEXT NOT NULL CHECK ({status_check(statuses)}),
        answer           TEXT,
        error            TEXT,
        stop_reason      TEXT,
        started_at       {d.real} NOT NULL,
        finished_at      {d.real},
        duration_s       {d.real},
        model_calls      {d.big} NOT NULL DEFAULT 0,
        input_tokens     {d.big} NOT NULL DEFAULT 0,
        output_tokens    {d.big} NOT NULL DEFAULT 0,
        evaluated_tokens {d.big},
        config           TEXT NOT NULL DEFAULT '{{}}',
        state            TEXT,
        pid              {d.big},
        host             TEXT
    )
    """


#: The columns of ``runs``, in order, for copying it into a rebuilt table.
RUN_COLUMNS = (
    "id, task, model, lang, status, answer, error, stop_reason, started_at, finished_at, "
    "duration_s, model_calls, input_tokens, output_tokens, evaluated_tokens, config, state, "
    "pid, host"
)
RUNS_INDEX = "CREATE INDEX runs_started_at ON runs (started_at)"


def tables_v1(d: Dialect) -> tuple[str, ...]:
    """Schema v1 (tao 0.1): the three tables and their indexes."""
    steps = f"""
    CREATE TABLE steps (
        run_id           {d.key} NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        idx              INTEGER NOT NULL,
        kind             TEXT NOT NULL,
        thought          TEXT,
        tool             TEXT,
        argument         TEXT,
        arguments        TEXT,
        observation      TEXT,
        duration_s       {d.real} NOT NULL,
        model_duration_s {d.real} NOT NULL,
        tool_duration_s  {d.real} NOT NULL,
        input_tokens     {d.big} NOT NULL,
        output_tokens    {d.big} NOT NULL,
        evaluated_tokens {d.big},
        call_index       INTEGER NOT NULL DEFAULT 0,
        created_at       {d.real} NOT NULL,
        PRIMARY KEY (run_id, idx)
    )
    """
    model_calls = f"""
    CREATE TABLE model_calls (
        id               {d.serial},
        run_id           {d.key} NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step_index       INTEGER,
        model            TEXT NOT NULL,
        messages         TEXT NOT NULL,
        reply            TEXT NOT NULL,
        input_tokens     {d.big} NOT NULL,
        output_tokens    {d.big} NOT NULL,
        evaluated_tokens {d.big},
        duration_s       {d.real} NOT NULL,
        created_at       {d.real} NOT NULL
    )
    """
    return (
        runs_table(d, "runs", V1_STATUSES),
        RUNS_INDEX,
        steps,
        model_calls,
        "CREATE INDEX model_calls_run ON model_calls (run_id, step_index)",
    )


#: v1 -> v2 in SQLite: rebuild ``runs`` with the wider CHECK (foreign keys must be off,
#: or dropping the old table would cascade into ``steps``; :func:`migrate` sees to it).
_V2: tuple[str, ...] = (
    runs_table(SQLITE, "runs_v2", V2_STATUSES),
    f"INSERT INTO runs_v2 (rowid, {RUN_COLUMNS}) SELECT rowid, {RUN_COLUMNS} FROM runs",  # noqa: S608 (constants)
    "DROP TABLE runs",
    "ALTER TABLE runs_v2 RENAME TO runs",
    RUNS_INDEX,
)


def tables_v3(d: Dialect) -> tuple[str, ...]:
    """v2 -> v3, the same on both databases: the transcript once per run, and references to it."""
    return (
        f"CREATE TABLE run_messages (run_id {d.key} NOT NULL REFERENCES runs (id) "
        "ON DELETE CASCADE, seq INTEGER NOT NULL, message TEXT NOT NULL, "
        "PRIMARY KEY (run_id, seq))",
        "ALTER TABLE model_calls ADD COLUMN input_count INTEGER",
        "ALTER TABLE runs ADD COLUMN state_messages INTEGER",
    )


#: v3 -> v4, the same on both databases: a step's repeat mark and whether it was forced.
V4 = (
    "ALTER TABLE steps ADD COLUMN repeat_of INTEGER",
    "ALTER TABLE steps ADD COLUMN forced INTEGER NOT NULL DEFAULT 0",
)

#: v4 -> v5, the same on both databases: the run a follow-up continues. No foreign key:
#: a follow-up stays readable whatever becomes of its parent.
V5 = ("ALTER TABLE runs ADD COLUMN parent_id TEXT",)


def tables_v6(d: Dialect) -> tuple[str, ...]:
    """v5 -> v6, the same on both databases: what a step's model call and a run cost, in US
    dollars; NULL is unknown (a model with no price, or a row written before v6)."""
    return (
        f"ALTER TABLE steps ADD COLUMN cost_usd {d.real}",
        f"ALTER TABLE runs ADD COLUMN cost_usd {d.real}",
    )


def tables_v7(d: Dialect) -> tuple[str, ...]:
    """v6 -> v7, the same on both databases: the run lease (SPEC R5); a NULL holder is no
    lease, so every run written before v7 is free to be taken."""
    return (
        "ALTER TABLE runs ADD COLUMN lease_holder TEXT",
        f"ALTER TABLE runs ADD COLUMN lease_since {d.real}",
        f"ALTER TABLE runs ADD COLUMN lease_until {d.real}",
    )


def tables_v11(d: Dialect) -> tuple[str, ...]:
    """v10 -> v11, the same on both databases (issue 31): which fallback model answered a
    step and why the ones before it did not (JSON list); the child run an agent-as-tool
    call started, and what that child spent (counted in the parent's usage)."""
    return (
        "ALTER TABLE steps ADD COLUMN model TEXT",
        "ALTER TABLE steps ADD COLUMN model_failures TEXT",
        "ALTER TABLE steps ADD COLUMN child_run TEXT",
        f"ALTER TABLE steps ADD COLUMN child_input_tokens {d.big} NOT NULL DEFAULT 0",
        f"ALTER TABLE steps ADD COLUMN child_output_tokens {d.big} NOT NULL DEFAULT 0",
        f"ALTER TABLE steps ADD COLUMN child_cost_usd {d.real} DEFAULT 0",
    )


def steps_v12(answer_json: str) -> tuple[str, ...]:
    """v11 -> v12 (issue 30): one field for a call's arguments. A final answer, stored as
    ``argument`` until now, becomes ``arguments`` = ``{"answer": ...}`` (``answer_json``
    is the database's way to build that JSON text from ``argument``); the text as written
    stays only for a call that never became arguments, in a column named for that."""
    return (
        f"UPDATE steps SET arguments = {answer_json} "  # noqa: S608 (constants)
        "WHERE tool = 'finish' AND arguments IS NULL AND argument IS NOT NULL",
        "UPDATE steps SET argument = NULL WHERE arguments IS NOT NULL",
        "ALTER TABLE steps RENAME COLUMN argument TO unparsed",
    )


#: The columns v3 to v7 added to ``runs``, as a rebuilt table adds them again.
_LATER_RUN_COLUMNS = (
    ("state_messages", "INTEGER"),
    ("parent_id", "TEXT"),
    ("cost_usd", "REAL"),
    ("lease_holder", "TEXT"),
    ("lease_since", "REAL"),
    ("lease_until", "REAL"),
)
_V8_COLUMNS = ", ".join((RUN_COLUMNS, *(name for name, _ in _LATER_RUN_COLUMNS)))

#: v7 -> v8 in SQLite: rebuild ``runs`` with ``queued`` in its CHECK, as ``_V2`` did.
_V8: tuple[str, ...] = (
    runs_table(SQLITE, "runs_v8", V8_STATUSES),
    *(f"ALTER TABLE runs_v8 ADD COLUMN {name} {kind}" for name, kind in _LATER_RUN_COLUMNS),
    f"INSERT INTO runs_v8 (rowid, {_V8_COLUMNS}) SELECT rowid, {_V8_COLUMNS} FROM runs",  # noqa: S608 (constants)
    "DROP TABLE runs",
    "ALTER TABLE runs_v8 RENAME TO runs",
    RUNS_INDEX,
)

#: v8 -> v9, the same on both databases: what was compacted before a step's request.
V9 = ("ALTER TABLE steps ADD COLUMN compactions TEXT",)
#: v9 -> v10, the same on both databases: who decided on a step's call with side effects,
#: when, from where and why (JSON of :class:`tao.state.config.Approval`, issue 30); NULL on
#: a step with no such call, and on every step written before v10.
V10 = ("ALTER TABLE steps ADD COLUMN approval TEXT",)

#: v12 -> v13, the same on both databases: where in its parent a child run was started,
#: indexed, since a parent resumed at that step asks for the child it started
#: (:meth:`tao.store.base.Store.child_run`), and a log of many runs made that a full scan.
V13 = (
    "ALTER TABLE runs ADD COLUMN parent_step INTEGER",
    "ALTER TABLE runs ADD COLUMN parent_position INTEGER",
    "CREATE INDEX runs_parent ON runs (parent_id, parent_step, parent_position)",
)

#: ``MIGRATIONS[i]`` upgrades a file from schema version ``i`` to ``i + 1``.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    tables_v1(SQLITE),
    _V2,
    tables_v3(SQLITE),
    V4,
    V5,
    tables_v6(SQLITE),
    tables_v7(SQLITE),
    _V8,
    V9,
    V10,
    tables_v11(SQLITE),
    steps_v12("json_object('answer', argument)"),
    V13,
)

if len(MIGRATIONS) != SCHEMA_VERSION:
    raise InternalError(f"{len(MIGRATIONS)} SQLite migrations for schema {SCHEMA_VERSION}")


class SchemaTooNewError(StoreError):
    """The log was written by a newer tao; carries the version it found (the store words it)."""

    def __init__(self, found: int) -> None:
        super().__init__(f"schema version {found} is newer than {SCHEMA_VERSION}")
        self.found = found


class NotARunLogError(StoreError):
    """The database is valid but holds tables tao did not create (the store words it)."""


def read_version(conn: Connection) -> int:
    """Return the file's schema version; raises sqlite3 errors on a corrupt file."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return 0 if row is None else int(row[0])


def migrate(conn: Connection) -> int:
    """Bring the file up to :data:`SCHEMA_VERSION` inside one write transaction.

    ``BEGIN IMMEDIATE`` takes the write lock *before* reading the version, so
    two processes opening a fresh file at once cannot both run a migration.
    Foreign keys are switched off first (a no-op inside a transaction, so the
    caller switches them on afterwards). Returns the version found before migrating.
    """
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = read_version(conn)
        if found > SCHEMA_VERSION:
            raise SchemaTooNewError(found)
        if found == 0:
            tables = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            ).fetchone()
            if tables is not None and tables[0]:
                raise NotARunLogError("not a tao run log")
        for version in range(found, SCHEMA_VERSION):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
        if found != SCHEMA_VERSION:
            if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                raise StoreError("the migrated run log fails its foreign key check")
            # PRAGMA does not take parameters; the value is our own integer constant.
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
