"""``tao runs list|show|export`` in a real child process over a real run log (SPEC M3, L1)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tao.state.config import RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store import SCHEMA_VERSION, RunRecorder
from tao.store.factory import open_store

MARKUP = "[bold red]not markup[/bold red] [/] [link=x]"


def _steps() -> list[Step]:
    ask = [{"role": "user", "content": "What is 17 * 23 + 4?"}]
    return [
        Step(
            index=1,
            kind=StepKind.ACTION,
            thought="I need to compute 17 * 23 + 4.",
            tool="calculator",
            arguments={"expression": "17 * 23 + 4"},
            observation=f"395 {MARKUP}",
            model_input=ask,
            model_output="Thought: I need to compute.\nAction: calculator[17 * 23 + 4]",
            duration_s=0.75,
            input_tokens=120,
            output_tokens=25,
            model_duration_s=0.5,
            tool_duration_s=0.25,
        ),
        Step(
            index=2,
            kind=StepKind.UNKNOWN_TOOL,
            thought="Let me check.",
            tool="search",
            unparsed="17",
            observation="Unknown tool: search. Available: calculator, finish",
            model_input=ask,
            model_output="Action: search[17]",
            duration_s=0.5,
            input_tokens=150,
            output_tokens=10,
        ),
        Step(
            index=3,
            kind=StepKind.FINAL,
            thought="I have it.",
            tool="finish",
            arguments={"answer": "395"},
            observation=None,
            model_input=ask,
            model_output="Action: finish[395]",
            duration_s=0.25,
            input_tokens=170,
            output_tokens=8,
        ),
    ]


def _record(run_id: str, started_at: float, *, task: str, finish: bool = True) -> RunResult:
    """Populate the run log exactly as the loop does, through the recorder."""
    result = RunResult(run_id=run_id, task=task, model="replay:calc.json", started_at=started_at)
    with open_store() as store:  # $TAO_HOME from the autouse fixture
        recorder = RunRecorder(store, RunConfig(model="replay:calc.json", tools=("calc",)))
        recorder.on_start(result)
        for step in _steps():
            result.add_step(step)
            recorder.on_step(result, step)
        if finish:
            result.status, result.answer, result.duration_s = Status.FINISHED, "395", 1.5
            recorder.on_finish(result)
    return result


@pytest.fixture
def logged(tao_home: Path, store_backend: str) -> dict[str, RunResult]:
    """Two runs in the run log; every test using it runs on SQLite and on PostgreSQL."""
    return {
        "old": _record("0193a0000001aaaa", 1_700_000_000.0, task="Old task about cats"),
        "new": _record("0193b0000002bbbb", 1_700_000_100.0, task=f"What is 17 * 23 + 4? {MARKUP}"),
    }


def _assert_one_line_error(out: Any, *fragments: str, code: int = 1) -> None:
    assert out.returncode == code
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_list_shows_a_table_newest_first_M3(tao_cli: Any, logged: dict[str, RunResult]) -> None:
    """M3: `tao runs list` shows id prefix, start, status, steps, tokens, cost, model, task."""
    out = tao_cli("runs", "list", env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = ["ID", "Started", "Status", "Steps", "Tokens", "Cost", "Model", "Task"]
    assert lines[0].split() == header
    assert " unknown " in lines[1]  # a replay model has no price: unknown, never $0 (issue 15)
    assert lines[1].split()[0] == "0193b000"  # shortest unique prefix, at least 8 chars
    assert "finished" in lines[1]
    assert " 3 " in lines[1]
    assert f"{120 + 25 + 150 + 10 + 170 + 8:,}" in lines[1]
    assert "replay:calc.json" in lines[1]
    assert MARKUP in lines[1]  # task text printed literally, never as markup
    assert "Old task about cats" in lines[2]
    assert len(lines) == 3


def test_list_json_limit_and_status_filter_M3(tao_cli: Any, logged: dict[str, RunResult]) -> None:
    """M3: `--json` is one JSON array; `--limit` and `--status` narrow it."""
    out = tao_cli("runs", "list", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [r["run_id"] for r in data] == ["0193b0000002bbbb", "0193a0000001aaaa"]
    assert data[0]["status"] == "finished"
    assert (data[0]["steps"], data[0]["model_calls"], data[0]["tokens"]) == (3, 3, 483)
    assert data[0]["config"]["tools"] == ["calc"] and data[0]["config"]["max_steps"] == 8
    limited = json.loads(tao_cli("runs", "list", "--json", "--limit", "1").stdout)
    assert [r["run_id"] for r in limited] == ["0193b0000002bbbb"]
    assert json.loads(tao_cli("runs", "list", "--json", "--status", "error").stdout) == []
    bad = tao_cli("runs", "list", "--status", "done")
    assert bad.returncode == 2
    assert "finished" in bad.stderr


def test_list_on_an_empty_log_says_so(tao_cli: Any, tao_home: Path) -> None:
    """M3: a fresh install has an empty, valid log."""
    out = tao_cli("runs", "list")
    assert out.returncode == 0, out.stderr
    assert "No runs in" in out.stdout
    assert str(tao_home / "tao.db") in out.stdout.replace("\n", "")


def test_show_prints_every_step_readably_L1_M3(tao_cli: Any, logged: dict[str, RunResult]) -> None:
    """L1/M3: thought, action, observation, timings and tokens of each step, answer last."""
    out = tao_cli("runs", "show", "0193b")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    order = [
        "0193b0000002bbbb",
        "Thought: I need to compute 17 * 23 + 4.",
        "Action: calculator(expression='17 * 23 + 4')",  # the call as bound (issue 30)
        f"395 {MARKUP}",
        "750 ms · model 500 ms · tool 250 ms · 120 in / 25 out tokens",
        "unknown tool",
        "Unknown tool: search. Available: calculator, finish",
        "Final Answer: 395",
        "finished",
        "3 steps · 3 model calls · 440 in / 43 out tokens · cost unknown · 1.50 s",
    ]
    position = 0
    for fragment in order:  # each piece present, in reading order
        found = text.find(fragment, position)
        assert found >= 0, f"{fragment!r} missing after position {position}:\n{text}"
        position = found + len(fragment)


def test_show_json_is_the_run_result_M3(tao_cli: Any, logged: dict[str, RunResult]) -> None:
    """M3: `show --json` prints RunResult.to_json() of the recorded run."""
    out = tao_cli("runs", "show", "0193a0000001aaaa", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data == json.loads(json.dumps(logged["old"].to_json()))
    assert RunResult.from_json(data) == logged["old"]


def test_show_marks_an_unfinished_run_M3(tao_cli: Any, tao_home: Path) -> None:
    """M3: a run without on_finish is shown as running (its writer is this live process)."""
    _record("0193c0000003cccc", 1_700_000_200.0, task="unfinished", finish=False)
    out = tao_cli("runs", "show", "0193c")
    assert out.returncode == 0, out.stderr
    assert "status running" in out.stdout
    assert "the run is still in progress" in out.stdout


def test_export_jsonl_to_stdout_and_to_a_file_M3(
    tao_cli: Any, logged: dict[str, RunResult], tmp_path: Path
) -> None:
    """M3: `export --format jsonl`: a run record, then one step record per line."""
    out = tao_cli("runs", "export", "0193b", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["type"] for r in records] == ["run", "step", "step", "step"]
    assert records[0]["run_id"] == "0193b0000002bbbb"
    assert records[0]["task"] == f"What is 17 * 23 + 4? {MARKUP}"
    assert records[1]["observation"] == f"395 {MARKUP}"
    assert records[1]["model_input"] == [{"role": "user", "content": "What is 17 * 23 + 4?"}]
    assert [r["kind"] for r in records[1:]] == ["action", "unknown_tool", "final"]

    target = tmp_path / "run.jsonl"
    written = tao_cli("runs", "export", "0193b", "-o", str(target))
    assert written.returncode == 0, written.stderr
    assert written.stdout == ""
    assert f"Wrote 4 lines (jsonl) to {target}" in written.stderr
    assert target.read_text(encoding="utf-8") == out.stdout


def test_unknown_and_ambiguous_ids_are_one_line_errors_M3(
    tao_cli: Any, logged: dict[str, RunResult], tmp_path: Path
) -> None:
    """M3: a bad id is one clear line on stderr and exit code 2 (a usage error), no traceback."""
    out = tao_cli("runs", "show", "ffff")
    _assert_one_line_error(out, "Error: no run with id 'ffff'", code=2)
    _assert_one_line_error(
        tao_cli("runs", "show", "0193"),
        "ambiguous",
        "0193b0000002bbbb",
        "0193a0000001aaaa",
        code=2,
    )
    target = tmp_path / "never.jsonl"
    out = tao_cli("runs", "export", "nope", "-o", str(target))
    _assert_one_line_error(out, "no run", code=2)
    assert not target.exists()


def test_corrupt_log_is_a_one_line_error_and_kept_M3(tao_cli: Any, tao_home: Path) -> None:
    """M3: a corrupt run log is reported with what to do, and left as it was."""
    tao_home.mkdir(mode=0o700, parents=True)  # as tao makes it: no notice
    db = tao_home / "tao.db"
    db.write_bytes(b"garbage, not a database " * 100)
    out = tao_cli("runs", "list")
    _assert_one_line_error(out, str(db), "damaged or not a database", "move it aside")
    assert db.read_bytes() == b"garbage, not a database " * 100


def test_newer_schema_is_a_one_line_error_M3(tao_cli: Any, tao_home: Path) -> None:
    """M3: a log from a newer tao says to upgrade tao."""
    tao_home.mkdir(mode=0o700, parents=True)
    conn = sqlite3.connect(tao_home / "tao.db")
    newer = SCHEMA_VERSION + 1
    conn.execute(f"PRAGMA user_version = {newer}")
    conn.close()
    out = tao_cli("runs", "show", "abc")
    _assert_one_line_error(
        out, f"newer tao (schema v{newer}, this tao knows v{SCHEMA_VERSION}); upgrade tao"
    )
