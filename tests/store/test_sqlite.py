"""The SQLite run log on real files, with real concurrent processes (SPEC M3, L1)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tao.errors import StoreError
from tao.store import (
    INTERRUPTED,
    RUNNING,
    SCHEMA_VERSION,
    RunRecorder,
    Store,
    default_db_path,
)
from tao.store.schema import MIGRATIONS
from tao.trace import RunResult, Status, Step, StepKind, Usage


def make_step(index: int, **overrides: Any) -> Step:
    values: dict[str, Any] = {
        "index": index,
        "kind": StepKind.ACTION,
        "thought": f"thought {index}: I should compute [bold]this[/bold]",
        "tool": "calculator",
        "argument": f"{index} * 2",
        "observation": f"{index * 2}",
        "model_input": [
            {"role": "system", "content": "You are tao."},
            {"role": "user", "content": f"Task: step {index} — ünïcödé, 日本語"},
        ],
        "model_output": f"Thought: t{index}\nAction: calculator[{index} * 2]",
        "duration_s": 0.25 * index,
        "input_tokens": 100 + index,
        "output_tokens": 10 + index,
        "evaluated_tokens": 50 + index,
        "model_duration_s": 0.2 * index,
        "tool_duration_s": 0.01 * index,
        "arguments": {"expression": f"{index} * 2"},
    }
    values.update(overrides)
    return Step(**values)


def make_run(run_id: str, *, started_at: float = 1_700_000_000.0, task: str = "What?") -> RunResult:
    return RunResult(
        run_id=run_id,
        task=task,
        model="replay:script.json",
        status=Status.MAX_STEPS,
        answer=None,
        lang="en",
        started_at=started_at,
    )


def record(
    store: Store, result: RunResult, steps: int, *, status: Status = Status.FINISHED
) -> None:
    """Drive a RunRecorder the way the loop does: start, each step, finish."""
    recorder = RunRecorder(store, {"tools": ["calc"], "max_steps": 8})
    recorder.on_start(result)
    for index in range(1, steps + 1):
        step = make_step(index)
        result.steps.append(step)
        result.usage.add(step)
        recorder.on_step(result, step)
    result.status = status
    result.answer = "42" if status is Status.FINISHED else None
    result.duration_s = 1.5
    recorder.on_finish(result)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "home" / "tao.db"


# -- location and pragmas --------------------------------------------------------------


def test_default_path_is_tao_home_tao_db_M3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M3: the log lives at $TAO_HOME/tao.db, and folders are created on open."""
    monkeypatch.setenv("TAO_HOME", str(tmp_path / "deep" / "home"))
    assert default_db_path() == tmp_path / "deep" / "home" / "tao.db"
    with Store.open() as store:
        assert store.path == tmp_path / "deep" / "home" / "tao.db"
    assert (tmp_path / "deep" / "home" / "tao.db").is_file()


def test_file_is_wal_with_current_schema_version_M3(db: Path) -> None:
    """M3: WAL mode (concurrent readers + a writer) and a versioned schema."""
    Store.open(db).close()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"runs", "steps", "model_calls"} <= tables
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert "runs_started_at" in indexes
    finally:
        conn.close()
    assert len(MIGRATIONS) == SCHEMA_VERSION


def test_reopening_is_idempotent_and_keeps_runs_M3(db: Path) -> None:
    """M3: opening an up-to-date log again migrates nothing and loses nothing."""
    with Store.open(db) as store:
        record(store, make_run("r1"), 2)
    with Store.open(db) as store:
        assert [s.run_id for s in store.list_runs()] == ["r1"]


# -- roundtrip ---------------------------------------------------------------------------


def _assert_not_default(obj: Any) -> None:
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        if field.default is not dataclasses.MISSING:
            assert value != field.default, f"give {field.name} a non-default value"
        if field.default_factory is not dataclasses.MISSING:
            assert value != field.default_factory(), f"give {field.name} a non-default value"


def test_every_field_of_a_run_survives_the_roundtrip_L1_M3(db: Path) -> None:
    """L1/M3: status, answer, error, steps (all fields), usage come back identical.

    Every field is set to a non-default value, so a field added to RunResult
    or Step without being stored makes this test fail.
    """
    result = make_run("0193abc")
    result.error, result.stop_reason, result.lang = "budget", "steps", "sv"
    recorder = RunRecorder(Store.open(db), {"tools": ["calc"]})
    recorder.on_start(result)
    steps = [
        make_step(1, call_index=1),
        make_step(2, kind=StepKind.UNKNOWN_TOOL, evaluated_tokens=7, call_index=2),
    ]
    for step in steps:
        _assert_not_default(step)
        result.steps.append(step)
        recorder.on_step(result, step)
    result.usage = Usage(model_calls=2, input_tokens=40, output_tokens=8, evaluated_tokens=7)
    result.status, result.answer, result.duration_s = Status.AWAITING_APPROVAL, "partial", 3.25
    # The calls a paused run waits on live in its checkpoint (S3).
    result.pending = [
        {
            "position": 0,
            "tool": "write_file",
            "arguments": {"path": "a"},
            "effects": ["writes"],
            "preview": "+a",
        }
    ]
    recorder.store.save_state(result.run_id, {"pending": result.pending})
    recorder.on_finish(result)
    _assert_not_default(result)
    _assert_not_default(result.usage)

    with Store.open(db) as store:
        loaded = store.get_run("0193abc")
    assert loaded == result
    assert loaded.steps[0].model_input[1]["content"] == "Task: step 1 — ünïcödé, 日本語"


