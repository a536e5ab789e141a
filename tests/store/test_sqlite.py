"""What only the SQLite run log has: a file, its pragmas, its damage (SPEC M3).

The API itself is tested once on both backends in test_store.py; here are the
file's location, WAL mode, the schema version in ``PRAGMA user_version``, and
files that are newer, foreign, damaged or not databases at all.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tao.errors import StoreError
from tao.paths import default_db_path
from tao.state.result import Status
from tao.store import SCHEMA_VERSION, SQLiteStore
from tao.store.factory import open_store
from tao.store.schema import MIGRATIONS, V8_STATUSES

if TYPE_CHECKING:  # the fixture's class, for annotations only (conftest is not importable)
    from conftest import Runs


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "home" / "tao.db"


def test_default_path_is_tao_home_tao_db_M3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M3: the log lives at $TAO_HOME/tao.db, and folders are created on open."""
    monkeypatch.setenv("TAO_HOME", str(tmp_path / "deep" / "home"))
    assert default_db_path() == tmp_path / "deep" / "home" / "tao.db"
    with open_store() as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "deep" / "home" / "tao.db"
    assert (tmp_path / "deep" / "home" / "tao.db").is_file()


def test_file_is_wal_with_current_schema_version_M3(db: Path) -> None:
    """M3: WAL mode (concurrent readers + a writer) and a versioned schema."""
    open_store(db).close()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 13
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {"runs", "steps", "model_calls", "run_messages"}
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"runs_started_at", "model_calls_run"} <= indexes
    finally:
        conn.close()
    assert len(MIGRATIONS) == SCHEMA_VERSION
    assert set(V8_STATUSES) == {str(status) for status in Status}


def test_the_status_check_still_refuses_what_is_not_a_status_M3(db: Path) -> None:
    """M3: the rebuilt table keeps its CHECK: a status no tao knows cannot be written."""
    open_store(db).close()
    conn = sqlite3.connect(db)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(
                "INSERT INTO runs (id, task, model, lang, status, started_at) "
                "VALUES ('x', 't', 'm', 'en', 'paused', 0)"
            )
    finally:
        conn.close()


def test_reopening_is_idempotent_and_keeps_runs_M3(db: Path, runs: Runs) -> None:
    """M3: opening an up-to-date log again migrates nothing and loses nothing."""
    with open_store(db) as store:
        runs.record(store, runs.run("r1"), 2)
    before = digest(db)
    with open_store(db) as store:
        assert [s.run_id for s in store.list_runs()] == ["r1"]
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert digest(db) == before


def test_a_second_store_in_one_process_keeps_the_first_ones_writes_M3_R3(
    db: Path, runs: Runs
) -> None:
    """M3, R3: a process with a live store opens the log again (``agent.run`` then
    ``open_store()`` to read it), and another process (``tao runs approve``) opens and
    closes it. The first store's later writes must reach the file: closing any descriptor
    of the log drops the process's POSIX locks, SQLite's included, and the other process,
    seeing no other user, deleted the WAL under the live store (its writes were lost and
    the next open failed with ``disk I/O error``)."""
    first = open_store(db)
    try:
        runs.record(first, runs.run("r1"), 1)
        with open_store(db) as second:
            assert [s.run_id for s in second.list_runs()] == ["r1"]
        other = (
            "from tao.store.factory import open_store; import sys; open_store(sys.argv[1]).close()"
        )
        subprocess.run([sys.executable, "-c", other, str(db)], check=True, timeout=60)
        runs.record(first, runs.run("r2", started_at=1_700_000_001.0), 1)
        read = (
            "from tao.store.factory import open_store; import sys; "
            "print(' '.join(s.run_id for s in open_store(sys.argv[1]).list_runs()))"
        )
        seen = subprocess.run(
            [sys.executable, "-c", read, str(db)], capture_output=True, text=True, timeout=60
        )
    finally:
        first.close()
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.split() == ["r2", "r1"]


# -- damaged, foreign and newer files ------------------------------------------------------


def test_newer_schema_is_refused_with_upgrade_advice_and_left_untouched_M3(db: Path) -> None:
    """M3: a log written by a newer tao gives a clear error, never a guess."""
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE future (x)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    before = digest(db)
    with pytest.raises(StoreError) as info:
        open_store(db)
    assert str(info.value) == (
        f"the run log {db} was written by a newer tao (schema v99, this tao knows "
        f"v{SCHEMA_VERSION}); upgrade tao, or set TAO_HOME to use another run log"
    )
    assert digest(db) == before


def test_file_that_is_not_a_database_is_refused_and_kept_M3(db: Path) -> None:
    """M3: a corrupt file is a StoreError naming the file and what to do; nothing lost."""
    db.parent.mkdir(parents=True)
    db.write_bytes(b"definitely not sqlite\n" * 500)
    before = digest(db)
    with pytest.raises(StoreError) as info:
        open_store(db)
    message = str(info.value)
    assert str(db) in message
    assert "damaged or not a database" in message
    assert f"mv {db} {db}.broken" in message
    assert digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["tao.db"]


def test_malformed_pages_give_a_store_error_on_read_and_the_file_is_kept_M3(
    db: Path, runs: Runs
) -> None:
    """M3: damage found while reading (not at open) is still a clear StoreError."""
    with open_store(db) as store:
        for n in range(40):
            runs.record(store, runs.run(f"run{n:03d}", task="x" * 500), 2)
    data = bytearray(db.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    assert len(data) > 4 * page_size
    data[page_size:] = b"\xa5" * (len(data) - page_size)  # every page but the schema page
    db.write_bytes(bytes(data))
    before = digest(db)
    store = open_store(db)  # the schema page is intact, so the damage shows on reading
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
        open_store(db)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT text FROM notes").fetchall() == [("keep me",)]
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 1
    conn.close()


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    """M3: a path that cannot hold a database (here a folder) is a StoreError, no traceback."""
    folder = tmp_path / "tao.db"
    folder.mkdir()
    with pytest.raises(StoreError, match=f"cannot use the run log {folder}"):
        open_store(folder)


def test_a_v7_log_is_rebuilt_for_queued_runs_keeping_every_column_M3(db: Path) -> None:
    """M3, issue 28: v7 -> v8 rebuilds `runs` (a CHECK cannot be altered in SQLite) with
    every column v3 to v7 added (transcript count, parent, cost, lease) and every row, and
    then accepts `queued`."""
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db, isolation_level=None)
    for migration in MIGRATIONS[:7]:
        for statement in migration:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 7")
    conn.execute(
        """INSERT INTO runs (id, task, model, lang, status, started_at, state_messages,
               parent_id, cost_usd, lease_holder, lease_since, lease_until)
           VALUES ('r1', 'old task', 'm', 'en', 'finished', 1, 3, 'r0', 0.25, 'h:1:x', 2, 3)"""
    )
    conn.execute(
        "INSERT INTO steps (run_id, idx, kind, duration_s, model_duration_s, tool_duration_s,"
        " input_tokens, output_tokens, created_at) VALUES ('r1', 1, 'final', 0, 0, 0, 1, 1, 1)"
    )
    conn.close()
    with open_store(db) as store:
        summary = store.get_summary("r1")
        assert (summary.task, summary.parent_id, summary.cost_usd) == ("old task", "r0", 0.25)
        assert store.get_lease("r1") is not None
        assert len(store.get_run("r1").steps) == 1
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 13
        assert conn.execute("SELECT state_messages FROM runs").fetchone()[0] == 3
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.execute("UPDATE runs SET status = 'queued' WHERE id = 'r1'")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE runs SET status = 'waiting' WHERE id = 'r1'")
    finally:
        conn.close()
