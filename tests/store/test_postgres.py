"""The run log on PostgreSQL, and the same API checks on both backends (SPEC M3).

Tests taking ``store_backend`` run twice: on SQLite in $TAO_HOME and on a fresh
PostgreSQL database selected by ``TAO_DATABASE_URL``, as a user would. The
PostgreSQL cases skip unless ``TAO_TEST_DATABASE_URL`` names a server
(``eval "$(scripts/start-postgres.sh)"``; CI sets it).
"""

from __future__ import annotations

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
from tao.store import INTERRUPTED, RUNNING, SCHEMA_VERSION, RunRecorder, Store
from tao.trace import RunResult, Status, Step, StepKind, Usage

psycopg = pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg (tao[postgres])")


def make_step(index: int, **overrides: Any) -> Step:
    values: dict[str, Any] = {
        "index": index,
        "kind": StepKind.ACTION,
        "thought": f"thought {index}: 100% sure? ünïcödé, 日本語, O'Brien",
        "tool": "calculator",
        "argument": f"{index} * 2",
        "observation": f"{index * 2} <script>alert(1)</script>",
        "model_input": [{"role": "user", "content": f"Task: step {index} — 50% of ?"}],
        "model_output": f"Thought: t{index}\nAction: calculator[{index} * 2]",
        "duration_s": 0.25 * index,
        "input_tokens": 100 + index,
        "output_tokens": 10 + index,
        "evaluated_tokens": 50 + index,
        "model_duration_s": 0.2 * index,
        "tool_duration_s": 0.01 * index,
        "arguments": {"expression": f"{index} * 2"},
        "call_index": index,
    }
    values.update(overrides)
    return Step(**values)


def make_run(run_id: str, *, started_at: float = 1_700_000_000.0) -> RunResult:
    return RunResult(
        run_id,
        "What?",
        "replay:script.json",
        Status.MAX_STEPS,
        None,
        lang="sv",
        started_at=started_at,
    )


def record(store: Store, result: RunResult, steps: int, status: Status = Status.FINISHED) -> None:
    recorder = RunRecorder(store, {"tools": ["calc"], "max_steps": 8})
    recorder.on_start(result)
    for index in range(1, steps + 1):
        step = make_step(index)
        result.steps.append(step)
        result.usage.add(step)
        recorder.on_step(result, step)
    result.status, result.answer, result.duration_s = status, "42", 1.5
    recorder.on_finish(result)


# -- the same API on both backends --------------------------------------------------------


def test_open_picks_the_backend_from_tao_database_url_M3(store_backend: str) -> None:
    """M3: TAO_DATABASE_URL=postgresql://… selects PostgreSQL; unset, SQLite in $TAO_HOME."""
    with Store.open() as store:
        assert (type(store).__name__ == "PostgresStore") == (store_backend == "postgres")
        if store_backend == "postgres":
            assert store.where.startswith("postgresql://tao@127.0.0.1:")
            assert "tao-test" not in store.where  # never the password
        else:
            assert store.where.endswith("tao.db")


def test_every_field_survives_the_roundtrip_M3(store_backend: str) -> None:
    """M3: status, answer, error, steps (every field), usage and config come back identical."""
    result = make_run("0193abc")
    result.error, result.stop_reason = "budget", "steps"
    with Store.open() as store:
        record(store, result, 2, status=Status.MAX_STEPS)
        result.usage = Usage(
            model_calls=2, input_tokens=203, output_tokens=23, evaluated_tokens=103
        )
        store.finish_run(result)
        loaded = store.get_run("0193a")
        summary = store.get_summary("0193abc")
    assert loaded == result
    assert summary.config == {"tools": ["calc"], "max_steps": 8}
    assert (summary.status, summary.steps, summary.tokens) == ("max_steps", 2, 226)


def test_rerecorded_step_replaces_and_running_run_is_unfinished_M3(store_backend: str) -> None:
    """M3: a step recorded twice (a resumed run) is stored once; before on_finish: running."""
    with Store.open() as store:
        result = make_run("r1")
        store.begin_run(result)
        store.add_step(result, make_step(1))
        store.add_step(result, make_step(1, observation="second"))
        summary = store.list_runs()[0]
        assert (summary.status, summary.steps, summary.model_calls) == (RUNNING, 1, 1)
        loaded = store.get_run("r1")
    assert loaded.status is Status.ERROR
    assert loaded.error == "the run is still in progress"
    assert [s.observation for s in loaded.steps] == ["second"]


