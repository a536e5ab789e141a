"""Finding runs: search by task text, filter by status and model, one page at a time.

    page = store.find_runs(RunQuery(text="README", status="finished", limit=25, offset=25))
    page.runs, page.total          # the second 25 matches, and how many match in all

The filtering, counting and paging happen in SQL, written once for SQLite and
PostgreSQL (``lower(task) LIKE ?`` matches case-insensitively on both; the
pattern's own ``%`` and ``_`` are escaped). One exception keeps the answer honest:
a ``running`` row whose process is gone reads ``interrupted`` (judged in Python,
:func:`tao.store.rows.process_gone`), so those two statuses read every row
recorded as running or interrupted that matches the rest, and sort them out
before paging.
"""

from __future__ import annotations

from dataclasses import dataclass

from tao.errors import StoreError
from tao.state.result import Status
from tao.store.rows import SELECT_SUMMARY, Connection, RunSummary, SQLValue, summary_from_row

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