def test_each_model_call_is_stored_with_messages_reply_tokens_and_timing_M3(db: Path) -> None:
    """M3: every model call is in model_calls with what was sent, the reply, tokens, time."""
    with Store.open(db) as store:
        record(store, make_run("r1"), 3)
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT step_index, model, messages, reply, input_tokens, output_tokens, "
        "evaluated_tokens, duration_s, created_at FROM model_calls ORDER BY step_index"
    ).fetchall()
    run = conn.execute(
        "SELECT status, model_calls, input_tokens, output_tokens, config, finished_at FROM runs"
    ).fetchone()
    conn.close()
    assert [r[0] for r in rows] == [1, 2, 3]
    _, model, messages, reply, tin, tout, tev, duration, created = rows[1]
    assert model == "replay:script.json"
    assert json.loads(messages) == make_step(2).model_input
    assert reply == make_step(2).model_output
    assert (tin, tout, tev, duration) == (102, 12, 52, pytest.approx(0.4))
    assert created > 1_700_000_000
    assert run[:4] == ("finished", 3, 101 + 102 + 103, 11 + 12 + 13)
    assert json.loads(run[4]) == {"tools": ["calc"], "max_steps": 8}
    assert run[5] is not None


def test_rerecording_a_step_replaces_it_and_its_model_call_M3(db: Path) -> None:
    """M3: the same step recorded twice (a resumed run) is stored once."""
    with Store.open(db) as store:
        result = make_run("r1")
        store.begin_run(result)
        store.add_step(result, make_step(1))
        store.add_step(result, make_step(1, observation="second"))
        loaded = store.get_run("r1")
        assert [s.observation for s in loaded.steps] == ["second"]
        assert store.get_summary("r1").model_calls == 1


def test_a_running_run_is_listed_as_running_and_read_back_as_unfinished_M3(db: Path) -> None:
    """M3: before on_finish the run is `running` in the log, with its steps so far."""
    with Store.open(db) as store:
        result = make_run("r1")
        recorder = RunRecorder(store)
        recorder.on_start(result)
        recorder.on_step(result, make_step(1))
        summary = store.list_runs()[0]
        assert (summary.status, summary.steps, summary.model_calls) == (RUNNING, 1, 1)
        loaded = store.get_run("r1")
        assert loaded.status is Status.ERROR
        assert loaded.error == "the run is still in progress"
        assert [s.index for s in loaded.steps] == [1]


def test_finish_without_start_saves_the_whole_result_M3(db: Path) -> None:
    """M3: an observer attached late (or a one-shot save) still stores every step."""
    result = make_run("late")
    result.steps = [make_step(1), make_step(2)]
    result.status, result.answer = Status.FINISHED, "4"
    result.usage = Usage(model_calls=2, input_tokens=203, output_tokens=23, evaluated_tokens=103)
    with Store.open(db) as store:
        RunRecorder(store).on_finish(result)
        assert store.get_run("late") == result


# -- listing and lookup ----------------------------------------------------------------


def test_list_runs_is_newest_first_with_limit_and_status_filter_M3(db: Path) -> None:
    """M3: runs can be listed; newest first, limited, filtered by status."""
    with Store.open(db) as store:
        record(store, make_run("old", started_at=1_000.0), 1)
        record(store, make_run("mid", started_at=2_000.0), 2, status=Status.MAX_STEPS)
        record(store, make_run("new", started_at=3_000.0), 3)
        assert [s.run_id for s in store.list_runs()] == ["new", "mid", "old"]
        assert [s.run_id for s in store.list_runs(limit=2)] == ["new", "mid"]
        assert [s.run_id for s in store.list_runs(status="finished")] == ["new", "old"]
        newest = store.list_runs(limit=1)[0]
        assert (newest.steps, newest.model_calls, newest.status) == (3, 3, "finished")
        assert newest.tokens == (101 + 102 + 103) + (11 + 12 + 13)
        with pytest.raises(StoreError, match="unknown status 'done'"):
            store.list_runs(status="done")


