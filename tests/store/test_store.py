"""The run log's API, once, on both backends (SPEC M3, L1).

Every test here runs twice through the ``store`` fixture (tests/store/conftest.py):
on SQLite in $TAO_HOME and on a fresh PostgreSQL database selected by
``TAO_DATABASE_URL``, as a user would select it. The PostgreSQL cases skip
unless ``TAO_TEST_DATABASE_URL`` names a server (``eval "$(scripts/start-postgres.sh)"``;
CI sets it). What only one backend has (files, pragmas, servers) is in
test_sqlite.py and test_postgres.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tao.errors import StateError, StoreError
from tao.models.base import ModelReply, ToolCall
from tao.state.budget import Usage
from tao.state.compaction import Compaction
from tao.state.config import Approval, Checkpoint, PendingCall, RunConfig
from tao.state.result import Status, StepKind
from tao.store import SCHEMA_VERSION, STATUSES, RunRecorder, Store
from tao.store.factory import open_store

if TYPE_CHECKING:  # the fixture's class, for annotations only (conftest is not importable)
    from conftest import Runs

CONFIG = RunConfig(model="replay:script.json", tools=("calc",), max_steps=8)


def test_open_picks_the_backend_from_tao_database_url_M3(store_backend: str, store: Store) -> None:
    """M3: TAO_DATABASE_URL=postgresql://… selects PostgreSQL; unset, SQLite in $TAO_HOME."""
    assert (
        type(store).__name__
        == {"sqlite": "SQLiteStore", "postgres": "PostgresStore"}[store_backend]
    )
    if store_backend == "postgres":
        assert store.where.startswith("postgresql://tao@127.0.0.1:")
        assert "tao-test" not in store.where  # never the password
    else:
        assert store.where.endswith("tao.db")


# -- what goes in comes out ---------------------------------------------------------------


#: Not data the log keeps: ``output`` is made from ``answer`` by the agent's output type.
NOT_STORED = {"output"}


def _assert_not_default(obj: object, *, either: tuple[str, ...] = ()) -> None:
    """Every field holds a non-default value; of the fields in ``either`` (a step's
    ``arguments`` and ``unparsed``: one or the other), exactly one does."""
    if either:
        assert sum(getattr(obj, name) is not None for name in either) == 1, either
    for field in dataclasses.fields(obj):  # type: ignore[arg-type]
        if field.name in NOT_STORED or field.name in either:
            continue
        value = getattr(obj, field.name)
        if field.default is not dataclasses.MISSING:
            assert value != field.default, f"give {field.name} a non-default value"
        if field.default_factory is not dataclasses.MISSING:
            assert value != field.default_factory(), f"give {field.name} a non-default value"


def test_every_field_of_a_run_survives_the_roundtrip_L1_M3(store: Store, runs: Runs) -> None:
    """L1/M3: status, answer, error, steps (all fields), usage, pending, config come back.

    Every field is set to a non-default value, so a field added to RunResult
    or Step without being stored makes this test fail.
    """
    config = RunConfig(model="replay:script.json", tools=("calc", None), lang="sv", max_steps=3)
    result = runs.run("0193abc")
    result.error, result.stop_reason, result.lang, result.config = "budget", "steps", "sv", config
    result.parent_id = "0193ab0"  # a child run of that run's step 4, its second call
    result.parent_step, result.parent_position = 4, 1
    recorder = RunRecorder(store, config)
    recorder.on_start(result)
    made = (  # issue 27: what was compacted before the step's request
        Compaction(
            start=2, end=6, first_step=1, last_step=2, policy="elide", tokens_before=900,
            tokens_after=300, window=1000, reason="high water", step=3, input_tokens=1,
            messages=({"role": "user", "content": "Observation: [observation of step 1]"},),
        ),
    )  # fmt: skip
    yes = Approval(approved=True, by="ann", via="web", at=1.5, reason="ok")
    steps = [
        runs.step(
            1,
            call_index=1,
            repeat_of=1,
            forced=True,
            cost_usd=0.0125,
            compactions=made,
            approval=yes,
            model="openai:gpt-5",  # a fallback model answered (issue 31)
            model_failures=["anthropic:claude-sonnet-5: cannot reach api.anthropic.com"],
            child_run="0193abd",  # an agent-as-tool call's run, and what it spent
            child_input_tokens=300,
            child_output_tokens=40,
            child_cost_usd=0.003,
        ),
        runs.step(
            2,
            compactions=made,
            kind=StepKind.UNKNOWN_TOOL,
            arguments=None,  # an unknown tool's call never binds: the text as written is kept
            unparsed="2 * 2",
            evaluated_tokens=7,
            call_index=2,
            repeat_of=1,
            forced=True,
            cost_usd=0.5,
            approval=Approval(approved=False, by="rule.toml", via="policy", at=2.0),
            model="gemini:gemini-3.8-flash",
            model_failures=["a: timed out", "b: server answered 503 (busy)"],
            child_run="0193abe",
            child_input_tokens=1,
            child_output_tokens=2,
            child_cost_usd=None,  # unknown: a child on a model with no price
        ),
    ]
    for step in steps:
        _assert_not_default(step, either=("arguments", "unparsed"))
        result.steps.append(step)
        recorder.on_step(result, step)
    result.usage = Usage(
        model_calls=2, input_tokens=40, output_tokens=8, evaluated_tokens=7, cost_usd=0.5125
    )
    result.status, result.answer, result.duration_s = Status.AWAITING_APPROVAL, "partial", 3.25
    # The calls a paused run waits on live in its checkpoint (S3).
    pending = PendingCall(
        step=2, position=0, tool="write_file", arguments={"path": "a"}, effects=("writes",)
    )
    result.pending = [dataclasses.replace(pending, preview="+a")]
    store.save_state(result.run_id, Checkpoint(step=2, pending=tuple(result.pending)))
    recorder.on_finish(result)
    _assert_not_default(result)
    _assert_not_default(result.usage)

    loaded = store.get_run("0193abc")
    assert loaded == result
    assert str(loaded.steps[0].model_input[1]["content"]).endswith("ünïcödé, 日本語")
    summary = store.get_summary("0193a")
    assert (summary.status, summary.steps, summary.tokens, summary.config) == (
        Status.AWAITING_APPROVAL,
        2,
        48,
        config,
    )


