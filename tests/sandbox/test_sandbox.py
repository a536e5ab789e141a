"""tao.sandbox: the probe, the settings, and what a confined child sees (SPEC S10).

Real bubblewrap, real child processes, a real TCP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tao import sandbox as sandbox_package
from tao.errors import ConfigError
from tao.sandbox import Limits, Sandbox, availability, confine, probe, startup_notice
from tao.sandbox import command as command_module
from tao.state.config import RunConfig

from ..conftest import CliResult

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def run_in(
    script: str, sandbox: Sandbox, folder: Path, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    confined = confine(["sh", "-c", script], sandbox, cwd=folder, **kwargs)  # type: ignore[arg-type]
    return subprocess.run(
        confined.argv, env=confined.env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A machine without bubblewrap: nothing on the program search paths."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(command_module, "SYSTEM_BIN", str(empty))
    monkeypatch.setenv("PATH", str(empty))
    probe._probe.cache_clear()
    yield
    probe._probe.cache_clear()


@needs_bwrap
def test_the_probe_confines_a_real_child_where_bwrap_is_installed_S10(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TAO_SANDBOX", raising=False)
    found = availability()
    assert found == sandbox_package.Availability(available=True, reason=found.reason)


def test_tao_sandbox_off_and_a_mistyped_mode_are_unavailable_S10(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAO_SANDBOX", "off")
    assert availability() == sandbox_package.Availability(
        available=False, reason="the sandbox is turned off (TAO_SANDBOX=off)"
    )
    monkeypatch.setenv("TAO_SANDBOX", "sometimes")
    found = availability()
    assert not found.available and "choose auto, require or off" in found.reason
    with pytest.raises(ConfigError, match="sometimes"):
        sandbox_package.must_confine()


def test_without_bwrap_tao_says_so_and_require_refuses_S10(
    no_bwrap: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAO_SANDBOX", raising=False)
    found = availability()
    assert not found.available and "bwrap is not installed" in found.reason
    line = startup_notice(["run_tests"])
    assert line is not None and "no sandbox" in line and "approval" in line
    assert startup_notice([]) is None
    monkeypatch.setenv("TAO_SANDBOX", "require")
    with pytest.raises(sandbox_package.SandboxUnavailable, match="bwrap is not installed"):
        startup_notice(["run_tests"])
    with pytest.raises(sandbox_package.SandboxUnavailable):
        sandbox_package.must_confine()


def test_settings_refuse_what_makes_no_sense_S10() -> None:
    with pytest.raises(ValueError, match="variable name"):
        Sandbox(pass_env=("A=1",))
    with pytest.raises(ValueError, match="absolute"):
        Sandbox(writable=(Path("relative"),))
    with pytest.raises(ValueError, match="positive"):
        Limits(cpu_s=0)
    with pytest.raises(TypeError):
        Sandbox(True)  # type: ignore[misc]  # keyword-only


def test_run_config_records_names_only_and_rebuilds_them_S10() -> None:
    config = RunConfig(pass_env=("DATABASE_URL",), network=("mcp",))
    data = config.to_json()
    assert data["pass_env"] == ["DATABASE_URL"] and data["network"] == ["mcp"]
    assert RunConfig.from_json(data) == config
    with pytest.raises(ValueError, match="network"):
        RunConfig(network=("everything",))
    with pytest.raises(ValueError, match="pass_env"):
        RunConfig(pass_env=("X=secret",))


@needs_bwrap
def test_the_child_gets_only_the_allow_list_and_no_value_on_its_command_line_S10(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ORDINARY_NAME", "topsecret123")
    monkeypatch.setenv("PASSED_ON", "given-by-name")
    monkeypatch.setenv("LANG", "C.UTF-8")
    sandbox = Sandbox(pass_env=("PASSED_ON",))
    confined = confine(["env"], sandbox, cwd=tmp_path)
    assert "given-by-name" not in " ".join(confined.argv)
    done = subprocess.run(confined.argv, env=confined.env, capture_output=True, text=True)
    names = {line.split("=", 1)[0] for line in done.stdout.splitlines()}
    assert names <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "TMPDIR"} | {
        "PYTHONDONTWRITEBYTECODE", "PASSED_ON", "PWD",
    }  # fmt: skip
    assert "PASSED_ON=given-by-name" in done.stdout and "topsecret123" not in done.stdout


@needs_bwrap
def test_files_the_child_sees_and_may_write_S10(tmp_path: Path) -> None:
    project, out, elsewhere = tmp_path / "proj", tmp_path / "proj" / "out", tmp_path / "other"
    out.mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "note").write_text("host file")
    (project / "code.py").write_text("X = 1\n")
    if os.geteuid() == 0:  # the child is uid 65534: a writable folder must let it write
        out.chmod(0o777)
    script = (
        "cat code.py; echo home > $HOME/h && echo HOME-OK; echo t > /tmp/t && echo TMP-OK;"
        f"cat {elsewhere}/note || echo NO-OTHER; echo w > out/w && echo OUT-OK;"
        "echo x > code.py || echo PROJECT-RO; echo u > /usr/x || echo USR-RO;"
        "ls /proc | grep -c '^[0-9]'"
    )
    done = run_in(script, Sandbox(writable=(out,)), project)
    lines = done.stdout.split()
    assert lines[:4] == ["X", "=", "1", "HOME-OK"]
    assert {"TMP-OK", "NO-OTHER", "OUT-OK", "PROJECT-RO", "USR-RO"} <= set(lines)
    assert int(lines[-1]) <= 5  # its own PID namespace: bwrap, sh, ls, grep
    assert (out / "w").read_text() == "w\n"
    assert (project / "code.py").read_text() == "X = 1\n"
    assert not (tmp_path / "h").exists()


@needs_bwrap
def test_no_network_unless_asked_S10(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[int] = []

    def accept() -> None:
        listener.settimeout(30)
        try:
            while True:
                conn, _ = listener.accept()
                accepted.append(1)
                conn.close()
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    probe_script = (
        'python3 -c "import socket,sys\n'
        f"try:\n socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')\n"
        "except OSError as e: print('REFUSED', e)\""
    )
    try:
        closed = run_in(probe_script, Sandbox(), tmp_path)
        assert "REFUSED" in closed.stdout and accepted == []
        opened = run_in(probe_script, Sandbox(network=True), tmp_path)
        assert "CONNECTED" in opened.stdout
    finally:
        listener.close()


@needs_bwrap
def test_limits_are_set_in_the_child_S10(tmp_path: Path) -> None:
    limits = Limits(cpu_s=7, memory_bytes=300 * 1024**2, file_bytes=5 * 1024**2)
    done = run_in("cat /proc/self/limits", Sandbox(limits=limits), tmp_path)
    rows = {line[:26].strip(): line[26:].split() for line in done.stdout.splitlines()[1:]}
    assert rows["Max cpu time"][:2] == ["7", "9"]  # soft, then hard: SIGXCPU first
    assert rows["Max address space"][0] == str(300 * 1024**2)
    assert rows["Max file size"][0] == str(5 * 1024**2)
    assert rows["Max core file size"][0] == "0"


def test_cli_says_so_when_tests_would_run_unconfined_S10(
    tao_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """``--sandbox off``: one line on stderr before the run; ``--json`` stays one object."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_ok():\n    pass\n")
    replies = tmp_path / "r.json"
    replies.write_text(json.dumps(["Thought: done.\nAction: finish[ok]"]))
    args = ["run", "hi", "-m", f"replay:{replies}", "-t", "tests", "--project", str(tmp_path)]
    out = tao_cli(*args, "--sandbox", "off", "--json", "--no-input")
    assert out.returncode == 0, out.stderr
    (line,) = [line for line in out.stderr.splitlines() if "no sandbox" in line]
    assert "TAO_SANDBOX=off" in line and "approval" in line
    assert out.json()["answer"] == "ok"
    confined = tao_cli(*args, "--json", "--no-input", env={"TAO_SANDBOX": "auto"})
    assert confined.returncode == 0 and "no sandbox" not in confined.stderr
    bad = tao_cli(*args, "--pass-env", "A=1", "--json")
    assert bad.returncode == 2 and "not a variable name" in bad.stderr