def test_get_run_by_unique_prefix_and_clear_errors_otherwise_M3(db: Path) -> None:
    """M3: `show` accepts a unique id prefix; unknown and ambiguous ids are clear errors."""
    with Store.open(db) as store:
        for run_id in ("aaaa1111", "aaaa2222", "bbbb3333"):
            record(store, make_run(run_id), 1)
        assert store.get_run("aaaa1").run_id == "aaaa1111"
        assert store.get_run("bbbb3333").run_id == "bbbb3333"
        with pytest.raises(StoreError, match=r"ambiguous.*aaaa\d{4}, aaaa\d{4}"):
            store.get_run("aaaa")
        with pytest.raises(StoreError, match="no run with id 'zzz'"):
            store.get_run("zzz")
        with pytest.raises(StoreError, match="no run with id '%'"):
            store.get_run("%")  # LIKE wildcards are escaped, not matched
        with pytest.raises(StoreError, match="give a run id"):
            store.get_run("  ")


def test_unique_prefixes_grow_past_shared_timestamp_digits_M3(db: Path) -> None:
    """M3: ids that share a timestamp prefix are listed with a prefix `show` accepts."""
    with Store.open(db) as store:
        for run_id in ("0193aaaaaaaa01", "0193aaaaaaaa02", "0193bbbbbbbb01"):
            record(store, make_run(run_id), 1)
        prefixes = store.unique_prefixes(["0193aaaaaaaa01", "0193bbbbbbbb01"])
        assert prefixes == {"0193aaaaaaaa01": "0193aaaaaaaa01", "0193bbbbbbbb01": "0193bbbb"}
        for run_id, prefix in prefixes.items():
            assert store.get_run(prefix).run_id == run_id


def test_export_jsonl_is_a_run_record_then_one_step_per_line_M3(db: Path) -> None:
    """M3: JSONL export: {"type": "run"} first, then {"type": "step"} per step, in order."""
    with Store.open(db) as store:
        result = make_run("r1", task="multi\nline task")
        record(store, result, 3)
        lines = list(store.export_jsonl("r1"))
    assert len(lines) == 4
    assert all("\n" not in line for line in lines)
    records = [json.loads(line) for line in lines]
    run = records[0]
    assert run["type"] == "run"
    assert run["schema"] == SCHEMA_VERSION
    assert (run["run_id"], run["task"], run["status"], run["answer"]) == (
        "r1",
        "multi\nline task",
        "finished",
        "42",
    )
    assert run["usage"]["model_calls"] == 3
    assert run["config"] == {"tools": ["calc"], "max_steps": 8}
    assert [r["type"] for r in records[1:]] == ["step"] * 3
    assert [r["index"] for r in records[1:]] == [1, 2, 3]
    assert records[2]["model_input"] == make_step(2).model_input
    assert records[2]["model_output"] == make_step(2).model_output
    assert records[2]["tokens"] == 102 + 12
    assert all(r["run_id"] == "r1" for r in records)


# -- damaged, foreign and newer files ------------------------------------------------------


def test_newer_schema_is_refused_with_upgrade_advice_and_left_untouched_M3(db: Path) -> None:
    """M3: a log written by a newer tao gives a clear error, never a guess."""
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE future (x)")
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    before = digest(db)
    with pytest.raises(StoreError) as info:
        Store.open(db)
    assert str(info.value) == (
        f"the run log {db} was written by a newer tao (schema v7, this tao knows v1); "
        "upgrade tao, or set TAO_HOME to use another run log"
    )
    assert digest(db) == before


def test_file_that_is_not_a_database_is_refused_and_kept_M3(db: Path) -> None:
    """M3: a corrupt file is a StoreError naming the file and what to do; nothing lost."""
    db.parent.mkdir(parents=True)
    db.write_bytes(b"definitely not sqlite\n" * 500)
    before = digest(db)
    with pytest.raises(StoreError) as info:
        Store.open(db)
    message = str(info.value)
    assert str(db) in message
    assert "damaged or not a database" in message
    assert f"mv {db} {db}.broken" in message
    assert digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["tao.db"]


