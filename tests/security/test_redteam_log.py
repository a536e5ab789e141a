"""Secrets never reach the run log or what is shown, and redaction never changes what a
tool does (SPEC S8; issue 12, class "redaction")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Replay = Callable[[list[str]], Path]

SECRETS = {
    "labelled": 'password = "hunter2-Zq9"',
    "aws": "aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "stripe": "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "json": '{"db_password": "Tr0ub4dor&3"}',
}
NEEDLES = ["hunter2-Zq9", "wJalrXUtnFEMI", "4eC39HqLyjWDarjtT1zdp7dc", "Tr0ub4dor"]


def _log_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.glob("tao.db*"))


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_secrets_in_task_thought_and_answer_are_not_stored_or_shown_S8(
    kind: str, tao_cli: Any, tao_home: Path, replay: Replay
) -> None:
    secret = SECRETS[kind]
    script = replay([f"Thought: the note says {secret}\nAction: calculator[1+1]",
                     f"Action: finish[it was {secret}]"])  # fmt: skip
    out = tao_cli("run", f"remember {secret}", "--model", f"replay:{script}", "--json")
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run_id"]
    shown = [out.stdout, tao_cli("runs", "show", run_id).stdout,
             tao_cli("runs", "show", run_id, "--json").stdout,
             tao_cli("runs", "export", run_id).stdout,
             tao_cli("runs", "export", run_id, "--full").stdout]  # fmt: skip
    stored = _log_bytes(tao_home)
    for needle in NEEDLES:
        assert needle.encode() not in stored, f"{needle} is in the run log"
        for text in shown:
            assert needle not in text
    assert "[REDACTED]" in out.stdout


def test_credentials_in_the_base_url_are_not_stored_S8(
    tao_cli: Any, tao_home: Path, replay: Replay
) -> None:
    url = "http://alice:s3cretpw@127.0.0.1:9/v1"
    out = tao_cli("run", "x", "--model", "openai:m", "--base-url", url, "--json")
    assert b"s3cretpw" not in _log_bytes(tao_home)
    assert "s3cretpw" not in out.stdout + out.stderr


def test_an_approved_write_writes_the_real_content_while_the_log_never_holds_it_S8(
    tao_cli: Any, tao_home: Path, replay: Replay, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    content = "API_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc\n"
    script = replay([f"Action: write_file(path={'settings.txt'!r}, content={content!r})",
                     "Action: finish[written]"])  # fmt: skip
    args = ["--model", f"replay:{script}", "--tools", "write", "--project", str(project)]
    paused = tao_cli("run", "write it", *args, "--no-input", "--json")
    assert paused.returncode == 4, paused.stderr
    run_id = json.loads(paused.stdout)["run_id"]
    assert b"4eC39HqLyjWDarjtT1zdp7dc" not in _log_bytes(tao_home)
    assert "4eC39HqLyjWDarjtT1zdp7dc" not in paused.stdout
    private = list((tao_home / "private").glob("*.json"))
    assert private and all(p.stat().st_mode & 0o077 == 0 for p in private)  # owner only
    approved = tao_cli("runs", "approve", run_id)  # it lists what it approved: redacted
    assert approved.returncode == 0, approved.stderr
    assert "write_file" in approved.stdout and "[REDACTED]" in approved.stdout
    assert "4eC39HqLyjWDarjtT1zdp7dc" not in approved.stdout + approved.stderr
    resumed = tao_cli("resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert (project / "settings.txt").read_text() == content  # the real content, unredacted
    assert b"4eC39HqLyjWDarjtT1zdp7dc" not in _log_bytes(tao_home)