def test_a_checkpoint_comes_back_as_the_checkpoint_saved_S3_M3(store: Store, runs: Runs) -> None:
    """M3: save_state/load_state carry a typed Checkpoint; a run without one has None."""
    runs.record(store, runs.run("r1"), 1, status=Status.AWAITING_APPROVAL)
    assert store.load_state("r1") is None
    call = PendingCall(step=2, position=1, tool="write_file", arguments={"path": "ü.txt"})
    reply = ModelReply(
        text="Thought: write.",
        input_tokens=10,
        output_tokens=3,
        evaluated_tokens=4,
        finish_reason="tool_calls",
        tool_calls=(ToolCall("c1", "write_file", {"path": "ü.txt"}, '{"path": "ü.txt"}'),),
        cache_read_tokens=6,
        cache_write_tokens=2,
        cost_usd=0.0042,  # the reply acted on again on resume is charged once, at its price
    )
    checkpoint = Checkpoint(
        messages=({"role": "user", "content": "Task: 日本語"},),
        elapsed_s=2.5,
        step=2,
        reply=reply,
        pending=(call,),
        decisions={call.id: "not that file"},
        executing=True,
    )
    store.save_state("r1", checkpoint)
    assert store.load_state("r1") == checkpoint
    assert store.get_run("r1").pending == [call]


def test_each_model_call_is_stored_with_messages_reply_tokens_and_timing_M3(
    store: Store, runs: Runs
) -> None:
    """M3: every model call is in model_calls with what was sent, the reply, tokens, time."""
    runs.record(store, runs.run("r1"), 3)
    rows = runs.query(
        store,
        "SELECT step_index, model, messages, reply, input_tokens, output_tokens, "
        "evaluated_tokens, duration_s, created_at FROM model_calls ORDER BY step_index",
    )
    (run,) = runs.query(
        store,
        "SELECT status, model_calls, input_tokens, output_tokens, config, finished_at FROM runs",
    )
    assert [r[0] for r in rows] == [1, 2, 3]
    _, model, messages, reply, tin, tout, tev, duration, created = rows[1]
    assert model == "replay:script.json"
    assert json.loads(str(messages)) == runs.step(2).model_input
    assert reply == runs.step(2).model_output
    assert (tin, tout, tev, duration) == (102, 12, 52, pytest.approx(0.4))
    assert isinstance(created, float) and created > 1_700_000_000
    assert run[:4] == ("finished", 3, 101 + 102 + 103, 11 + 12 + 13)
    assert RunConfig.from_json(json.loads(str(run[4]))) == CONFIG
    assert run[5] is not None


