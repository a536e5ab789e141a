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
from typing import Any, Protocol, TypeAlias

from tao.errors import StateError
from tao.redact import redact, redact_json, redact_optional, redact_url
from tao.state.config import RunConfig
from tao.state.jsontypes import JSON, JSONObject
from tao.state.result import RunResult, Status

#: What a query parameter may be.
SQLValue: TypeAlias = str | int | float | None

#: This machine's name, stored with a running row so liveness is only judged locally.
HOST = socket.gethostname()

#: A running run's usage, summed over its model calls when read (``finish_run`` records
#: the totals; no step rewrites the run's row for them, which keeps a step's write small).
_LIVE = """CASE WHEN status = 'running' THEN (SELECT CAST({total} AS BIGINT) FROM model_calls c
                WHERE c.run_id = runs.id) ELSE {column} END AS {column}"""

#: A running run's cost, summed over its steps: unknown (NULL) once an answered call has none.
_LIVE_COST = """CASE WHEN status = 'running' THEN (SELECT CASE WHEN sum(CASE WHEN s.cost_usd IS NULL
                AND s.kind <> 'model_error' THEN 1 ELSE 0 END) > 0 THEN NULL
                ELSE coalesce(sum(s.cost_usd), 0) END FROM steps s WHERE s.run_id = runs.id)
                ELSE cost_usd END AS cost_usd"""

SELECT_SUMMARY = f"""
    SELECT id, task, model, lang, status, answer, error, stop_reason,
           started_at, finished_at, duration_s,
           (SELECT count(*) FROM steps WHERE steps.run_id = runs.id) AS steps,
           {_LIVE.format(total="count(*)", column="model_calls")},
           {_LIVE.format(total="coalesce(sum(input_tokens), 0)", column="input_tokens")},
           {_LIVE.format(total="coalesce(sum(output_tokens), 0)", column="output_tokens")},
           {_LIVE.format(total="sum(evaluated_tokens)", column="evaluated_tokens")},
           {_LIVE_COST}, config, pid, host, parent_id
    FROM runs
"""  # noqa: S608 (constant expressions, no data)


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
    parent_id: str | None = None
    """The run this one follows up (``tao run --continue``), if any."""
    cost_usd: float | None = None
    """What the run cost in US dollars; ``None``: unknown (see :class:`tao.state.result.Usage`)."""

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
        parent_id=row["parent_id"],
        cost_usd=row["cost_usd"],
    )


#: A run that starts (again) is running, in this process, with nothing of an end recorded.
_RESTART = """
    DO UPDATE SET status = excluded.status, finished_at = NULL, duration_s = NULL,
        answer = NULL, error = NULL, stop_reason = NULL, pid = excluded.pid, host = excluded.host
"""


def stored_config(config: RunConfig | None) -> str:
    """A run's settings as the log keeps them (JSON): no credentials in URLs, no secrets
    (S8). An agent's runs share one config object, so the last one's text is kept."""
    global _last_config
    if config is None:
        return "{}"
    last = _last_config
    if last is not None and last[0] is config:
        return last[1]
    base_url = redact_url(config.base_url) if config.base_url else None
    text = dumps(redact_json(config.replace(base_url=base_url).to_json()))
    _last_config = (config, text)  # one assignment: safe for threads
    return text


_last_config: tuple[RunConfig, str] | None = None


_END = """
    UPDATE runs SET status = ?, answer = ?, error = ?, stop_reason = ?, finished_at = ?,
        duration_s = ?, model_calls = ?, input_tokens = ?, output_tokens = ?,
        evaluated_tokens = ?, cost_usd = ?
    WHERE id = ?
"""


def record_end(conn: Connection, result: RunResult) -> None:
    """The run's row as it ended: status, answer (redacted, SPEC S8), times and usage."""
    usage = result.usage
    conn.execute(
        _END,
        (str(result.status), redact_optional(result.answer), redact_optional(result.error),
         result.stop_reason, time.time(), result.duration_s, usage.model_calls,
         usage.input_tokens, usage.output_tokens, usage.evaluated_tokens, usage.cost_usd,
         result.run_id),
    )  # fmt: skip


def insert_run(
    conn: Connection, result: RunResult, config: RunConfig | None, *, restart: bool
) -> None:
    """Insert the run's row as ``running``; ``restart`` makes an existing one running again
    (a resumed run), else an existing row is kept (a late observer's ``finish_run``)."""
    conn.execute(
        f"""
        INSERT INTO runs (id, task, model, lang, status, started_at, config, pid, host, parent_id)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) {_RESTART if restart else "DO NOTHING"}
        """,  # noqa: S608 (a constant clause, no data)
        (
            result.run_id,
            redact(result.task),
            result.model,
            result.lang,
            str(Status.RUNNING),
            result.started_at or time.time(),
            stored_config(config),
            os.getpid(),
            HOST,
            result.parent_id,
        ),
    )


def shortest_prefixes(conn: Connection, run_ids: list[str], min_length: int) -> dict[str, str]:
    """Each run id's shortest prefix (at least ``min_length``) that no other run shares."""
    shortest: dict[str, str] = {}
    for run_id in run_ids:
        length = min_length
        for neighbour in conn.execute(
            "SELECT max(id) FROM runs WHERE id < ? UNION ALL SELECT min(id) FROM runs WHERE id > ?",
            (run_id, run_id),
        ):
            if neighbour[0] is not None:
                length = max(length, common_prefix(run_id, neighbour[0]) + 1)
        shortest[run_id] = run_id[:length]
    return shortest


def common_prefix(a: str, b: str) -> int:
    same = (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    return next(same, min(len(a), len(b)))
