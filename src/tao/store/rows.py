"""How runs and steps map onto rows of the run log (SPEC M3, L1).

Kept apart from the stores (connections, locking, errors) so the translation
between typed run state and SQL lives in one place, written once for SQLite and
PostgreSQL. JSON appears only here: each JSON column is parsed on the way in
and a damaged one is a :class:`tao.errors.StateError` naming the run, never a
traceback.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, cast

from tao.errors import StateError
from tao.jsontypes import JSON, JSONObject
from tao.state import RunConfig
from tao.trace import RunResult, Status, Step

#: What a query parameter may be.
SQLValue: TypeAlias = str | int | float | None

#: This machine's name, stored with a running row so liveness is only judged locally.
HOST = socket.gethostname()

SELECT_SUMMARY = """
    SELECT id, task, model, lang, status, answer, error, stop_reason,
           started_at, finished_at, duration_s,
           (SELECT count(*) FROM steps WHERE steps.run_id = runs.id) AS steps,
           model_calls, input_tokens, output_tokens, evaluated_tokens, config, pid, host
    FROM runs
"""

#: Step columns named as :class:`tao.trace.Step` fields (``arguments``, ``model_input``: JSON).
STEP_FIELDS = (
    "index", "kind", "thought", "tool", "argument", "observation", "model_output", "duration_s",
    "model_duration_s", "tool_duration_s", "input_tokens", "output_tokens", "evaluated_tokens",
    "call_index",
)  # fmt: skip

SELECT_STEPS = """
    SELECT s.idx AS "index", s.kind, s.thought, s.tool, s.argument, s.arguments, s.observation,
           s.duration_s, s.model_duration_s, s.tool_duration_s, s.input_tokens,
           s.output_tokens, s.evaluated_tokens, s.call_index,
           (SELECT messages FROM model_calls m WHERE m.run_id = s.run_id
                AND m.step_index = s.idx ORDER BY m.id DESC LIMIT 1) AS model_input,
           (SELECT reply FROM model_calls m WHERE m.run_id = s.run_id
                AND m.step_index = s.idx ORDER BY m.id DESC LIMIT 1) AS model_output
    FROM steps s WHERE s.run_id = ? ORDER BY s.idx
"""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """One row of ``tao runs list``: who, when, how it ended, what it cost."""

    run_id: str
    task: str
    model: str
    lang: str
    status: Status
    """As recorded; a ``running`` row whose process on this host is gone reads ``interrupted``."""
    answer: str | None
    error: str | None
    stop_reason: str | None
    started_at: float
    finished_at: float | None
    duration_s: float | None
    steps: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    evaluated_tokens: int | None
    config: RunConfig | None
    """The settings the run was started with; ``None`` when none were recorded."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> JSONObject:
        """The ``--json`` shape of ``tao runs list``; ``config`` is ``{}`` when unknown."""
        data: JSONObject = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["status"] = str(self.status)
        data["config"] = self.config.to_json() if self.config is not None else {}
        data["tokens"] = self.tokens
        return data