def test_list_filter_prefixes_and_export_M3(store_backend: str) -> None:
    """M3: newest first with limit and status; prefix lookup with clear errors; JSONL."""
    with Store.open() as store:
        record(store, make_run("0193aaaa-01", started_at=1_000.0), 1)
        record(store, make_run("0193aaaa-02", started_at=2_000.0), 2, status=Status.MAX_STEPS)
        record(store, make_run("0193bbbb_01", started_at=2_000.0), 3)  # same start: insert order
        assert [s.run_id for s in store.list_runs()] == [
            "0193bbbb_01",
            "0193aaaa-02",
            "0193aaaa-01",
        ]
        assert [s.run_id for s in store.list_runs(limit=1)] == ["0193bbbb_01"]
        assert [s.run_id for s in store.list_runs(status="max_steps")] == ["0193aaaa-02"]
        assert store.list_runs(status=INTERRUPTED) == []
        with pytest.raises(StoreError, match="unknown status 'done'"):
            store.list_runs(status="done")
        assert store.get_run("0193b").run_id == "0193bbbb_01"
        with pytest.raises(StoreError, match=r"ambiguous \(matches 0193aaaa-0\d, 0193aaaa-0\d"):
            store.get_run("0193a")
        for wildcard in ("%", "0193_", "0193aaaa%"):  # LIKE wildcards are escaped
            with pytest.raises(StoreError, match=f"no run with id '{wildcard}' in {store.where}"):
                store.get_run(wildcard)
        with pytest.raises(StoreError, match="give a run id"):
            store.get_run(" ")
        ids = ["0193aaaa-01", "0193bbbb_01"]
        assert store.unique_prefixes(ids) == {
            "0193aaaa-01": "0193aaaa-01",
            "0193bbbb_01": "0193bbbb",
        }
        lines = list(store.export_jsonl("0193bb"))
    assert len(lines) == 4
    assert '"type":"run"' in lines[0]
    assert f'"schema":{SCHEMA_VERSION}' in lines[0]
    assert "日本語" in lines[1]


def test_threads_sharing_one_store_M3(store_backend: str) -> None:
    """M3: one Store shared by the threads of a process stays consistent."""
    errors: list[BaseException] = []
    with Store.open() as store:

        def work(worker: int) -> None:
            try:
                for n in range(8):
                    record(store, make_run(f"t{worker}-{n}", started_at=time.time()), 2)
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
    from tao.store import RunRecorder, Store
    from tao.trace import RunResult, Status, Step, StepKind

    worker, runs, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.005)
    store = Store.open()  # every worker races to create and migrate the fresh database
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


def test_concurrent_writer_processes_on_a_fresh_log_M3(store_backend: str, tmp_path: Path) -> None:
    """M3: 4 processes x 10 runs at once, all racing to migrate a fresh log, plus a reader."""
    workers, runs = 4, 10
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(w), str(runs), str(go)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    go.touch()
    while any(p.poll() is None for p in procs):
        with Store.open() as store:  # opening and reading while they write never fails
            store.list_runs(limit=5)
        time.sleep(0.05)
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    with Store.open() as store:
        summaries = store.list_runs(limit=1000)
    assert len(summaries) == workers * runs
    assert {(s.status, s.steps, s.model_calls, s.input_tokens) for s in summaries} == {
        ("finished", 3, 3, 30)
    }


