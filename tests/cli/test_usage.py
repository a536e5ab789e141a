"""The command line as a user meets it: exit codes, refusals, notes (SPEC M1, M3, S3).

Every case runs the real ``tao`` in a child process (or at a pseudo-terminal, where the
behaviour is about a person at a terminal).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

Replay = Callable[[list[str]], Path]

WRITE_SCRIPT = [
    'Action: write_file(path="out.txt", content="hello")',
    "Action: finish[written]",
]

#: Each: the arguments after ``tao``; ``{replay}`` is a replay script that answers at once,
#: ``{tmp}`` a fresh folder. Every one is a mistake on the command line: exit code 2.
USAGE_MISTAKES: dict[str, list[str]] = {
    "unknown subcommand": ["frobnicate"],
    "run without a task": ["run"],
    "run unknown option": ["run", "x", "--frobnicate"],
    "run bad model spec": ["run", "x", "--model", "gpt4"],
    "run unknown model backend": ["run", "x", "--model", "nope:thing"],
    "run bad --tools name": ["run", "x", "-m", "{replay}", "--tools", "web"],
    "run --max-steps 0": ["run", "x", "-m", "{replay}", "--max-steps", "0"],
    "run --max-seconds negative": ["run", "x", "-m", "{replay}", "--max-seconds", "-1"],
    "run missing --output-schema file": [
        "run", "x", "-m", "{replay}", "--output-schema", "{tmp}/missing.json",
    ],
    "run --output-schema not an object": [
        "run", "x", "-m", "{replay}", "--output-schema", "{tmp}/list.json",
    ],
    "run missing --corpus file": [
        "run", "x", "-m", "{replay}", "-t", "wiki", "--corpus", "{tmp}/missing.jsonl",
    ],
    "run missing replay file": ["run", "x", "-m", "replay:{tmp}/missing.json"],
    "run missing --project folder": ["run", "x", "-m", "{replay}", "--project", "{tmp}/nope"],
    "run --no-log with approval tools": [
        "run", "x", "-m", "{replay}", "-t", "write", "--project", "{tmp}", "--no-log",
        "--no-input",
    ],
    "runs show unknown run id": ["runs", "show", "0123456789abcdef"],
    "runs export unknown run id": ["runs", "export", "0123456789abcdef"],
    "runs list --limit 0": ["runs", "list", "--limit", "0"],
    "runs list unknown --status": ["runs", "list", "--status", "sleeping"],
    "runs approve unknown run id": ["runs", "approve", "0123456789abcdef"],
    "runs deny unknown run id": ["runs", "deny", "0123456789abcdef"],
    "resume unknown run id": ["resume", "0123456789abcdef"],
    "eval missing questions file": [
        "eval", "hotpotqa", "--questions", "{tmp}/missing.jsonl", "--corpus", "{tmp}/c.jsonl",
    ],
    "eval unknown strategy": [
        "eval", "fever", "--questions", "q", "--corpus", "c", "--strategy", "guess",
    ],
    "serve a remote model": ["serve", "--model", "openai:gpt-4o-mini"],
    "ui port out of range": ["ui", "--port", "-1"],
}  # fmt: skip


def _family(args: list[str]) -> str:
    return args[0] if args[0] in ("run", "runs", "eval") else "other"


FAMILIES = sorted({_family(args) for args in USAGE_MISTAKES.values()})


def run_mistakes(
    chosen: Callable[[list[str]], bool], tao_cli: Any, replay: Replay, tmp: Path, *extra: str
) -> dict[str, Any]:
    """The :data:`USAGE_MISTAKES` that ``chosen`` picks, ``extra`` appended, run at once
    (each is its own process); their outputs by case."""
    (tmp / "list.json").write_text("[1, 2]")
    script = f"replay:{replay(['Action: finish[x]'])}"
    cases = {
        case: [a.replace("{replay}", script).replace("{tmp}", str(tmp)) for a in args] + [*extra]
        for case, args in USAGE_MISTAKES.items()
        if chosen(args)
    }
    with ThreadPoolExecutor(min(len(cases), 8)) as pool:
        ran = pool.map(lambda args: tao_cli(*args, timeout=90), cases.values())
        return dict(zip(cases, ran, strict=True))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_usage_error_exits_2_with_one_clear_line(
    family: str, tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    """Each mistake of one command family, run at once (each is its own process)."""
    outs = run_mistakes(lambda args: _family(args) == family, tao_cli, replay, tmp_path)
    wrong = {c: (out.returncode, out.stderr) for c, out in outs.items() if out.returncode != 2}
    assert not wrong
    for case, out in outs.items():
        assert "Traceback" not in out.stderr, case
        assert "Error: " in out.stderr, (case, out.stderr)
        assert out.stdout == "", case  # nothing half-done on stdout


def test_json_prints_one_object_even_when_the_run_never_starts_R2(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    """SPEC R2: ``--json`` always prints one JSON object, so ``tao run --json … | jq`` has
    something to read when the command line is wrong too: click's own refusals
    (``--max-steps 0``, no task) and tao's (a bad model spec, an unknown run id)."""
    driving = ("run", "resume")
    outs = run_mistakes(lambda args: args[0] in driving, tao_cli, replay, tmp_path, "--json")
    for case, out in outs.items():
        assert out.returncode == 2, (case, out.stderr)
        assert len(out.stdout.splitlines()) == 1, (case, out.stdout)  # one object, only it
        line = out.stdout.strip()
        data = json.loads(line)
        assert data["run_id"] is None and data["status"] == "error", case
        assert data["error"] and data["error"] in out.stderr, case


