"""Red team, who can read what tao keeps (SPEC M3, S8; issue 26 item 6).

The run log holds tasks, answers, approvals and (in ``private/``) the unredacted
content of pending calls. Another user on the machine is the attacker: every
folder tao makes under ``$TAO_HOME`` must be 0700 and every file 0600, whatever
the umask, and a ``$TAO_HOME`` an older tao left readable is tightened. The real
``tao`` runs in a child process under ``umask 000``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tao.eval.record import QuestionRecord
from tao.eval.results import ResultsFile

Replay = Callable[[list[str]], Path]

SECRET_WRITE = [
    'Action: write_file(path="conf.txt", '
    'content="API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD")',
    "Action: finish[done]",
]


def tao(home: Path, *args: str, cwd: Path, umask: int = 0) -> subprocess.CompletedProcess[str]:
    """``tao ARGS`` as a user whose umask lets everyone read everything by default."""
    env = {**os.environ, "TAO_HOME": str(home), "COLUMNS": "120"}
    env.pop("TAO_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "tao", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        preexec_fn=lambda: os.umask(umask),
    )


def modes(home: Path) -> dict[str, int]:
    """Every folder and file under ``home`` (itself included) with its permission bits."""
    found = {".": stat.S_IMODE(home.stat().st_mode)}
    for path in home.rglob("*"):
        found[str(path.relative_to(home))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def assert_owner_only(home: Path) -> None:
    for name, mode in modes(home).items():
        path = home / name
        want = 0o700 if path.is_dir() else 0o600
        assert mode & 0o077 == 0, f"{name}: mode {mode:o}, others can read it"
        assert mode & want == want, f"{name}: mode {mode:o}, the owner lost access"


def paused_run(home: Path, replay: Replay, project: Path) -> str:
    out = tao(
        home, "run", "x", "-m", f"replay:{replay(SECRET_WRITE)}", "-t", "write",
        "--project", str(project), "--no-input", "--json", cwd=project,
    )  # fmt: skip
    assert out.returncode == 4, out.stderr  # awaiting approval: checkpoint with a secret
    return str(json.loads(out.stdout)["run_id"])


def test_a_new_tao_home_and_everything_in_it_is_owner_only_under_umask_000_M3(
    tmp_path: Path, replay: Replay
) -> None:
    home, project = tmp_path / "deep" / "home", tmp_path / "project"
    project.mkdir()
    run_id = paused_run(home, replay, project)
    listed = tao(home, "runs", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    names = set(modes(home))
    assert "tao.db" in names
    assert any(name.startswith("private/") for name in names), names  # the secret's copy
    assert_owner_only(home)
    export = tmp_path / "run.jsonl"
    out = tao(home, "runs", "export", run_id, "-o", str(export), cwd=project)
    assert out.returncode == 0, out.stderr
    assert stat.S_IMODE(export.stat().st_mode) == 0o600


def test_an_existing_readable_tao_home_is_tightened_and_said_M3(
    tmp_path: Path, replay: Replay
) -> None:
    """As an older tao left it: 0755 folders, a 0644 log with its -wal and -shm."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    paused_run(home, replay, project)
    home.chmod(0o755)
    (home / "private").chmod(0o755)
    for path in home.rglob("*"):
        if path.is_file():
            path.chmod(0o644)
    for suffix in ("-wal", "-shm"):  # as SQLite would leave them for a 0644 log
        extra = home / f"tao.db{suffix}"
        if not extra.exists():
            extra.write_bytes(b"")
        extra.chmod(0o644)
    out = tao(home, "runs", "list", cwd=project)
    assert out.returncode == 0, out.stderr
    assert "owner-only" in out.stderr and str(home) in out.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "tao.db").stat().st_mode) == 0o600
    for name in ("tao.db-wal", "tao.db-shm"):  # SQLite removes them when the last one closes
        if (home / name).exists():
            assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    paused_run(home, replay, project)  # writing a private copy again tightens its folder
    assert_owner_only(home)


def test_eval_results_are_owner_only_M3(tmp_path: Path, tao_home: Path) -> None:
    record = QuestionRecord(
        index=0, id="q0", question="Who?", gold="Ed", answer="Ed", em=1.0, f1=1.0,
        strategy="react", benchmark="hotpotqa", model="replay",
    )  # fmt: skip
    old = os.umask(0)
    try:
        results = ResultsFile.for_settings({"benchmark": "hotpotqa", "strategy": "react"})
        results.append(record)
    finally:
        os.umask(old)
    assert results.path.parent == tao_home / "evals"
    assert results.load()[0].answer == "Ed"
    assert_owner_only(tao_home)
    assert {"evals", f"evals/{results.path.name}"} <= set(modes(tao_home))
