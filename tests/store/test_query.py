"""Search, filter and paging of the run log, on SQLite and PostgreSQL (SPEC M3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tao.errors import StoreError
from tao.state.result import Status
from tao.store import RunQuery, Store

if TYPE_CHECKING:  # the fixture's class, for annotations only (conftest is not importable)
    from conftest import Runs


def _record(store: Store, runs: Runs) -> None:
    """Seven runs: two models, three statuses, tasks with LIKE wildcards and mixed case."""
    plan = [
        ("r0", "Summarise the README", "local", Status.FINISHED),
        ("r1", "Fix 100% of the tests", "openai:gpt-4o", Status.ERROR),
        ("r2", "rename snake_case names", "local", Status.FINISHED),
        ("r3", "Read the readme again", "openai:gpt-4o", Status.MAX_STEPS),
        ("r4", "Count files", "local", Status.FINISHED),
        ("r5", "readme: translate to Japanese 日本語", "local", Status.FINISHED),
        ("r6", "Delete old logs", "local", Status.INTERRUPTED),
    ]
    for number, (run_id, task, model, status) in enumerate(plan):
        result = runs.run(run_id, started_at=1_000.0 + number, task=task)
        result.model = model
        runs.record(store, result, 1, status=status)


def _ids(store: Store, **query: object) -> tuple[list[str], int]:
    page = store.find_runs(RunQuery(**query))  # type: ignore[arg-type]
    return [s.run_id for s in page.runs], page.total


def test_search_filter_and_page_in_the_database_M3(store: Store, runs: Runs) -> None:
    """M3: the web page's search (case-insensitive task text), status and model filters,
    and pages (limit/offset) with the total count, newest first, on both backends."""
    _record(store, runs)
    assert _ids(store, text="README") == (["r5", "r3", "r0"], 3)  # any case
    assert _ids(store, text="日本語") == (["r5"], 1)
    assert _ids(store, text="100%") == (["r1"], 1)  # % is a character, not a wildcard
    assert _ids(store, text="e_c") == (["r2"], 1)  # _ too: "snake_case" only
    assert _ids(store, status="finished") == (["r5", "r4", "r2", "r0"], 4)
    assert _ids(store, model="openai:gpt-4o") == (["r3", "r1"], 2)
    assert _ids(store, text="readme", model="local", status="finished") == (["r5", "r0"], 2)
    assert _ids(store, limit=3) == (["r6", "r5", "r4"], 7)
    assert _ids(store, limit=3, offset=3) == (["r3", "r2", "r1"], 7)
    assert _ids(store, limit=3, offset=6) == (["r0"], 7)
    assert _ids(store, limit=3, offset=9) == ([], 7)
    assert _ids(store, status="finished", limit=2, offset=2) == (["r2", "r0"], 4)
    assert _ids(store, status="interrupted") == (["r6"], 1)
    assert _ids(store, text="nothing like this") == ([], 0)
    assert store.models() == ["local", "openai:gpt-4o"]


def test_a_bad_query_is_a_clear_error_M3() -> None:
    """M3: a page's query string is untrusted: an unknown status or a huge text is refused."""
    with pytest.raises(StoreError, match="unknown status 'done'; choose one of: running"):
        RunQuery(status="done")
    with pytest.raises(StoreError, match="at most 200"):
        RunQuery(text="x" * 201)
