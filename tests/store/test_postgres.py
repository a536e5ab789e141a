"""What only the PostgreSQL run log has: a server, its schema table, its faults (SPEC M3).

The API itself is tested once on both backends in test_store.py. These tests
skip unless ``TAO_TEST_DATABASE_URL`` names a server
(``eval "$(scripts/start-postgres.sh)"``; CI sets it).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tao.errors import StoreError
from tao.state.result import Status
from tao.store import SCHEMA_VERSION
from tao.store.factory import open_store

if TYPE_CHECKING:  # the fixture's class, for annotations only (conftest is not importable)
    from conftest import Runs

psycopg = pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg (tao[postgres])")


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
    open_store(tmp_path / "tao.db").close()
    from tao.store.postgres import PostgresStore

    PostgresStore.connect(pg_database).close()
    sqlite_columns = _columns_sqlite(tmp_path / "tao.db")
    pg_columns = _columns_postgres(pg_database)
    assert pg_columns.pop("schema_version") == ["version"]
    assert pg_columns["runs"].pop(0) == "rowid"  # PostgreSQL's stand-in for SQLite's rowid
    assert pg_columns == sqlite_columns
    with psycopg.connect(pg_database) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_a_version_1_database_is_migrated_to_take_the_new_statuses_M3(
    pg_database: str, runs: Runs
) -> None:
    """M3: v1 -> v3 widens the status CHECK in place; the runs already there are kept."""
    from tao.store.pg_schema import MIGRATIONS
    from tao.store.postgres import PostgresStore

    with psycopg.connect(pg_database, autocommit=True) as conn:  # what tao 0.1 created
        for statement in MIGRATIONS[0]:
            conn.execute(statement.encode())
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (1)")
        conn.execute(
            "INSERT INTO runs (id, task, model, lang, status, started_at) "
            "VALUES ('old', 't', 'm', 'en', 'finished', 1)"
        )
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE runs SET status = 'cancelled'")
    with PostgresStore.connect(pg_database) as store:
        assert [s.run_id for s in store.list_runs()] == ["old"]
        runs.record(store, runs.run("new"), 1, status=Status.CANCELLED)
        assert store.get_summary("new").status is Status.CANCELLED
    with psycopg.connect(pg_database) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE runs SET status = 'paused'")


def test_a_version_11_database_moves_a_final_answer_into_arguments_M3(pg_database: str) -> None:
    """Issue 30, M3: v12 in PostgreSQL: a final answer stored as ``argument`` becomes
    ``arguments`` = ``{"answer": ...}``; a bound call keeps only its arguments; an unknown
    tool's text as written stays, as ``unparsed``."""
    from tao.store.pg_schema import MIGRATIONS
    from tao.store.postgres import PostgresStore

    with psycopg.connect(pg_database, autocommit=True) as conn:  # what tao at v11 created
        for statements in MIGRATIONS[:11]:
            for statement in statements:
                conn.execute(statement.encode())
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (11)")
        conn.execute(
            "INSERT INTO runs (id, task, model, lang, status, started_at, answer) "
            "VALUES ('old', 't', 'm', 'en', 'finished', 1, 'it''s \"4\"')"
        )
        rows = [
            (1, "action", "calc", "2+2", '{"expression": "2+2"}'),
            (2, "unknown_tool", "serch", "Ed Wood", None),
            (3, "final", "finish", 'it\'s "4"', None),
        ]
        for index, kind, tool, argument, arguments in rows:
            conn.execute(
                "INSERT INTO steps (run_id, idx, kind, tool, argument, arguments, duration_s, "
                "model_duration_s, tool_duration_s, input_tokens, output_tokens, created_at) "
                "VALUES ('old', %s, %s, %s, %s, %s, 0, 0, 0, 0, 0, 1)",
                (index, kind, tool, argument, arguments),
            )
    with PostgresStore.connect(pg_database) as store:
        steps = store.get_run("old").steps
    assert [(s.arguments, s.unparsed) for s in steps] == [
        ({"expression": "2+2"}, None),
        (None, "Ed Wood"),
        ({"answer": 'it\'s "4"'}, None),
    ]
    assert steps[-1].answer == 'it\'s "4"'


def test_reopening_migrates_nothing_and_keeps_runs_M3(pg_database: str, runs: Runs) -> None:
    """M3: opening an up-to-date database again changes nothing."""
    from tao.store.postgres import PostgresStore

    with PostgresStore.connect(pg_database) as store:
        runs.record(store, runs.run("r1"), 2)
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
        conn.execute("INSERT INTO schema_version VALUES (99)")
        conn.execute("CREATE TABLE future (x INTEGER)")
    monkeypatch.setenv("TAO_DATABASE_URL", pg_database)
    with pytest.raises(StoreError) as info:
        open_store()
    where = pg_database.replace(":tao-test@", "@")
    assert str(info.value) == (
        f"the run log {where} was written by a newer tao (schema v99, this tao knows "
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


def _bad_urls(pg_database: str) -> list[tuple[str, str]]:
    """URLs that cannot work (refused, wrong password, not PostgreSQL), each with the
    words its error must contain; every one carries the password ``s3cret-pw``."""
    refused = "postgresql://tao:s3cret-pw@127.0.0.1:1/teamlog"
    return [
        (refused, "cannot connect to the PostgreSQL run log postgresql://tao@127.0.0.1:1/teamlog"),
        (
            pg_database.replace(":tao-test@", ":s3cret-pw@"),
            'password authentication failed for user "tao"',
        ),
        ("mysql://tao:s3cret-pw@db/x", "TAO_DATABASE_URL must start with postgresql://"),
    ]


def test_connect_errors_are_one_line_store_errors_without_the_password_M3(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M3: refused, bad password and bad scheme are StoreErrors naming the server, not the
    password (the library's side of the CLI test below)."""
    for url, fragment in _bad_urls(pg_database):
        monkeypatch.setenv("TAO_DATABASE_URL", url)
        with pytest.raises(StoreError) as info:
            open_store()
        assert fragment in str(info.value)
        assert "s3cret-pw" not in str(info.value)
        assert "\n" not in str(info.value)


def test_connection_errors_name_host_and_database_never_the_password_M3(
    pg_database: str, tao_cli: Any
) -> None:
    """M3: refused, bad password and bad scheme are one-line errors without the password."""
    for url, fragment in _bad_urls(pg_database):
        out = tao_cli("runs", "list", env={"TAO_DATABASE_URL": url})
        assert out.returncode == 1, out.stdout
        assert fragment in out.stderr
        assert "s3cret-pw" not in out.stderr
        assert "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_a_dropped_connection_is_replaced_on_the_next_call_M3(pg_database: str, runs: Runs) -> None:
    """M3: a server-side disconnect fails one call with a StoreError; the next one works."""
    from tao.store.postgres import PostgresStore

    with PostgresStore.connect(pg_database) as store:
        runs.record(store, runs.run("r1"), 1)
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