def test_rerecorded_step_replaces_and_a_running_run_reads_as_running_M3(
    store: Store, runs: Runs
) -> None:
    """M3: a step recorded twice (a resumed run) is stored once; before on_finish: running.

    The status read back is the one recorded: no placeholder ERROR for a live run.
    """
    result = runs.run("r1")
    store.begin_run(result, CONFIG)
    store.add_step(result, runs.step(1))
    store.add_step(result, runs.step(1, observation="second"))
    summary = store.list_runs()[0]
    assert (summary.status, summary.steps, summary.model_calls) == (Status.RUNNING, 1, 1)
    loaded = store.get_run("r1")
    assert (loaded.status, loaded.error, loaded.config) == (Status.RUNNING, None, CONFIG)
    assert [s.observation for s in loaded.steps] == ["second"]
    assert store.list_runs(status="running") == [summary]
    assert store.list_runs(status="interrupted") == []


def test_finish_without_start_saves_the_whole_result_M3(store: Store, runs: Runs) -> None:
    """M3: an observer attached late (or a one-shot save) still stores every step."""
    result = runs.run("late")
    result.steps = [runs.step(1), runs.step(2)]
    result.status, result.answer, result.config = Status.FINISHED, "4", CONFIG
    result.usage = Usage(model_calls=2, input_tokens=203, output_tokens=23, evaluated_tokens=103)
    RunRecorder(store, CONFIG).on_finish(result)
    assert store.get_run("late") == result


def test_a_run_recorded_without_settings_has_no_config_M3(store: Store, runs: Runs) -> None:
    """M3: a recorder given no RunConfig stores none; it reads back as None, never defaults."""
    runs.record(store, runs.run("bare"), 1, config=None)
    summary = store.get_summary("bare")
    assert summary.config is None
    assert summary.to_json()["config"] == {}
    assert store.get_run("bare").config is None


# -- statuses -------------------------------------------------------------------------------


def test_every_status_can_be_recorded_and_filtered_on_L1_M3(store: Store, runs: Runs) -> None:
    """L1/M3: interrupted and cancelled are statuses of their own (schema v2), filterable."""
    assert set(STATUSES) == {str(s) for s in Status}
    finished = [s for s in Status if s is not Status.RUNNING]
    for number, status in enumerate(finished):
        runs.record(store, runs.run(f"r{number}", started_at=1_000.0 + number), 1, status=status)
    for number, status in enumerate(finished):
        listed = store.list_runs(status=str(status))
        assert [(s.run_id, s.status) for s in listed] == [(f"r{number}", status)]
        assert store.get_run(f"r{number}").status is status
    with pytest.raises(StoreError, match="unknown status 'done'; choose one of: running, "):
        store.list_runs(status="done")


# -- listing and lookup ----------------------------------------------------------------------


def test_list_runs_is_newest_first_with_limit_and_status_filter_M3(
    store: Store, runs: Runs
) -> None:
    """M3: runs can be listed; newest first (ties: insert order), limited, by status."""
    runs.record(store, runs.run("old", started_at=1_000.0), 1)
    runs.record(store, runs.run("mid", started_at=2_000.0), 2, status=Status.MAX_STEPS)
    runs.record(store, runs.run("new", started_at=2_000.0), 3)  # same start: insert order
    assert [s.run_id for s in store.list_runs()] == ["new", "mid", "old"]
    assert [s.run_id for s in store.list_runs(limit=2)] == ["new", "mid"]
    assert [s.run_id for s in store.list_runs(status="finished")] == ["new", "old"]
    assert [s.run_id for s in store.list_runs(status="finished", limit=1)] == ["new"]
    newest = store.list_runs(limit=1)[0]
    assert (newest.steps, newest.model_calls, newest.status) == (3, 3, Status.FINISHED)
    assert newest.tokens == (101 + 102 + 103) + (11 + 12 + 13)
    assert newest.to_json()["status"] == "finished"


def test_get_run_by_unique_prefix_and_clear_errors_otherwise_M3(store: Store, runs: Runs) -> None:
    """M3: `show` accepts a unique id prefix; unknown and ambiguous ids are clear errors."""
    for run_id in ("0193aaaa-01", "0193aaaa-02", "0193bbbb_01"):
        runs.record(store, runs.run(run_id), 1)
    assert store.get_run("0193aaaa-01").run_id == "0193aaaa-01"
    assert store.get_run("0193b").run_id == "0193bbbb_01"
    with pytest.raises(StoreError, match=r"ambiguous \(matches 0193aaaa-0\d, 0193aaaa-0\d"):
        store.get_run("0193a")
    for wildcard in ("%", "0193_", "0193aaaa%"):  # LIKE wildcards are escaped, not matched
        with pytest.raises(StoreError, match=f"no run with id '{wildcard}' in {store.where}"):
            store.get_run(wildcard)
    with pytest.raises(StoreError, match="give a run id"):
        store.get_run("  ")