def dumps(data: JSON) -> str:
    """Compact JSON that keeps non-ASCII text readable (Turkish, Arabic, Japanese runs)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


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


def read_config(text: str, run_id: str) -> RunConfig | None:
    """The stored settings of a run; ``{}`` (none recorded) is ``None``."""
    data = loads_object(text, f"the config of run {run_id}")
    if not data:
        return None
    try:
        return RunConfig.from_json(data)
    except StateError as error:
        raise StateError(f"run {run_id}: {error}") from None


def summary_from_row(row: Row) -> RunSummary:
    status = Status(row["status"])
    if status is Status.RUNNING and process_gone(row["pid"], row["host"]):
        status = Status.INTERRUPTED
    return RunSummary(
        run_id=row["id"],
        task=row["task"],
        model=row["model"],
        lang=row["lang"],
        status=status,
        answer=row["answer"],
        error=row["error"],
        stop_reason=row["stop_reason"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        duration_s=row["duration_s"],
        steps=row["steps"],
        model_calls=row["model_calls"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        evaluated_tokens=row["evaluated_tokens"],
        config=read_config(row["config"], row["id"]),
    )


def step_from_row(row: Row, run_id: str) -> Step:
    """A stored step with the model call behind it (its messages and raw reply)."""
    data: JSONObject = {name: row[name] for name in STEP_FIELDS}
    where = f"step {data['index']} of run {run_id}"
    arguments = row["arguments"]
    data["arguments"] = None if arguments is None else loads_object(arguments, where)
    data["model_input"] = loads(row["model_input"] or "[]", where)
    data["model_output"] = row["model_output"] or ""
    try:
        return Step.from_dict(data)
    except (TypeError, ValueError) as error:
        raise StateError(f"the run log holds a damaged {where}: {error}") from None


_INSERT_STEP = """
    INSERT INTO steps (run_id, idx, kind, thought, tool, argument, arguments,
        observation, duration_s, model_duration_s, tool_duration_s, input_tokens,
        output_tokens, evaluated_tokens, call_index, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (run_id, idx) DO UPDATE SET
        kind = excluded.kind, thought = excluded.thought, tool = excluded.tool,
        argument = excluded.argument, arguments = excluded.arguments,
        observation = excluded.observation, duration_s = excluded.duration_s,
        model_duration_s = excluded.model_duration_s,
        tool_duration_s = excluded.tool_duration_s, input_tokens = excluded.input_tokens,
        output_tokens = excluded.output_tokens, evaluated_tokens = excluded.evaluated_tokens,
        call_index = excluded.call_index, created_at = excluded.created_at
"""

_INSERT_MODEL_CALL = """
    INSERT INTO model_calls (run_id, step_index, model, messages, reply, input_tokens,
        output_tokens, evaluated_tokens, duration_s, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def insert_step(conn: Connection, result: RunResult, step: Step, *, replace: bool) -> None:
    """Write one step and the model call behind it; ``replace=False`` keeps an existing one."""
    key = (result.run_id, step.index)
    if (
        not replace
        and conn.execute("SELECT 1 FROM steps WHERE run_id = ? AND idx = ?", key).fetchone()
    ):
        return
    now = time.time()
    conn.execute(
        _INSERT_STEP,
        (
            *key,
            str(step.kind),
            step.thought,
            step.tool,
            step.argument,
            None if step.arguments is None else dumps(step.arguments),
            step.observation,
            step.duration_s,
            step.model_duration_s,
            step.tool_duration_s,
            step.input_tokens,
            step.output_tokens,
            step.evaluated_tokens,
            step.call_index,
            now,
        ),
    )
    conn.execute("DELETE FROM model_calls WHERE run_id = ? AND step_index = ?", key)
    conn.execute(
        _INSERT_MODEL_CALL,
        (
            *key,
            result.model,
            dumps(cast(JSON, step.model_input)),
            step.model_output,
            step.input_tokens,
            step.output_tokens,
            step.evaluated_tokens,
            step.model_duration_s,
            now,
        ),
    )


#: A run that starts (again) is running, in this process, with nothing of an end recorded.
_RESTART = """
    DO UPDATE SET status = excluded.status, finished_at = NULL, duration_s = NULL,
        answer = NULL, error = NULL, stop_reason = NULL, pid = excluded.pid, host = excluded.host
"""


def insert_run(
    conn: Connection, result: RunResult, config: RunConfig | None, *, restart: bool
) -> None:
    """Insert the run's row as ``running``; ``restart`` makes an existing one running again
    (a resumed run), else an existing row is kept (a late observer's ``finish_run``)."""
    conn.execute(
        f"""
        INSERT INTO runs (id, task, model, lang, status, started_at, config, pid, host)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) {_RESTART if restart else "DO NOTHING"}
        """,  # noqa: S608 (a constant clause, no data)
        (
            result.run_id,
            result.task,
            result.model,
            result.lang,
            str(Status.RUNNING),
            result.started_at or time.time(),
            dumps(config.to_json() if config is not None else {}),
            os.getpid(),
            HOST,
        ),
    )