KILLED_WRITER = textwrap.dedent(
    """
    import time
    from tao.store import RunRecorder, Store
    from tao.trace import RunResult, Status, Step, StepKind

    store = Store.open()
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
def test_steps_committed_before_a_sigkill_survive_M3(store_backend: str) -> None:
    """M3: each step is committed at once; a killed writer's run shows `interrupted`."""
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
    with Store.open() as store:
        summary = store.get_summary("killed")
        loaded = store.get_run("killed-run")
    assert (summary.status, summary.steps, summary.model_calls) == (INTERRUPTED, 2, 2)
    assert loaded.error == "the run was interrupted before it finished"
    assert [s.thought for s in loaded.steps] == ["thought 1", "thought 2"]


# -- PostgreSQL only: schema, versions, faults --------------------------------------------


def _columns_sqlite(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
    finally:
        conn.close()


def _columns_postgres(url: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        ).fetchall()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    return columns


def test_same_tables_and_columns_as_the_sqlite_schema_M3(pg_database: str, tmp_path: Path) -> None:
    """M3: same schema on both backends (a new SQLite migration needs its PostgreSQL twin)."""
    Store.open(tmp_path / "tao.db").close()
    from tao.store.postgres import PostgresStore

    PostgresStore.connect(pg_database).close()
    sqlite_columns = _columns_sqlite(tmp_path / "tao.db")
    pg_columns = _columns_postgres(pg_database)
    assert pg_columns.pop("schema_version") == ["version"]
    assert pg_columns["runs"].pop(0) == "rowid"  # PostgreSQL's stand-in for SQLite's rowid
    assert pg_columns == sqlite_columns
    with psycopg.connect(pg_database) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_reopening_migrates_nothing_and_keeps_runs_M3(pg_database: str) -> None:
    """M3: opening an up-to-date database again changes nothing."""
    from tao.store.postgres import PostgresStore

    with PostgresStore.connect(pg_database) as store:
        record(store, make_run("r1"), 2)
    with PostgresStore.connect(pg_database) as store:
        assert [s.run_id for s in store.list_runs()] == ["r1"]
    with psycopg.connect(pg_database) as conn:
        assert conn.execute("SELECT count(*) FROM schema_version").fetchone() == (1,)


def test_newer_schema_is_refused_and_left_untouched_M3(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M3: a database written by a newer tao is a clear error, never a guess."""
    with psycopg.connect(pg_database) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (7)")
        conn.execute("CREATE TABLE future (x INTEGER)")
    monkeypatch.setenv("TAO_DATABASE_URL", pg_database)
    with pytest.raises(StoreError) as info:
        Store.open()
    where = pg_database.replace(":tao-test@", "@")
    assert str(info.value) == (
        f"the run log {where} was written by a newer tao (schema v7, this tao knows "
        f"v{SCHEMA_VERSION}); upgrade tao, or set TAO_DATABASE_URL to use another run log"
    )
    assert _columns_postgres(pg_database) == {"future": ["x"], "schema_version": ["version"]}


def test_foreign_tables_are_not_taken_over_M3(pg_database: str) -> None:
    """M3: a database that has a `runs` table of its own is refused, not migrated."""
    from tao.store.postgres import PostgresStore

    with psycopg.connect(pg_database) as conn:
        conn.execute("CREATE TABLE runs (name TEXT)")
        conn.execute("INSERT INTO runs VALUES ('keep me')")
    with pytest.raises(StoreError, match="is not a tao run log"):
        PostgresStore.connect(pg_database)
    with psycopg.connect(pg_database) as conn:
        assert conn.execute("SELECT name FROM runs").fetchall() == [("keep me",)]
    assert set(_columns_postgres(pg_database)) == {"runs"}


def test_connection_errors_name_host_and_database_never_the_password_M3(
    pg_database: str, tao_cli: Any
) -> None:
    """M3: refused, bad password and bad scheme are one-line errors without the password."""
    refused = "postgresql://tao:s3cret-pw@127.0.0.1:1/teamlog"
    wrong_password = pg_database.replace(":tao-test@", ":s3cret-pw@")
    for url, fragment in (
        (refused, "cannot connect to the PostgreSQL run log postgresql://tao@127.0.0.1:1/teamlog"),
        (wrong_password, 'password authentication failed for user "tao"'),
        ("mysql://tao:s3cret-pw@db/x", "TAO_DATABASE_URL must start with postgresql://"),
    ):
        out = tao_cli("runs", "list", env={"TAO_DATABASE_URL": url})
        assert out.returncode == 1, out.stdout
        assert fragment in out.stderr
        assert "s3cret-pw" not in out.stderr
        assert "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_a_dropped_connection_is_replaced_on_the_next_call_M3(pg_database: str) -> None:
    """M3: a server-side disconnect fails one call with a StoreError; the next one works."""
    from tao.store.postgres import PostgresStore

    with PostgresStore.connect(pg_database) as store:
        record(store, make_run("r1"), 1)
        with psycopg.connect(pg_database, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'tao' AND datname = current_database()"
            )
        message = ""
        try:
            store.list_runs()  # may fail once: the connection it had is gone
        except StoreError as error:
            message = str(error)
        assert not message or message.startswith("lost the connection to the PostgreSQL")
        assert [s.run_id for s in store.list_runs()] == ["r1"]


def test_cli_records_and_reads_runs_in_postgres_M1_M3(
    pg_database: str, tao_cli: Any, replay: Any, tao_home: Path
) -> None:
    """M3: `tao run` records into PostgreSQL; list, show and export read it; no SQLite file."""
    script = replay(["Thought: add.\nAction: calculator[17 * 23 + 4]", "Action: finish[395]"])
    env = {"TAO_DATABASE_URL": pg_database}
    run = tao_cli(
        "run",
        "What is 17 * 23 + 4?",
        "--model",
        f"replay:{script}",
        "--json",
        "--tools",
        "calc",
        env=env,
    )
    assert run.returncode == 0, run.stderr
    run_id = run.json()["run_id"]
    listed = tao_cli("runs", "list", "--json", env=env).json()
    assert [(r["run_id"], r["status"], r["answer"]) for r in listed] == [
        (run_id, "finished", "395")
    ]
    shown = tao_cli("runs", "show", run_id[:10], env=env)
    assert shown.returncode == 0, shown.stderr
    assert "calculator" in shown.stdout
    assert "395" in shown.stdout
    exported = tao_cli("runs", "export", run_id, env=env)
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == 3
    assert not (tao_home / "tao.db").exists()
