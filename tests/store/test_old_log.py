"""A run log written by tao 0.1 still lists, shows and gives its checkpoints (issue 11, M3).

``data/main-0.1.db`` was written by the old code itself (commit 54f3c31, see
``data/make_old_log.py``): schema v1, config and checkpoints in their version-0
JSON. Opening a copy migrates it to schema v2 in place; every run, step and
checkpoint must come through typed, and the decision the old ``approve_run``
keyed by position must now be keyed by the pending call's id.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tao.state.config import PendingCall, RunConfig
from tao.state.result import RunResult, Status, StepKind
from tao.store import SCHEMA_VERSION
from tao.store.factory import open_store

OLD_LOG = Path(__file__).parent / "data" / "main-0.1.db"

FINISHED = "01a23bc821569fb715e4edfe"
MAX_STEPS = "01a23bc8218b1015474564f5"
WAITING = "01a23bc821a6c1f4db65224b"
APPROVED = "01a23bc821b0d482baeffade"


@pytest.fixture
def old_log(tmp_path: Path) -> Path:
    """A copy of the old log: the committed file itself is never opened for writing."""
    copy = tmp_path / "tao.db"
    shutil.copyfile(OLD_LOG, copy)
    return copy


def _version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_the_old_log_is_migrated_to_the_current_schema_keeping_every_row(old_log: Path) -> None:
    """M3: v1 -> v5 rebuilds `runs` without losing a run, step or model call (no cascade)."""
    assert _version(old_log) == 1
    open_store(old_log).close()
    assert _version(old_log) == SCHEMA_VERSION == 13
    conn = sqlite3.connect(old_log)
    try:
        counts = [
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("runs", "steps", "model_calls")
        ]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        table = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    finally:
        conn.close()
    assert counts == [4, 4, 4]
    assert "'interrupted', 'cancelled', 'queued'" in table


def test_the_old_log_lists_and_shows_every_run(old_log: Path) -> None:
    """Issue 11: runs of tao 0.1 list (newest first) and show with their steps and config."""
    with open_store(old_log) as store:
        listed = store.list_runs()
        finished = store.get_run(FINISHED[:13])
        budget = store.get_run(MAX_STEPS)
        waiting = store.get_run(WAITING)
    assert [(s.run_id, s.status) for s in listed] == [
        (APPROVED, Status.AWAITING_APPROVAL),
        (WAITING, Status.AWAITING_APPROVAL),
        (MAX_STEPS, Status.MAX_STEPS),
        (FINISHED, Status.FINISHED),
    ]
    assert (finished.status, finished.answer, finished.task) == (
        Status.FINISHED,
        "395",
        "What is 17 * 23 + 4?",
    )
    assert [s.kind for s in finished.steps] == [StepKind.ACTION, StepKind.FINAL]
    assert finished.steps[0].observation == "391"
    assert finished.config == RunConfig(model="replay:replies-0.json", tools=("calc",))
    assert (budget.status, len(budget.steps), budget.usage.model_calls) == (Status.MAX_STEPS, 2, 2)
    # Issue 15: a run recorded before costs were kept cost an unknown amount, never $0.
    assert finished.usage.cost_usd is None and finished.steps[0].cost_usd is None
    assert [s.cost_usd for s in listed] == [None] * 4
    assert budget.config is not None and budget.config.max_steps == 2
    assert waiting.config is not None and waiting.config.tools == ("write",)
    assert waiting.config.project is not None and waiting.config.project.endswith("/project")


def test_the_old_checkpoints_read_as_typed_checkpoints_S3(old_log: Path) -> None:
    """S3: a paused run's pending write_file call, reply and transcript come back typed;
    the old position-keyed decision is now keyed by the PendingCall id."""
    call = PendingCall(
        step=1,
        position=0,
        tool="write_file",
        arguments={"path": "notes.txt", "content": "hello\n"},
        effects=("writes",),
        preview="--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hello",
    )
    with open_store(old_log) as store:
        waiting, approved = store.load_state(WAITING), store.load_state(APPROVED)
        shown = store.get_run(APPROVED)
        finished = store.load_state(FINISHED)
    assert waiting is not None and approved is not None and finished is not None
    assert shown.pending == [call]
    assert waiting.pending == approved.pending == (call,)
    assert (waiting.decisions, approved.decisions) == ({}, {call.id: True})
    assert approved.step == 1
    assert approved.reply is not None
    assert approved.reply.text.endswith('write_file(path="notes.txt", content="hello\\n")')
    assert [m["role"] for m in approved.messages] == ["system", "user"]
    assert approved.messages[1]["content"] == "Task: write approved notes"
    assert 0 < approved.elapsed_s < 60
    assert finished.pending == () and finished.step is None and len(finished.messages) == 4


def test_the_migrated_log_takes_the_new_statuses(old_log: Path) -> None:
    """Schema v2: a migrated log records the statuses tao 0.1 had no word for."""
    with open_store(old_log) as store:
        result = store.get_run(FINISHED)
        result.status = Status.CANCELLED
        store.finish_run(result)
        assert store.get_summary(FINISHED).status is Status.CANCELLED
        assert [s.run_id for s in store.list_runs(status="cancelled")] == [FINISHED]


def test_the_old_logs_steps_carry_one_field_for_their_arguments(old_log: Path) -> None:
    """Issue 30, M3: v12 moves a final answer from ``argument`` into ``arguments`` and keeps
    the text as written only for a call that never bound (``unparsed``)."""
    with open_store(old_log) as store:
        finished = store.get_run(FINISHED[:13])
        steps = [
            step for summary in store.list_runs() for step in store.get_run(summary.run_id).steps
        ]
    final = finished.steps[-1]
    assert final.kind is StepKind.FINAL
    assert final.arguments == {"answer": finished.answer} and final.answer == finished.answer
    assert steps and all(s.arguments is None or s.unparsed is None for s in steps)
    assert all(s.arguments is not None or s.unparsed is not None for s in steps if s.tool)


def test_the_old_logs_runs_are_no_child_runs_and_a_new_child_is_recorded_as_one(
    old_log: Path,
) -> None:
    """Issue 31, M3: v13 adds where a child run was started (``parent_step``,
    ``parent_position``); every old run reads as no child, and a new run written to the
    migrated log keeps both."""
    with open_store(old_log) as store:
        old = store.list_runs()
        assert old and all(s.parent_step is None and s.parent_position is None for s in old)
        child = RunResult(run_id="child-of-finished", task="t", model="m", started_at=1.0,
                          parent_id=FINISHED, parent_step=2, parent_position=1)  # fmt: skip
        store.begin_run(child)
        assert store.child_run(FINISHED, 2, 1) == "child-of-finished"
        assert store.child_run(FINISHED, 2, 0) is None
        read = store.get_run("child-of-finished")
    assert (read.parent_id, read.parent_step, read.parent_position) == (FINISHED, 2, 1)
    # The lookup a resumed parent makes is an index search, not a scan of every run.
    plan = (
        sqlite3.connect(old_log)
        .execute(
            "EXPLAIN QUERY PLAN SELECT id FROM runs WHERE parent_id = ? AND parent_step = ? "
            "AND parent_position = ? ORDER BY id DESC LIMIT 1",
            (FINISHED, 2, 1),
        )
        .fetchall()
    )
    assert any("runs_parent" in str(row) for row in plan), plan
