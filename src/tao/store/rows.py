"""How runs and steps map onto rows of the run log (SPEC M3, L1).

Kept apart from :mod:`tao.store.sqlite` (connections, locking, errors) so the
translation between :mod:`tao.trace` dataclasses and SQL lives in one place.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from tao.store.schema import RUNNING
from tao.trace import RunResult, Status, Step, StepKind

#: Computed state of a ``running`` row whose writer process (on this host) is gone.
INTERRUPTED = "interrupted"
#: Final statuses of SPEC L1, as stored.
FINAL_STATUSES = frozenset(str(s) for s in Status)
#: Every status :meth:`tao.store.Store.list_runs` can filter on.
STATUSES: tuple[str, ...] = (RUNNING, INTERRUPTED, *(str(s) for s in Status))

#: This machine's name, stored with a running row so liveness is only judged locally.
HOST = socket.gethostname()

SELECT_SUMMARY = """
    SELECT id, task, model, lang, status, answer, error, stop_reason,
           started_at, finished_at, duration_s,
           (SELECT count(*) FROM steps WHERE steps.run_id = runs.id) AS steps,
           model_calls, input_tokens, output_tokens, evaluated_tokens, config, pid, host
    FROM runs
"""

SELECT_STEPS = """
    SELECT s.idx, s.kind, s.thought, s.tool, s.argument, s.arguments, s.observation,
           s.duration_s, s.model_duration_s, s.tool_duration_s, s.input_tokens,
           s.output_tokens, s.evaluated_tokens, s.call_index,
           (SELECT messages FROM model_calls m WHERE m.run_id = s.run_id
                AND m.step_index = s.idx ORDER BY m.id DESC LIMIT 1) AS messages,
           (SELECT reply FROM model_calls m WHERE m.run_id = s.run_id
                AND m.step_index = s.idx ORDER BY m.id DESC LIMIT 1) AS reply
    FROM steps s WHERE s.run_id = ? ORDER BY s.idx
"""


class Row(Protocol):
    """A result row readable by column name and by position (``sqlite3.Row`` and the like)."""

    def __getitem__(self, key: int | str, /) -> Any: ...


class Cursor(Protocol):
    """The part of a DB-API cursor the run log uses."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection taking ``?`` placeholders: ``sqlite3.Connection``, or the PostgreSQL
    adapter in :mod:`tao.store.postgres`; the run log's SQL is written once for both."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...


@dataclass(frozen=True)
class RunSummary:
    """One row of ``tao runs list``: who, when, how it ended, what it cost.

    ``status`` is a :class:`tao.Status` value, ``running``, or ``interrupted``
    (recorded as running, but its process on this host no longer exists).
    """

    run_id: str
    task: str
    model: str
    lang: str
    status: str
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
    config: dict[str, Any]

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tokens": self.tokens}


def dumps(data: Any) -> str:
    """Compact JSON that keeps non-ASCII text readable (Turkish, Arabic, Japanese runs)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


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


def summary_from_row(row: Row) -> RunSummary:
    status = row["status"]
    if status == RUNNING and process_gone(row["pid"], row["host"]):
        status = INTERRUPTED
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
        config=json.loads(row["config"]),
    )


def step_from_row(row: Row) -> Step:
    arguments = row["arguments"]
    return Step(
        index=row["idx"],
        kind=StepKind(row["kind"]),
        thought=row["thought"],
        tool=row["tool"],
        argument=row["argument"],
        arguments=None if arguments is None else json.loads(arguments),
        observation=row["observation"],
        model_input=json.loads(row["messages"] or "[]"),
        model_output=row["reply"] or "",
        duration_s=row["duration_s"],
        model_duration_s=row["model_duration_s"],
        tool_duration_s=row["tool_duration_s"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        evaluated_tokens=row["evaluated_tokens"],
        call_index=row["call_index"],
    )


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
        """
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
        """,
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
        """
        INSERT INTO model_calls (run_id, step_index, model, messages, reply, input_tokens,
            output_tokens, evaluated_tokens, duration_s, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        (
            *key,
            result.model,
            dumps(step.model_input),
            step.model_output,
            step.input_tokens,
            step.output_tokens,
            step.evaluated_tokens,
            step.model_duration_s,
            now,
        ),
    )


def ensure_run(conn: Connection, result: RunResult, config: Mapping[str, Any] | None) -> None:
    """Insert the run's row if ``begin_run`` was never called (a late or partial observer)."""
    conn.execute(
        """
        INSERT INTO runs (id, task, model, lang, status, started_at, config)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO NOTHING
        """,
        (
            result.run_id,
            result.task,
            result.model,
            result.lang,
            RUNNING,
            result.started_at or time.time(),
            dumps(dict(config or {})),
        ),
    )