def test_unique_prefixes_grow_past_shared_timestamp_digits_M3(store: Store, runs: Runs) -> None:
    """M3: ids that share a timestamp prefix are listed with a prefix `show` accepts."""
    for run_id in ("0193aaaaaaaa01", "0193aaaaaaaa02", "0193bbbbbbbb01"):
        runs.record(store, runs.run(run_id), 1)
    prefixes = store.unique_prefixes(["0193aaaaaaaa01", "0193bbbbbbbb01"])
    assert prefixes == {"0193aaaaaaaa01": "0193aaaaaaaa01", "0193bbbbbbbb01": "0193bbbb"}
    for run_id, prefix in prefixes.items():
        assert store.get_run(prefix).run_id == run_id


def test_export_jsonl_is_a_run_record_then_one_step_per_line_M3(store: Store, runs: Runs) -> None:
    """M3: JSONL export: {"type": "run"} first, then {"type": "step"} per step, in order."""
    runs.record(store, runs.run("r1", task="multi\nline task"), 3)
    lines = list(store.export_jsonl("r1"))
    assert len(lines) == 4
    assert all("\n" not in line for line in lines)
    records = [json.loads(line) for line in lines]
    run = records[0]
    assert (run["type"], run["schema"], run["steps"]) == ("run", SCHEMA_VERSION, 3)
    assert (run["run_id"], run["task"], run["status"], run["answer"]) == (
        "r1",
        "multi\nline task",
        "finished",
        "42",
    )
    assert run["usage"] == {
        "model_calls": 3,
        "input_tokens": 306,
        "output_tokens": 36,
        "evaluated_tokens": 156,
        "cost_usd": None,  # these steps have no price: unknown, never $0 (issue 15)
    }
    assert "cost_usd" not in run  # once, in usage
    assert run["config"] == CONFIG.to_json()
    assert [r["type"] for r in records[1:]] == ["step"] * 3
    assert [r["index"] for r in records[1:]] == [1, 2, 3]
    assert records[2]["model_input"] == runs.step(2).model_input
    assert records[2]["model_output"] == runs.step(2).model_output
    assert records[2]["tokens"] == 102 + 12
    assert all(r["run_id"] == "r1" for r in records)
    assert "日本語" in lines[1]


# -- damaged rows ----------------------------------------------------------------------------


def test_a_damaged_json_column_is_a_store_error_naming_the_run_M3(store: Store, runs: Runs) -> None:
    """M3: a corrupt config, checkpoint or step is a StateError naming the run, no traceback."""
    runs.record(store, runs.run("bad-config"), 1)
    runs.record(store, runs.run("bad-state"), 1, status=Status.AWAITING_APPROVAL)
    runs.record(store, runs.run("bad-step"), 1)
    runs.record(store, runs.run("newer-state"), 1, status=Status.AWAITING_APPROVAL)
    runs.corrupt(store, "UPDATE runs SET config = ? WHERE id = ?", '{"tools": [', "bad-config")
    runs.corrupt(store, "UPDATE runs SET state = ? WHERE id = ?", "[1, 2]", "bad-state")
    runs.corrupt(store, "UPDATE steps SET arguments = ? WHERE run_id = ?", "{x", "bad-step")
    runs.corrupt(
        store, "UPDATE runs SET state = ? WHERE id = ?", '{"schema_version": 99}', "newer-state"
    )
    with pytest.raises(StateError, match="damaged JSON in the config of run bad-config"):
        store.get_summary("bad-config")
    with pytest.raises(StateError, match="the config of run bad-config"):
        store.list_runs()
    with pytest.raises(StateError, match="list in the checkpoint of run bad-state, not an obj"):
        store.get_run("bad-state")
    with pytest.raises(StateError, match="damaged JSON in step 1 of run bad-step"):
        store.get_run("bad-step")
    with pytest.raises(StateError, match="run newer-state: checkpoint schema version 99 is newer"):
        store.load_state("newer-state")
    assert issubclass(StateError, StoreError)


# -- sharing, racing, crashing -----------------------------------------------------------------


def test_threads_sharing_one_store_M3(store: Store, runs: Runs) -> None:
    """M3: one Store shared by the threads of a process (e.g. an eval) stays consistent."""
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(8):
                runs.record(store, runs.run(f"t{worker}-{n}", started_at=time.time()), 2)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    summaries = store.list_runs(limit=100)
    assert errors == []
    assert len(summaries) == 32
    assert all(s.steps == 2 for s in summaries)


WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tao.state.config import RunConfig
    from tao.store import RunRecorder, Store, open_store
    from tao.state.result import RunResult, Status, Step, StepKind

    worker, runs, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.005)
    store = open_store()  # every worker races to create and migrate the fresh log
    for n in range(runs):
        result = RunResult(run_id=f"w{worker}-{n:03d}", task=f"task {n}", model="replay:x",
                           started_at=time.time())
        recorder = RunRecorder(store, RunConfig(model="replay:x", task_label=worker))
        recorder.on_start(result)
        for index in (1, 2, 3):
            step = Step(index=index, kind=StepKind.ACTION, thought="t", tool="calculator",
                        arguments={"expression": "1+1"}, observation="2",
                        model_input=[{"role": "user", "content": "x" * 2000}],
                        model_output="Action: calculator[1+1]", duration_s=0.01,
                        input_tokens=10, output_tokens=2)
            result.add_step(step)
            recorder.on_step(result, step)
        result.status, result.answer = Status.FINISHED, "2"
        recorder.on_finish(result)
    store.close()
    """
)


def test_concurrent_writer_processes_on_a_fresh_log_M3(
    store_backend: str, tmp_path: Path, tao_home: Path
) -> None:
    """M3: 4 processes x 10 runs at once, all racing to create and migrate a fresh log,
    plus a reader opening it again and again; nothing is lost or damaged."""
    workers, count = 4, 10
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(w), str(count), str(go)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    go.touch()
    while any(p.poll() is None for p in procs):
        with open_store() as store:  # opening and reading while they write never fails
            store.list_runs(limit=5)
        time.sleep(0.02)
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    with open_store() as store:
        summaries = store.list_runs(limit=1000)
    assert len(summaries) == workers * count
    assert {(s.status, s.steps, s.model_calls, s.input_tokens) for s in summaries} == {
        (Status.FINISHED, 3, 3, 30)
    }
    assert {s.config.task_label for s in summaries if s.config} == {"0", "1", "2", "3"}
    if store_backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(tao_home / "tao.db")
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        finally:
            conn.close()


KILLED_WRITER = textwrap.dedent(
    """
    import time
    from tao.store import RunRecorder, Store, open_store
    from tao.state.result import RunResult, Step, StepKind

    store = open_store()
    result = RunResult(run_id="killed-run", task="a task", model="replay:x",
                       started_at=time.time())
    recorder = RunRecorder(store)
    recorder.on_start(result)
    for index in (1, 2):
        step = Step(index=index, kind=StepKind.ACTION, thought=f"thought {index}",
                    tool="calculator", arguments={"expression": "1+1"}, observation="2",
                    model_input=[{"role": "user", "content": "q"}],
                    model_output="Action: calculator[1+1]", duration_s=0.1,
                    input_tokens=7, output_tokens=3)
        result.add_step(step)
        recorder.on_step(result, step)
    print("ready", flush=True)
    time.sleep(120)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_steps_committed_before_a_sigkill_survive_as_interrupted_M3(store: Store) -> None:
    """M3: each step is committed at once; a killed writer's run reads `interrupted`.

    Its status is Status.INTERRUPTED everywhere (summary, filter, get_run), never a
    placeholder such as error or max_steps, and it is resumable.
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # our own child
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    summary = store.get_summary("killed")
    assert (summary.status, summary.steps, summary.model_calls) == (Status.INTERRUPTED, 2, 2)
    assert [s.run_id for s in store.list_runs(status="interrupted")] == ["killed-run"]
    assert store.list_runs(status="running") == []
    loaded = store.get_run("killed-run")
    assert (loaded.status, loaded.error) == (Status.INTERRUPTED, None)
    assert loaded.status.resumable
    assert [s.thought for s in loaded.steps] == ["thought 1", "thought 2"]
    assert loaded.steps[1].model_input == [{"role": "user", "content": "q"}]
    assert (loaded.usage.input_tokens, loaded.usage.output_tokens) == (14, 6)


def test_a_run_can_start_again_after_it_stopped_M3(store: Store, runs: Runs) -> None:
    """M3: begin_run on a recorded id (a resume) makes it running again, clearing its end."""
    result = runs.record(store, runs.run("again"), 2, status=Status.AWAITING_APPROVAL)
    result.status = Status.RUNNING
    store.begin_run(result, CONFIG)
    summary = store.get_summary("again")
    assert (summary.status, summary.finished_at, summary.steps) == (Status.RUNNING, None, 2)
    result.status, result.answer, result.config = Status.FINISHED, "done", CONFIG
    store.finish_run(result, CONFIG)
    assert store.get_run("again") == result
