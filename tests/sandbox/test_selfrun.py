"""tao starting itself (the web page's resume, installs) keeps the user's files (issue 26, R1)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tao import Agent
from tao.sandbox.selfrun import empty_folder, loader_free_environment, remove_folder, tao_command


def test_a_relative_tao_home_means_the_same_run_log_in_the_child_R1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay: object
) -> None:
    """The child starts in an empty folder; with ``TAO_HOME=.tao`` as given it would open
    an empty log there and not find the run (the web page's Approve answered "no such
    run"). The child is a real ``tao runs list`` in an empty working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TAO_HOME", ".tao")
    monkeypatch.setenv("TAO_POLICY", "policies/p.toml")
    monkeypatch.delenv("TAO_DATABASE_URL", raising=False)
    script = replay(["Action: finish[done]"])  # type: ignore[operator]
    run_id = Agent(f"replay:{script}", []).run("x").run_id
    env = loader_free_environment()
    assert env["TAO_HOME"] == str(tmp_path / ".tao")
    assert env["TAO_POLICY"] == str(tmp_path / "policies" / "p.toml")
    folder = empty_folder()
    try:
        listed = subprocess.run(
            tao_command("runs", "list", "--json"),
            cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
    finally:
        remove_folder(folder)
    assert run_id in [run["run_id"] for run in json.loads(listed.stdout)]


def test_absolute_settings_and_other_variables_pass_unchanged() -> None:
    env = loader_free_environment({"TAO_HOME": "/srv/tao", "PYTHONPATH": "x", "KEEP": "y"})
    assert env == {"TAO_HOME": "/srv/tao", "KEEP": "y"}