def test_malformed_pages_give_a_store_error_on_read_and_the_file_is_kept_M3(db: Path) -> None:
    """M3: damage found while reading (not at open) is still a clear StoreError."""
    with Store.open(db) as store:
        for n in range(40):
            record(store, make_run(f"run{n:03d}", task="x" * 500), 2)
    data = bytearray(db.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    assert len(data) > 4 * page_size
    data[page_size:] = b"\xa5" * (len(data) - page_size)  # every page but the schema page
    db.write_bytes(bytes(data))
    before = digest(db)
    store = Store.open(db)  # the schema page is intact, so the damage shows on reading
    with pytest.raises(StoreError, match="damaged or not a database") as info:
        store.list_runs()
    store.close()
    assert str(db) in str(info.value)
    assert digest(db) == before


def test_foreign_sqlite_file_is_not_taken_over_M3(db: Path) -> None:
    """M3: an unrelated SQLite database at the log's path is refused, not migrated."""
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (text)")
    conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a tao run log"):
        Store.open(db)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT text FROM notes").fetchall() == [("keep me",)]
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 1
    conn.close()


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    """M3: a path that cannot hold a database (here a folder) is a StoreError, no traceback."""
    folder = tmp_path / "tao.db"
    folder.mkdir()
    with pytest.raises(StoreError, match=f"cannot use the run log {folder}"):
        Store.open(folder)


# -- concurrency and crashes -----------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tao.store import RunRecorder, Store
    from tao.trace import RunResult, Status, Step, StepKind

    db, worker, runs, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    while not go.exists():
        time.sleep(0.005)
    store = Store.open(db)  # every worker races to create and migrate the fresh file
    for n in range(runs):
        result = RunResult(f"w{worker}-{n:03d}", f"task {n}", "replay:x", Status.MAX_STEPS,
                           None, started_at=time.time())
        recorder = RunRecorder(store, {"worker": worker})
        recorder.on_start(result)
        for index in (1, 2, 3):
            step = Step(index, StepKind.ACTION, "t", "calculator", "1+1", "2",
                        [{"role": "user", "content": "x" * 2000}], "Action: calculator[1+1]",
                        0.01, 10, 2)
            result.steps.append(step)
            result.usage.add(step)
            recorder.on_step(result, step)
        result.status, result.answer = Status.FINISHED, "2"
        recorder.on_finish(result)
    store.close()
    """
)


def test_concurrent_writer_processes_never_corrupt_the_log_M3(db: Path, tmp_path: Path) -> None:
    """M3: 4 processes x 20 runs (5 commits each) at once on a fresh file, plus a reader.

    All of them (reader included) race to create and migrate the file.

    Afterwards: integrity_check ok, every run, step and model call present.
    """
    workers, runs = 4, 20
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(w), str(runs), str(go)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    started = time.perf_counter()
    go.touch()
    reads = 0
    while any(p.poll() is None for p in procs):
        with Store.open(db) as store:  # opening and reading while they write never fails
            store.list_runs(limit=5)
        reads += 1
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        counts = [
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("runs", "steps", "model_calls")
        ]
        statuses = conn.execute("SELECT DISTINCT status FROM runs").fetchall()
    finally:
        conn.close()
    assert counts == [workers * runs, workers * runs * 3, workers * runs * 3]
    assert statuses == [("finished",)]
    with Store.open(db) as store:
        assert len(store.list_runs(limit=1000)) == workers * runs
    print(f"\n{workers}x{runs} runs by concurrent processes: {elapsed:.2f} s, {reads} reads")


def test_threads_sharing_one_store_M3(db: Path) -> None:
    """M3: one Store shared by threads of a process (e.g. an eval) stays consistent."""
    store = Store.open(db)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(10):
                record(store, make_run(f"t{worker}-{n}", started_at=time.time()), 2)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.list_runs(limit=100)) == 40
    assert all(s.steps == 2 for s in store.list_runs(limit=100))
    store.close()


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tao.store import RunRecorder, Store
    from tao.trace import RunResult, Status, Step, StepKind

    store = Store.open(Path(sys.argv[1]))
    result = RunResult("killed-run", "a task", "replay:x", Status.MAX_STEPS, None,
                       started_at=time.time())
    recorder = RunRecorder(store)
    recorder.on_start(result)
    for index in (1, 2):
        step = Step(index, StepKind.ACTION, f"thought {index}", "calculator", "1+1", "2",
                    [{"role": "user", "content": "q"}], "Action: calculator[1+1]", 0.1, 7, 3)
        result.steps.append(step)
        recorder.on_step(result, step)
    print("ready", flush=True)
    time.sleep(120)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_steps_recorded_before_a_sigkill_survive_M3(db: Path) -> None:
    """M3: each step is committed at once; a killed run keeps them and shows `interrupted`."""
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(db)], stdout=subprocess.PIPE, text=True
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

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with Store.open(db) as store:
        summary = store.get_summary("killed")
        assert (summary.status, summary.steps, summary.model_calls) == (INTERRUPTED, 2, 2)
        assert [s.run_id for s in store.list_runs(status=INTERRUPTED)] == ["killed-run"]
        assert store.list_runs(status=RUNNING) == []
        loaded = store.get_run("killed-run")
    assert loaded.status is Status.ERROR
    assert loaded.error == "the run was interrupted before it finished"
    assert [s.thought for s in loaded.steps] == ["thought 1", "thought 2"]
    assert loaded.steps[1].model_input == [{"role": "user", "content": "q"}]
    assert (loaded.usage.input_tokens, loaded.usage.output_tokens) == (14, 6)
