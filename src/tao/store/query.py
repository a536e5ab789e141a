"""Finding runs: search by task text, filter by status and model, one page at a time.

    page = store.find_runs(RunQuery(text="README", status="finished", limit=25, offset=25))
    page.runs, page.total          # the second 25 matches, and how many match in all

The filtering, counting and paging happen in SQL, written once for SQLite and
PostgreSQL (``lower(task) LIKE ?`` matches case-insensitively on both; the
pattern's own ``%`` and ``_`` are escaped). One exception keeps the answer honest:
a ``running`` row whose process is gone reads ``interrupted`` (judged in Python,
:func:`tao.store.sql.process_gone`), so those two statuses read every row
recorded as running or interrupted that matches the rest, and sort them out
before paging.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

from tao.errors import StateError, StoreError
from tao.state import codec
from tao.state.config import RunConfig
from tao.state.jsontypes import JSONObject
from tao.state.result import Status
from tao.store.lease import Lease
from tao.store.sql import Connection, Row, SQLValue, loads_object, process_gone

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
           {_LIVE_COST}, config, pid, host, parent_id, parent_step, parent_position,
           lease_holder, lease_until
    FROM runs
"""  # noqa: S608 (constant expressions, no data)


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
    """The run this one follows up (``tao run --continue``), or whose tool call started it
    (a child run, ``Agent.as_tool``: then ``parent_step`` is set), if any."""
    cost_usd: float | None = None
    """What the run cost in US dollars; ``None``: unknown (see :class:`tao.state.budget.Usage`)."""
    holder: str | None = None
    """Who acts for the run now (its live lease: a worker, a ``tao resume``); ``None``: nobody."""
    parent_step: int | None = None
    """A child run's parent step: the step whose call started it."""
    parent_position: int | None = None
    """That call's place among the step's calls."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> JSONObject:
        """The ``--json`` shape of ``tao runs list``; ``config`` is ``{}`` when unknown."""
        data = codec.encode(self)
        if self.config is None:
            data["config"] = {}
        return data


#: A child run's place in its parent: written last, and only for a child run.
_CHILD_KEYS = ("parent_step", "parent_position")
codec.shape(
    RunSummary,
    keys=(*(f.name for f in fields(RunSummary) if f.name not in _CHILD_KEYS), "tokens",
          *_CHILD_KEYS),
    computed=("tokens",),
    omit_default=_CHILD_KEYS,
)  # fmt: skip


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
        parent_step=row["parent_step"],
        parent_position=row["parent_position"],
        cost_usd=row["cost_usd"],
        holder=_live_holder(row),
    )


def _live_holder(row: Row) -> str | None:
    """The lease holder, while its lease runs and (on this host) its process lives."""
    holder, until = row["lease_holder"], row["lease_until"]
    if holder is None or until is None or float(until) < time.time():
        return None
    return None if Lease(str(holder), 0.0, float(until)).dead() else str(holder)


#: Every status a query can filter on.
STATUSES: tuple[str, ...] = tuple(str(status) for status in Status)

#: The longest search text taken (a page's query string is untrusted).
MAX_TEXT = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class RunQuery:
    """Which runs to list, newest first; empty fields do not filter."""

    text: str | None = None
    """Words the task contains (case-insensitive substring)."""
    status: str | None = None
    """One of :data:`STATUSES`."""
    model: str | None = None
    """The exact model spec (``local``, ``openai:gpt-4o``…)."""
    limit: int = 20
    offset: int = 0

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in STATUSES:
            raise StoreError(
                f"unknown status {self.status!r}; choose one of: {', '.join(STATUSES)}"
            )
        if self.text is not None and len(self.text) > MAX_TEXT:
            raise StoreError(f"search text is {len(self.text)} characters; at most {MAX_TEXT}")


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of matching runs, and how many match in all (for ``page 2 of 7``)."""

    runs: list[RunSummary]
    total: int


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _where(query: RunQuery, *, live: bool) -> tuple[str, list[SQLValue]]:
    clauses: list[str] = []
    params: list[SQLValue] = []
    if query.text:
        clauses.append("lower(task) LIKE ? ESCAPE '\\'")
        params.append(_like(query.text))
    if query.model:
        clauses.append("model = ?")
        params.append(query.model)
    if live:  # also recorded as running: sorted out after reading
        clauses.append("status IN (?, ?)")
        params.extend([str(query.status), str(Status.RUNNING)])
    elif query.status is not None:
        clauses.append("status = ?")
        params.append(query.status)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def find_runs(conn: Connection, query: RunQuery) -> RunPage:
    """The page of runs ``query`` asks for, in one read transaction (``conn``)."""
    limit, offset = max(query.limit, 0), max(query.offset, 0)
    live = query.status in (Status.RUNNING, Status.INTERRUPTED)
    where, params = _where(query, live=live)
    order = " ORDER BY started_at DESC, rowid DESC"
    if live:
        rows = conn.execute(SELECT_SUMMARY + where + order, params).fetchall()
        matching = [s for s in map(summary_from_row, rows) if s.status == query.status]
        return RunPage(matching[offset : offset + limit], len(matching))
    count = conn.execute("SELECT count(*) FROM runs" + where, params).fetchone()  # noqa: S608 (constant clauses, ? placeholders)
    rows = conn.execute(
        SELECT_SUMMARY + where + order + " LIMIT ? OFFSET ?", [*params, limit, offset]
    ).fetchall()
    return RunPage([summary_from_row(row) for row in rows], int(count[0]) if count else 0)


def models(conn: Connection) -> list[str]:
    """Every model spec in the log, sorted: the choices of a model filter."""
    return [str(row[0]) for row in conn.execute("SELECT DISTINCT model FROM runs ORDER BY model")]
