"""A run log written at schema v4 migrates to the current schema (v5: ``runs.parent_id``,
v6: costs) and its runs can be followed up (issue 15 item 5, SPEC M3).

``data/main-v4.db`` was written by the old code itself (commit 28ab06f, see
``data/make_v4_log.py``). Opening a copy migrates it in place; every row stays, no run
has a parent, and ``tao run --continue`` on an old run records it as the parent.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tao.state.result import Status
from tao.store import SCHEMA_VERSION
from tao.store.factory import open_store

V4_LOG = Path(__file__).parent / "data" / "main-v4.db"
FINISHED = "01a23c60007d9acafc90a9eb"
MAX_STEPS = "01a23c6000991ad8f5f4d0f1"


def _copy(tao_home: Path) -> Path:
    tao_home.mkdir(parents=True, exist_ok=True)
    copy = tao_home / "tao.db"
    shutil.copyfile(V4_LOG, copy)  # the committed file itself is never opened for writing
    return copy


def _read(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_v4_log_migrates_keeping_every_row(tao_home: Path) -> None:
    log = _copy(tao_home)
    assert _read(log, "PRAGMA user_version") == [(4,)]
    with open_store(log) as store:
        runs = store.list_runs()
        finished = store.get_run(FINISHED)
    assert _read(log, "PRAGMA user_version") == [(SCHEMA_VERSION,)] == [(13,)]
    counts = [_read(log, f"SELECT count(*) FROM {t}")[0][0] for t in ("runs", "steps")]
    assert counts == [2, 4]
    assert [(r.run_id, r.status, r.parent_id) for r in runs] == [
        (MAX_STEPS, Status.MAX_STEPS, None),
        (FINISHED, Status.FINISHED, None),
    ]
    assert (finished.answer, finished.parent_id, len(finished.steps)) == ("391", None, 2)
    assert _read(log, "PRAGMA integrity_check") == [("ok",)]


def test_a_run_of_a_v4_log_can_be_continued(
    tao_home: Path, tao_cli: Any, replay: Callable[[list[str]], Path]
) -> None:
    _copy(tao_home)
    script = replay(["Thought: add.\nAction: calculator[391 + 4]", "Action: finish[395]"])
    out = tao_cli("run", "--continue", FINISHED, "And plus 4?", "-m", f"replay:{script}", "--json")
    assert out.returncode == 0, out.stderr
    follow = json.loads(out.stdout)
    assert (follow["answer"], follow["parent_id"]) == ("395", FINISHED)
    sent = [m["content"] for m in follow["steps"][0]["model_input"]]
    assert sent[1:4] == [
        "Task: What is 17 * 23?",
        "Thought: multiply.\nAction: calculator[17 * 23]",
        "Observation: 391",
    ]
    assert sent[-1] == "Task: And plus 4?"
    with open_store() as store:
        assert store.get_summary(follow["run_id"]).parent_id == FINISHED
