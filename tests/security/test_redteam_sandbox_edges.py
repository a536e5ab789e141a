"""Red team, the sandbox's edges (SPEC S10, S11; issue 26 item 1): what a test file could
reach besides the files and variables the first round tried. Real bubblewrap, real pytest
children through the real ``run_tests`` tool, real open files and sockets in tao's process.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from tao.tools.tests import test_tools

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

SECRET = "edge-secret-4711"


def _run(project: Path, body: str) -> str:
    """Run a test file whose only test runs ``body`` and fails, so pytest shows its output."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    source = (
        f"import os, sys, glob, socket\ndef test_edge():\n{indented}\n    assert False, 'show'\n"
    )
    (project / "tests").mkdir(parents=True, exist_ok=True)
    (project / "tests" / "test_edge.py").write_text(source, encoding="utf-8")
    (run_tests,) = test_tools(project)
    return run_tests.invoke({"path": "tests/test_edge.py"})


def printed(output: str, prefix: str) -> list[str]:
    """Lines the test printed that start with ``prefix`` (pytest's listing of the failing
    test's source is indented, so it never matches)."""
    return [line for line in output.splitlines() if line.startswith(prefix)]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TAO_SANDBOX", raising=False)
    root = tmp_path / "proj"
    root.mkdir()
    return root


def test_no_open_file_of_tao_reaches_the_child_S10(project: Path, tmp_path: Path) -> None:
    """A run log or any file tao holds open, even one marked inheritable, is not among the
    child's descriptors: /proc/self/fd inside the sandbox lists only what pytest opened."""
    secret_file = tmp_path / "held.db"
    secret_file.write_text(f"run log {SECRET}", encoding="utf-8")
    held = os.open(secret_file, os.O_RDONLY)
    os.set_inheritable(held, True)
    try:
        output = _run(
            project,
            f"""
for fd in sorted(os.listdir('/proc/self/fd'), key=int):
    try:
        target = os.readlink('/proc/self/fd/' + fd)
        data = os.pread(int(fd), 200, 0).decode('utf-8', 'replace')
    except OSError:
        target, data = '?', ''
    print('FD', fd, target, data)
print('HELD', {held})
""",
        )
    finally:
        os.close(held)
    assert printed(output, "FD "), output
    assert SECRET not in output and str(secret_file) not in output, output


def test_abstract_unix_sockets_of_the_host_are_unreachable_S10(project: Path) -> None:
    """An abstract unix socket (no file, so no mount hides it) lives in the network
    namespace: tao's private one leaves the host's listener unreachable."""
    name = f"\0tao-edge-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(1)
    try:
        output = _run(
            project,
            f"""
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    client.connect({name!r})
    print('CONNECTED')
except OSError as error:
    print('REFUSED', error)
""",
        )
    finally:
        server.close()
    assert printed(output, "REFUSED") and not printed(output, "CONNECTED"), output


def test_shared_memory_and_tmp_do_not_carry_between_test_calls_S10(project: Path) -> None:
    """/dev/shm and /tmp are private to each call: what one test run leaves there (to be
    picked up by the next, or read from the host) is gone, and the host's are not seen."""
    host_shm = Path("/dev/shm") / f"tao-edge-{os.getpid()}"
    host_shm.write_text(SECRET, encoding="utf-8")
    try:
        write = """
for folder in ('/dev/shm', '/tmp'):
    try:
        open(folder + '/left-behind', 'w').write('planted')
        print('WROTE', folder)
    except OSError as error:
        print('NOWRITE', folder, error)
"""
        first = _run(project, write)
        read = f"""
for folder in ('/dev/shm', '/tmp'):
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        print('SEES', folder, name)
print('HOST', os.path.exists({str(host_shm)!r}))
"""
        second = _run(project, read)
    finally:
        host_shm.unlink()
    assert printed(first, "WROTE /tmp"), first
    seen = printed(second, "SEES")
    assert not [line for line in seen if "left-behind" in line or host_shm.name in line], seen
    assert printed(second, "HOST False"), second
    assert not (Path("/tmp") / "left-behind").exists()


def test_pytest_options_and_python_paths_from_taos_environment_do_not_reach_pytest_S10(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PYTEST_ADDOPTS with ``-p``, PYTEST_PLUGINS and PYTHONPATH toward a planted plugin in
    tao's environment (or a parent shell's) are not on the allow-list: the plugin never runs."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "evilplug.py").write_text("raise RuntimeError('evil plugin ran')\n")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p evilplug")
    monkeypatch.setenv("PYTEST_PLUGINS", "evilplug")
    monkeypatch.setenv("PYTHONPATH", str(plugins))
    output = _run(
        project, "print('ENV', sorted(k for k in os.environ if 'PYTEST' in k or 'PYTHON' in k))"
    )
    assert "evil plugin ran" not in output, output
    assert printed(output, "ENV"), output


def test_a_conftest_above_the_project_never_runs_S10(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest collects ``conftest.py`` files from the rootdir's parents: one planted in the
    folder above the project (another user's checkout, a shared /tmp) must not run."""
    monkeypatch.delenv("TAO_SANDBOX", raising=False)
    parent = tmp_path / "shared"
    project = parent / "proj"
    project.mkdir(parents=True)
    (parent / "conftest.py").write_text("raise RuntimeError('parent conftest ran')\n")
    (tmp_path / "conftest.py").write_text("raise RuntimeError('grandparent conftest ran')\n")
    output = _run(project, "print('RAN TEST')")
    assert "conftest ran" not in output, output
    assert printed(output, "RAN TEST"), output