def test_json_object_when_the_run_log_is_damaged_before_resuming_R2(
    tao_cli: Any, tao_home: Path
) -> None:
    tao_home.mkdir(parents=True, exist_ok=True)
    (tao_home / "tao.db").write_bytes(b"not a database at all" * 100)
    out = tao_cli("resume", "0123456789abcdef", "--json")
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "error" and "damaged" in data["error"]
    assert (tao_home / "tao.db").read_bytes().startswith(b"not a database")  # left untouched


def test_no_log_refusal_names_the_tools_and_the_way_out_S3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    out = tao_cli(
        "run", "write it", "-m", f"replay:{replay(WRITE_SCRIPT)}", "-t", "write",
        "--project", str(tmp_path), "--no-log", "--json",
    )  # fmt: skip
    assert out.returncode == 2
    assert "write_file" in out.stderr and "never be resumed" in out.stderr
    assert not (tmp_path / "out.txt").exists()
    assert not list(tmp_path.parent.glob("tao-home/tao.db"))  # nothing recorded either


def test_no_log_with_read_only_tools_and_human_tools_still_runs_M2(
    tao_cli: Any, replay: Replay
) -> None:
    """Nothing can pause: the read-only calculator, performed by the person."""
    script = replay(["Action: calculator[6 * 7]", "Action: finish[42]"])
    out = tao_cli(
        "run", "6*7?", "-m", f"replay:{script}", "-t", "calc", "--human-tools", "--no-log",
        "--json", input="42\n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["answer"] == "42"


def test_no_log_with_a_policy_that_pre_approves_every_call_runs_S3(
    tao_cli: Any, replay: Replay, tmp_path: Path, tao_home: Path
) -> None:
    tao_home.mkdir(parents=True, exist_ok=True)
    rules = "".join(f'[[allow]]\ntool = "{name}"\n' for name in ("write_file", "delete_file"))
    (tao_home / "policy.toml").write_text(rules)
    project = tmp_path / "project"  # the policy must lie outside it (S3)
    project.mkdir()
    out = tao_cli(
        "run", "write it", "-m", f"replay:{replay(WRITE_SCRIPT)}", "-t", "write",
        "--project", str(project), "--no-log", "--json", cwd=project,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (project / "out.txt").read_text() == "hello"


def run_in_pty(
    args: list[str], replies: dict[str, str], cwd: Path, timeout: float = 60
) -> tuple[int, str]:
    """``tao ARGS`` at a pseudo-terminal; whenever the screen shows a key of ``replies``
    (once each), its value is typed. Returns the exit code and everything shown."""
    master, slave = os.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tao", *args],
        stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True,
    )  # fmt: skip
    os.close(slave)
    shown, pending, deadline = b"", dict(replies), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                shown += chunk
            for prompt in [p for p in pending if p.encode() in shown]:
                os.write(master, pending.pop(prompt).encode())
            if proc.poll() is not None and not ready:
                break
        code = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, shown.decode("utf-8", "replace")


def test_no_log_with_a_person_approving_at_the_terminal_runs_S3(
    replay: Replay, tmp_path: Path
) -> None:
    """In-process approval never pauses, so --no-log is fine at a terminal."""
    project = tmp_path / "proj"
    project.mkdir()
    code, shown = run_in_pty(
        ["run", "write it", "-m", f"replay:{replay(WRITE_SCRIPT)}", "-t", "write",
         "--project", str(project), "--no-log"],
        {"Allow it?": "y\n"},
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, shown
    assert (project / "out.txt").read_text() == "hello"
    assert "never be resumed" not in shown


def test_file_tools_without_project_say_where_they_work_S1(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("discounts are ignored\n")
    script = replay(["Action: read_file[notes.md]", "Action: finish[discounts]"])
    out = tao_cli("run", "why?", "-m", f"replay:{script}", "-t", "files", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"files confined to {tmp_path.resolve()}" in out.stderr
    assert json.loads(out.stdout)["steps"][0]["observation"].startswith("discounts")
    given = tao_cli(
        "run", "why?", "-m", f"replay:{script}", "-t", "files", "--project", str(tmp_path),
        "--json",
    )  # fmt: skip
    assert given.returncode == 0 and "confined" not in given.stderr
    calc = tao_cli("run", "x", "-m", f"replay:{replay(['Action: finish[1]'])}", "-t", "calc")
    assert "confined" not in calc.stderr  # no file tools, no note


def test_interrupted_no_log_run_does_not_suggest_a_resume_that_cannot_work_R2(
    replay: Replay, tmp_path: Path
) -> None:
    """SIGTERM while the person is doing an Action: an unrecorded run says it cannot be
    resumed instead of printing a `tao resume` that would fail."""
    script = replay(["Action: calculator[1 + 1]", "Action: finish[2]"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "tao", "run", "x", "-m", f"replay:{script}", "-t", "calc",
         "--human-tools", "--no-log", "--json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.stderr is not None
    seen = ""
    while "type the Observation" not in seen:  # the person is being asked: mid-run
        line = proc.stderr.readline()
        assert line, seen
        seen += line
    proc.terminate()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "tao resume" not in err and "cannot be resumed" in err
    assert json.loads(out)["status"] == "interrupted"
