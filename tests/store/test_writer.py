"""Group commit (tao.store.writer): fast runs share transactions, and nothing waits long.

A step waits at most ``WRITE_WITHIN_S`` for its write, even while the run is blocked in
a long call (SPEC R1, R3); what a person, a side effect or the end needs is written first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tao import Agent, tool
from tao.state.result import Status
from tao.store import SQLiteStore, Store
from tao.store.factory import open_store
from tao.store.writer import WRITE_WITHIN_S
from tao.tools.calc import calculator_tool

Replay = Callable[[list[str]], Path]


@pytest.fixture
def store(tao_home: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore.connect(tao_home / "tao.db")
    try:
        yield opened
    finally:
        opened.close()


@tool
def nap(seconds: float) -> str:
    """Sleep a while."""
    time.sleep(seconds)
    return "rested"


def _commits(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store._conn.set_trace_callback(lambda sql: seen.append(sql) if sql == "COMMIT" else None)
    return seen


def test_the_steps_of_a_fast_run_share_transactions_and_all_land_R3(
    store: SQLiteStore, replay: Replay
) -> None:
    steps = 60
    script = replay(
        [f"Action: calculator[{n} + 1]" for n in range(steps - 1)] + ["Action: finish[ok]"]
    )
    commits = _commits(store)
    result = Agent(f"replay:{script}", [calculator_tool()], max_steps=steps + 1, record=store).run(
        "add"
    )
    assert result.status is Status.FINISHED
    stored = store.get_run(result.run_id)
    assert [s.index for s in stored.steps] == list(range(1, steps + 1))
    assert [s.observation for s in stored.steps[:3]] == ["1", "2", "3"]
    assert len(commits) < steps / 4, f"{len(commits)} transactions for {steps} steps"
    with open_store() as other:  # it resumes nowhere: finished, with its final checkpoint
        assert other.get_summary(result.run_id).status is Status.FINISHED


def test_a_quick_run_is_two_transactions_its_row_with_a_checkpoint_and_its_end_R1(
    store: SQLiteStore, replay: Replay
) -> None:
    """A run's row is written with its first checkpoint (the log never holds a run it could
    not resume), and its end with its last steps and checkpoint (never an answer stored
    under a run still marked running)."""
    script = replay(["Action: calculator[6 * 7]", "Action: finish[42]"])
    seen: list[str] = []
    store._conn.set_trace_callback(seen.append)
    result = Agent(f"replay:{script}", [calculator_tool()], record=store).run("multiply")
    store._conn.set_trace_callback(None)
    assert result.status is Status.FINISHED
    commits = [i for i, sql in enumerate(seen) if sql == "COMMIT"]
    assert len(commits) == 2, seen
    first = " ".join(seen[: commits[0]])
    assert "INSERT INTO runs" in first and "UPDATE runs SET state" in first
    last = " ".join(seen[commits[0] : commits[1]])
    assert "INSERT INTO steps" in last and "UPDATE runs SET status = 'finished'" in last
    stored = store.get_run(result.run_id)
    assert [s.index for s in stored.steps] == [1, 2] and stored.answer == "42"


def test_a_step_is_stored_while_the_run_waits_in_a_long_call_R1(
    store: SQLiteStore, replay: Replay
) -> None:
    script = replay(["Action: nap[0.01]", "Action: nap[3]", "Action: finish[x]"])
    handle = Agent(f"replay:{script}", [nap], record=store).start("rest")
    started = time.monotonic()
    with open_store() as reader:
        while _stored_steps(reader, handle.run_id) < 1:
            assert time.monotonic() - started < 2.5, "step 1 was not stored during the long nap"
            time.sleep(0.01)
        seen_after = time.monotonic() - started
        assert reader.get_summary(handle.run_id).status is Status.RUNNING
    assert seen_after < 1.0 + WRITE_WITHIN_S
    assert handle.result(timeout=10).status is Status.FINISHED


def _stored_steps(store: Store, run_id: str) -> int:
    return next((s.steps for s in store.list_runs(limit=5) if s.run_id == run_id), 0)


def test_a_forked_child_writes_its_own_runs_while_they_wait_R1(
    store: SQLiteStore, replay: Replay, tao_home: Path
) -> None:
    """The timer thread does not survive fork(): the child starts its own (and drops the
    parent's schedule), so a step of the child's run is stored while it waits in a call."""
    warm = replay(["Action: nap[0.2]", "Action: finish[x]"])
    Agent(f"replay:{warm}", [nap], record=store).run("warm the parent's timer up")
    script = replay(["Action: nap[0.01]", "Action: nap[3]", "Action: finish[x]"])
    pid = os.fork()
    if pid == 0:  # the child: one run, then out without running the parent's cleanup
        code = 0
        try:
            with open_store() as own:
                Agent(f"replay:{script}", [nap], record=own).run("rest in the child")
        except BaseException:
            code = 1
        os._exit(code)
    started = time.monotonic()
    try:
        with open_store() as reader:
            while True:
                child = [s for s in reader.list_runs(limit=5) if s.task == "rest in the child"]
                if child and child[0].steps >= 1:
                    break
                assert time.monotonic() - started < 2.5, "the child's step was not stored"
                time.sleep(0.01)
            assert reader.get_summary(child[0].run_id).status is Status.RUNNING
    finally:
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
