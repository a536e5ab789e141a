"""The run log: every run, step and model call in one SQLite file (SPEC M3, L1).

The file is ``$TAO_HOME/tao.db`` (``TAO_HOME`` defaults to the platform's user
data dir). Several ``tao`` processes may write to it at once: WAL mode lets
readers and one writer proceed together, ``busy_timeout`` makes writers queue
instead of failing, and every write is one short ``BEGIN IMMEDIATE``
transaction so no process ever holds the lock while a model is thinking.

    store = Store.open()
    for summary in store.list_runs(limit=5):
        print(summary.run_id[:8], summary.status, summary.task)
    result = store.get_run("3f2a")          # a unique prefix is enough

Every sqlite3 failure leaves this module as a :class:`tao.StoreError` that
names the file and says what to do; a damaged file is never deleted or
overwritten, so nothing is lost by opening it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import platformdirs

from tao.errors import StoreError
from tao.store.rows import (
    FINAL_STATUSES,
    HOST,
    INTERRUPTED,
    SELECT_STEPS,
    SELECT_SUMMARY,
    STATUSES,
    Connection,
    RunSummary,
    dumps,
    ensure_run,
    insert_step,
    step_from_row,
    summary_from_row,
)
from tao.store.schema import (
    RUNNING,
    SCHEMA_VERSION,
    NotARunLogError,
    SchemaTooNewError,
    migrate,
    read_version,
)
from tao.trace import RunResult, Status, Step, Usage

#: Set to ``postgresql://user:password@host:port/db`` to keep the run log in PostgreSQL.
DATABASE_URL_ENV = "TAO_DATABASE_URL"

_BUSY_TIMEOUT_MS = 15_000
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26


def default_db_path() -> Path:
    """``$TAO_HOME/tao.db``; ``TAO_HOME`` defaults to ``platformdirs.user_data_dir("tao")``."""
    home = os.environ.get("TAO_HOME") or platformdirs.user_data_dir("tao")
    return Path(home).expanduser() / "tao.db"


class Store:
    """A handle on one run log file; safe to share between threads of a process.

    :meth:`open` without a path returns a :class:`tao.store.postgres.PostgresStore`
    (same API, same errors) when ``TAO_DATABASE_URL`` is set.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        """Use :meth:`open`; this only wraps an already prepared connection."""
        self.path = path
        self._conn = conn
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        """Where the run log lives, for messages: a file path, or a URL without password."""
        return str(self.path)

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | None = None) -> Store:
        """Open (creating and migrating if needed) the run log at ``path`` or the default.

        Without ``path``, a ``TAO_DATABASE_URL`` of ``postgresql://…`` selects PostgreSQL.
        """
        url = os.environ.get(DATABASE_URL_ENV, "").strip()
        if path is None and url:
            try:  # psycopg is an optional extra, imported only when asked for
                from tao.store.postgres import PostgresStore
            except ImportError:
                raise StoreError(
                    f"{DATABASE_URL_ENV} selects PostgreSQL, which needs psycopg: "
                    "pip install 'tao[postgres]' (or unset it to use the SQLite run log)"
                ) from None
            return PostgresStore.connect(url)
        path = Path(path) if path is not None else default_db_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot create the folder for the run log {path}: {error}") from None
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(
                path,
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # guarded by Store._lock
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS:d}")
            # Read first: a foreign or newer file must be refused before we change it.
            found = read_version(conn)
            if found > SCHEMA_VERSION:
                raise SchemaTooNewError(found)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; loses no integrity
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
        except SchemaTooNewError as error:
            _close(conn)
            raise StoreError(
                f"the run log {path} was written by a newer tao (schema v{error.found}, "
                f"this tao knows v{SCHEMA_VERSION}); upgrade tao, or set TAO_HOME to use "
                "another run log"
            ) from None
        except NotARunLogError:
            _close(conn)
            raise StoreError(
                f"{path} is an SQLite database but not a tao run log; move it aside "
                "or set TAO_HOME to another folder"
            ) from None
        except sqlite3.Error as error:
            _close(conn)
            raise _store_error(path, error) from None
        return cls(path, conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """One consistent snapshot for a multi-statement read."""
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                try:
                    yield self._conn
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as error:
                raise _store_error(self.path, error) from None

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A short write transaction; the lock is taken up front so it cannot deadlock."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as error:
                raise _store_error(self.path, error) from None

    # -- writing (used by RunRecorder) -----------------------------------------------

    def begin_run(self, result: RunResult, config: Mapping[str, Any] | None = None) -> None:
        """Record that ``result`` started; a resumed run (same id) becomes running again."""
        with self._write() as conn:
            conn.execute(
                """
                INSERT INTO runs (id, task, model, lang, status, started_at, config, pid, host)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET
                    status = excluded.status, finished_at = NULL, duration_s = NULL,
                    answer = NULL, error = NULL, stop_reason = NULL,
                    pid = excluded.pid, host = excluded.host
                """,
                (
                    result.run_id,
                    result.task,
                    result.model,
                    result.lang,
                    RUNNING,
                    result.started_at or time.time(),
                    dumps(dict(config or {})),
                    os.getpid(),
                    HOST,
                ),
            )

    def add_step(self, result: RunResult, step: Step) -> None:
        """Record one finished step and its model call, committed at once."""
        with self._write() as conn:
            ensure_run(conn, result, None)
            insert_step(conn, result, step, replace=True)
            conn.execute(
                """
                UPDATE runs SET (model_calls, input_tokens, output_tokens, evaluated_tokens) =
                    (SELECT count(*), coalesce(sum(input_tokens), 0),
                            coalesce(sum(output_tokens), 0), sum(evaluated_tokens)
                     FROM model_calls WHERE run_id = ?)
                WHERE id = ?
                """,
                (result.run_id, result.run_id),
            )

    def finish_run(self, result: RunResult, config: Mapping[str, Any] | None = None) -> None:
        """Record the final status, answer and usage; also stores any step not yet seen.

        Works without a prior :meth:`begin_run`, so a finished result can be
        saved in one call (imports, tests, observers attached late).
        """
        with self._write() as conn:
            ensure_run(conn, result, config)
            for step in result.steps:
                insert_step(conn, result, step, replace=False)
            usage = result.usage
            conn.execute(
                """
                UPDATE runs SET status = ?, answer = ?, error = ?, stop_reason = ?, finished_at = ?,
                    duration_s = ?, model_calls = ?, input_tokens = ?, output_tokens = ?,
                    evaluated_tokens = ?
                WHERE id = ?
                """,
                (
                    str(result.status),
                    result.answer,
                    result.error,
                    result.stop_reason,
                    time.time(),
                    result.duration_s,
                    usage.model_calls,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.evaluated_tokens,
                    result.run_id,
                ),
            )

    def save_state(self, run_id: str, state: Mapping[str, Any]) -> None:
        """Keep the loop's latest checkpoint: what ``tao resume`` continues from."""
        with self._write() as conn:
            conn.execute("UPDATE runs SET state = ? WHERE id = ?", (dumps(dict(state)), run_id))

    def load_state(self, run_id: str) -> dict[str, Any] | None:
        """The latest checkpoint of a run, or ``None`` if it never saved one."""
        with self._read() as conn:
            row = conn.execute("SELECT state FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        state: dict[str, Any] = json.loads(row[0])
        return state

    # -- reading -----------------------------------------------------------------

    def list_runs(self, limit: int = 20, status: str | None = None) -> list[RunSummary]:
        """The ``limit`` most recently started runs, newest first, optionally of one status."""
        if status is not None and status not in STATUSES:
            raise StoreError(f"unknown status {status!r}; choose one of: {', '.join(STATUSES)}")
        where, params = "", list[Any]()
        if status is not None:
            # ``interrupted`` is computed from ``running`` rows after reading.
            where, params = "WHERE status = ?", [RUNNING if status == INTERRUPTED else status]
        query = f"{SELECT_SUMMARY} {where} ORDER BY started_at DESC, rowid DESC"
        if status not in (RUNNING, INTERRUPTED):
            query += " LIMIT ?"
            params.append(max(limit, 0))
        with self._read() as conn:
            rows = conn.execute(query, params).fetchall()
        summaries = [summary_from_row(row) for row in rows]
        if status in (RUNNING, INTERRUPTED):
            summaries = [s for s in summaries if s.status == status]
        return summaries[: max(limit, 0)]

    def resolve(self, run_id_or_prefix: str) -> str:
        """The full id of the one run whose id starts with ``run_id_or_prefix``."""
        prefix = run_id_or_prefix.strip()
        if not prefix:
            raise StoreError("give a run id (or a unique prefix of one); see `tao runs list`")
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with self._read() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (prefix,)).fetchone():
                return prefix
            rows = conn.execute(
                "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 6",
                (escaped + "%",),
            ).fetchall()
        if not rows:
            raise StoreError(f"no run with id {prefix!r} in {self.where}; see `tao runs list`")
        if len(rows) > 1:
            shown = ", ".join(row[0] for row in rows[:5]) + (", …" if len(rows) > 5 else "")
            raise StoreError(
                f"run id prefix {prefix!r} is ambiguous (matches {shown}); give more characters"
            )
        return str(rows[0][0])

    def unique_prefixes(self, run_ids: Iterable[str], min_length: int = 8) -> dict[str, str]:
        """The shortest prefix (at least ``min_length``) of each id that names only that run.

        Run ids start with a timestamp, so a fixed-width prefix is shared by
        runs started close together; the neighbours in id order decide instead.
        """
        shortest: dict[str, str] = {}
        with self._read() as conn:
            for run_id in run_ids:
                length = min_length
                for neighbour in conn.execute(
                    "SELECT max(id) FROM runs WHERE id < ? UNION ALL "
                    "SELECT min(id) FROM runs WHERE id > ?",
                    (run_id, run_id),
                ):
                    if neighbour[0] is not None:
                        length = max(length, _common_prefix(run_id, neighbour[0]) + 1)
                shortest[run_id] = run_id[:length]
        return shortest

    def get_summary(self, run_id_or_prefix: str) -> RunSummary:
        """The :class:`RunSummary` of one run (its true state, including ``running``)."""
        run_id = self.resolve(run_id_or_prefix)
        with self._read() as conn:
            row = conn.execute(f"{SELECT_SUMMARY} WHERE id = ?", (run_id,)).fetchone()
        if row is None:  # deleted between the two reads
            raise StoreError(f"no run with id {run_id!r} in {self.where}")
        return summary_from_row(row)

    def get_run(self, run_id_or_prefix: str) -> RunResult:
        """The full :class:`RunResult` of one run, steps with their model input and output.

        :class:`tao.Status` has no "unfinished" value, so a run still recorded as
        running comes back as ``Status.ERROR`` with an ``error`` saying so; use
        :meth:`get_summary` to tell running from interrupted.
        """
        summary = self.get_summary(run_id_or_prefix)
        with self._read() as conn:
            steps = [step_from_row(row) for row in conn.execute(SELECT_STEPS, (summary.run_id,))]
        status, error = summary.status, summary.error
        if status in (RUNNING, INTERRUPTED):
            error = error or (
                "the run is still in progress"
                if status == RUNNING
                else "the run was interrupted before it finished"
            )
        return RunResult(
            run_id=summary.run_id,
            task=summary.task,
            model=summary.model,
            status=Status(status) if status in FINAL_STATUSES else Status.ERROR,
            answer=summary.answer,
            error=error,
            steps=steps,
            stop_reason=summary.stop_reason,
            usage=Usage(
                model_calls=summary.model_calls,
                input_tokens=summary.input_tokens,
                output_tokens=summary.output_tokens,
                evaluated_tokens=summary.evaluated_tokens,
            ),
            lang=summary.lang,
            started_at=summary.started_at,
            duration_s=summary.duration_s or 0.0,
            pending=self._pending(summary.run_id) if status == "awaiting_approval" else None,
        )

    def _pending(self, run_id: str) -> list[dict[str, Any]] | None:
        state = self.load_state(run_id)
        return state.get("pending") if state else None

    def export_jsonl(self, run_id: str) -> Iterator[str]:
        """One run as JSON lines (no trailing newlines), for files, datasets and diffing.

        Line 1: ``{"type": "run", "schema": 1, "run_id", "task", "model", "lang",
        "status", "answer", "error", "started_at", "finished_at", "duration_s",
        "steps", "usage": {model_calls, input_tokens, output_tokens,
        evaluated_tokens}, "config"}``. Then one ``{"type": "step", "run_id", ...}``
        per step in order, carrying every :meth:`Step.to_dict` field (``index``,
        ``kind``, ``thought``, ``tool``, ``argument``, ``arguments``,
        ``observation``, ``model_input``, ``model_output``, timings, tokens), so
        each line stands alone.
        """
        summary = self.get_summary(run_id)
        result = self.get_run(summary.run_id)
        yield dumps(
            {
                "type": "run",
                "schema": SCHEMA_VERSION,
                "run_id": summary.run_id,
                "task": summary.task,
                "model": summary.model,
                "lang": summary.lang,
                "status": summary.status,
                "answer": summary.answer,
                "error": summary.error,
                "stop_reason": summary.stop_reason,
                "started_at": summary.started_at,
                "finished_at": summary.finished_at,
                "duration_s": summary.duration_s,
                "steps": summary.steps,
                "usage": asdict(result.usage),
                "config": summary.config,
            }
        )
        for step in result.steps:
            yield dumps({"type": "step", "run_id": summary.run_id, **step.to_dict()})


# -- helpers ---------------------------------------------------------------------------


def _close(conn: sqlite3.Connection | None) -> None:
    if conn is not None:
        conn.close()


def _store_error(path: Path, error: sqlite3.Error) -> StoreError:
    """Turn a sqlite3 failure into one actionable sentence naming the file."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return StoreError(
            f"the run log {path} is damaged or not a database ({error}); tao leaves it "
            f"untouched: move it aside (e.g. `mv {path} {path}.broken`) and tao will start "
            "a new one, or set TAO_HOME to another folder"
        )
    if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
        return StoreError(
            f"the run log {path} stayed locked by another process for "
            f"{_BUSY_TIMEOUT_MS // 1000} s ({error}); try again"
        )
    return StoreError(f"cannot use the run log {path}: {error}")


def _common_prefix(a: str, b: str) -> int:
    same = (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    return next(same, min(len(a), len(b)))
