"""Red team, the sandbox around child processes (SPEC S10, S11; issue 26 item 1, 2).

Each case is a test file (or a project configuration) an attacker, or a model, placed
in the project, run through the real ``run_tests`` tool: real bubblewrap, real pytest
children, a real TCP server on 127.0.0.1, a fake HOME with fake keys. The test files
print what they managed to read or do; the host then checks the world it sees.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from tao.errors import ToolError
from tao.sandbox import Limits, Sandbox, availability
from tao.sandbox import probe as sandbox_probe
from tao.tools.tests import test_tools

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

SECRET = "topsecret123"
KEY_TEXT = "-----BEGIN OPENSSH PRIVATE KEY----- fakekeymaterial"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A fake user: HOME with keys, TAO_HOME with a run log, a secret in tao's environment."""
    home, tao_home, project = tmp_path / "home", tmp_path / "taohome", tmp_path / "proj"
    for folder in (home / ".ssh", home / ".aws", tao_home, project / "tests"):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY_TEXT)
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {SECRET}")
    (home / ".netrc").write_text(f"machine example.com login u password {SECRET}")
    (tao_home / "tao.db").write_text(f"run log {SECRET}")
    (project / "helper.py").write_text("VALUE = 42\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TAO_HOME", str(tao_home))
    monkeypatch.setenv("MY_ORDINARY_NAME", SECRET)
    monkeypatch.delenv("TAO_SANDBOX", raising=False)
    return {"home": home, "tao_home": tao_home, "project": project, "tmp": tmp_path}


def run_attack(project: Path, source: str, sandbox: Sandbox | None = None, **kw: float) -> str:
    (project / "tests" / "test_attack.py").write_text(source)
    (run_tests,) = test_tools(project, sandbox=sandbox, **kw)
    return run_tests.invoke({"path": "tests/test_attack.py"})


def printed(output: str, prefix: str) -> list[str]:
    """Lines the test printed that start with ``prefix`` (pytest's source listing of the
    failing test is indented or starts with ``>``, so it never matches)."""
    return [line for line in output.splitlines() if line.startswith(prefix)]


def show(body: str) -> str:
    """A test file whose only test runs ``body`` and fails so pytest shows what it printed."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    head = "import os, sys, glob, socket, subprocess\ndef test_attack():\n"
    return f"{head}{indented}\n    assert False, 'show'\n"


def test_the_child_cannot_read_taos_environment_by_any_means_S10(world: dict[str, Path]) -> None:
    """os.environ, /proc/self, /proc/1, /proc/<parent>, /proc/<tao's host pid>, every /proc/*."""
    body = f"""
print('ENV', dict(os.environ))
for path in ['/proc/self/environ', '/proc/1/environ', f'/proc/{{os.getppid()}}/environ',
             '/proc/{os.getpid()}/environ', *glob.glob('/proc/*/environ'),
             *glob.glob('/proc/*/task/*/environ'), *glob.glob('/proc/*/cmdline')]:
    try:
        print('READ', path, open(path, 'rb').read())
    except OSError as error:
        print('NO', path, error)
print('PIDS', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
"""
    output = run_attack(world["project"], show(body))
    assert printed(output, "READ /proc/self/environ")  # it did read: the file holds no secret
    assert SECRET not in output
    pids = eval(next(line for line in output.splitlines() if line.startswith("PIDS"))[5:])
    assert len(pids) <= 4 and os.getpid() not in pids  # its own PID namespace


def test_writes_outside_the_project_and_inside_it_never_land_S10(world: dict[str, Path]) -> None:
    project, home, tao_home, tmp = world["project"], world["home"], world["tao_home"], world["tmp"]
    targets = [home / "x", home / ".ssh" / "authorized_keys", tao_home / "policy.toml",
               tmp / "outside.txt", Path("/tmp") / f"tao-escape-{os.getpid()}",
               project / "written.txt", project / "tests" / "conftest.py"]  # fmt: skip
    body = f"""
import shutil
for target in {[str(t) for t in targets]!r}:
    for how in ('open', 'link', 'copy'):
        try:
            if how == 'open':
                open(target, 'w').write('pwned')
            elif how == 'link':
                os.symlink('/etc/passwd', target)
            else:
                shutil.copy('/etc/hostname', target)
            print('WROTE?', how, target)
        except OSError as error:
            print('NO', how, target, error)
"""
    run_attack(world["project"], show(body))
    for target in targets:
        assert not os.path.lexists(target), target
    assert (world["project"] / "tests" / "test_attack.py").exists()


def test_writes_land_only_in_the_writable_folders_given_S10(world: dict[str, Path]) -> None:
    out = world["project"] / "out"
    out.mkdir()
    if os.geteuid() == 0:  # the child is uid 65534: a writable folder must let it write
        out.chmod(0o777)
    body = "open('out/ok.txt', 'w').write('fine')\nopen('nope.txt', 'w').write('x')"
    output = run_attack(world["project"], show(body), Sandbox(writable=(out,)))
    assert (out / "ok.txt").read_text() == "fine"
    assert "Read-only file system" in output and not (world["project"] / "nope.txt").exists()


@pytest.mark.parametrize(
    "where", ["home", "inside-home", "symlink"], ids=["project-is-home", "under-home", "link"]
)
def test_home_secrets_and_the_run_log_stay_unreadable_S10(
    world: dict[str, Path], where: str
) -> None:
    """The project may be HOME itself, live under it, or hold a link to a key: the keys,
    the AWS file, .netrc and TAO_HOME's run log are never readable."""
    home, tao_home = world["home"], world["tao_home"]
    project = {"home": home, "inside-home": home / "code", "symlink": world["project"]}[where]
    (project / "tests").mkdir(parents=True, exist_ok=True)
    if where == "symlink":
        (project / "key").symlink_to(home / ".ssh" / "id_rsa")
    candidates = [home / ".ssh" / "id_rsa", home / ".aws" / "credentials", home / ".netrc",
                  tao_home / "tao.db", project / "key", Path("/etc/shadow")]  # fmt: skip
    body = f"""
for path in {[str(c) for c in candidates]!r}:
    try:
        print('READ', path, open(path).read())
    except OSError as error:
        print('NO', path, error)
for found in glob.glob(os.path.expanduser('~') + '/**', recursive=True):
    print('SEEN', found)
"""
    output = run_attack(project, show(body))
    assert printed(output, "NO ")
    assert SECRET not in output and "fakekeymaterial" not in output


def test_no_network_even_to_a_server_on_loopback_S10(world: dict[str, Path]) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[bool] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(True)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    body = f"""
for host in ['127.0.0.1', 'localhost', '::1', '0.0.0.0']:
    try:
        socket.create_connection((host, {port}), timeout=3)
        print('CONNECTED', host)
    except OSError as error:
        print('NO', host, error)
"""
    try:
        output = run_attack(world["project"], show(body))
        assert printed(output, "CONNECTED") == [] and accepted == []
        assert len(printed(output, "NO ")) == 4
        allowed = run_attack(world["project"], show(body), Sandbox(network=True))
        assert "CONNECTED 127.0.0.1" in printed(allowed, "CONNECTED") and accepted
    finally:
        listener.close()


def test_runaway_memory_cpu_and_file_size_are_bounded_S10(world: dict[str, Path]) -> None:
    # Each case gets its own limit; the CPU cap stays off the memory and file cases, since
    # pytest's own start-up costs about a CPU second here and more on a slower machine.
    limits = Limits(memory_bytes=400 * 1024**2, file_bytes=8 * 1024**2, cpu_s=60)
    memory = "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))"
    output = run_attack(world["project"], show(memory), Sandbox(limits=limits))
    assert "MemoryError" in output
    huge = "with open('/tmp/big', 'wb') as f:\n    f.write(b'x' * (64 * 1024 * 1024))"
    output = run_attack(world["project"], show(huge), Sandbox(limits=limits))
    assert "File too large" in output
    spin = "while True:\n    pass"
    started = time.monotonic()
    busy = Limits(cpu_s=5)
    output = run_attack(world["project"], show(spin), Sandbox(limits=busy), timeout_s=90)
    assert time.monotonic() - started < 45  # the CPU limit, not the 90 s timeout, ended it
    assert "CPU-time limit" in output.splitlines()[-1]


def _running_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("how", ["daemon", "setsid-double-fork", "fork-bomb"])
def test_nothing_the_child_starts_outlives_the_tool_call_S10(
    world: dict[str, Path], how: str
) -> None:
    """Grandchildren left running (a plain one, one that escaped into its own session, a
    fork bomb) are gone when run_tests returns, and the bomb is refused by the task limit,
    under root too: tao's child then runs as uid 65534, which the kernel does limit."""
    token = f"tao-stray-{how}-{time.monotonic_ns()}"
    sleeper = f"[sys.executable, '-c', 'import time; time.sleep(120)', {token!r}]"
    body = {
        "daemon": f"subprocess.Popen({sleeper})",
        "setsid-double-fork": f"subprocess.Popen(['setsid', 'sh', '-c', 'sleep 120 {token} &'])",
        "fork-bomb": f"""
made = 0
for _ in range(400):
    try:
        subprocess.Popen({sleeper})
        made += 1
    except OSError as error:
        print('FORK REFUSED after', made, error)
        break
print('MADE', made)""",
    }[how]
    limits = Limits(processes=64)
    output = run_attack(world["project"], show(body), Sandbox(limits=limits), timeout_s=10)
    if how == "fork-bomb":
        refused = printed(output, "FORK REFUSED after")
        assert refused and int(refused[0].split()[3]) < 400, output[-3000:]
        assert "run_tests: note:" not in output  # the uid was dropped, nothing weakened
    deadline = time.monotonic() + 5
    while _running_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running_with(token) == []


@pytest.mark.parametrize(
    "shadow",
    [
        {"pytest.py": "print('SHADOWED'); raise SystemExit(0)"},
        {"_pytest/__init__.py": "print('SHADOWED'); raise SystemExit(0)"},
        {"pluggy.py": "print('SHADOWED')"},
        {"tests/pytest.py": "print('SHADOWED'); raise SystemExit(0)"},
    ],
    ids=["pytest.py", "_pytest-package", "pluggy.py", "pytest.py-beside-the-test"],
)
def test_a_project_module_cannot_stand_in_for_pytest_S10(
    world: dict[str, Path], shadow: dict[str, str]
) -> None:
    """The real pytest runs, and the project's own modules still import."""
    project = world["project"]
    for name, text in shadow.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    source = "import helper\ndef test_uses_project_code():\n    assert helper.VALUE == 42\n"
    output = run_attack(project, source)
    assert "SHADOWED" not in output
    assert "1 passed" in output and output.endswith("exited with code 0: all tests passed]")


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "--junitxml=/tmp/outside.xml"'),
        ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = ["--junit-xml", "~/r.xml"]'),
        ("pytest.ini", "[pytest]\naddopts = -q -p evil_plugin"),
        ("pytest.ini", "[pytest]\naddopts = -qpevil_plugin"),
        ("tox.ini", "[pytest]\naddopts = --basetemp=../escape"),
        ("setup.cfg", "[tool:pytest]\naddopts = -o cache_dir=/tmp/cache"),
        ("setup.cfg", "[tool:pytest]\ncache_dir = ../../cache"),
        ("tests/pytest.ini", "[pytest]\naddopts = --log-file /var/tmp/log --debug=/tmp/d.log"),
        ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "--override-ini=log_file=/x"'),
        ("pytest.ini", "[pytest]\naddopts = --pdbcls=evil:Debugger"),
    ],
)
def test_project_options_that_write_outside_or_load_plugins_are_refused_S10(
    world: dict[str, Path], file: str, text: str
) -> None:
    project = world["project"]
    (project / file).write_text(text)
    with pytest.raises(ToolError, match="run_tests refuses an option in"):
        run_attack(project, "def test_ok():\n    pass\n")
    assert not Path("/tmp/outside.xml").exists() and not (world["tmp"] / "escape").exists()


def test_options_inside_the_project_are_accepted_S10(world: dict[str, Path]) -> None:
    project = world["project"]
    (project / "pytest.ini").write_text("[pytest]\naddopts = -p no:warnings -k ok -o cache_dir=.c")
    output = run_attack(project, "def test_ok():\n    pass\n")
    assert "1 passed" in output


def test_no_escape_by_privilege_inside_the_sandbox_S10(world: dict[str, Path]) -> None:
    """Capabilities are dropped and new user namespaces refused: no remount, no unshare."""
    body = """
for command in (['mount', '-o', 'remount,rw,bind', os.getcwd()], ['unshare', '-Ur', 'true'],
                ['mount', '-t', 'tmpfs', 'x', '/usr']):
    print('RAN', command, subprocess.run(command, capture_output=True).returncode)
open('escaped.txt', 'w').write('x')
"""
    output = run_attack(world["project"], show(body))
    ran = printed(output, "RAN ")
    assert len(ran) == 3 and all(line.split()[-1] != "0" for line in ran), ran
    assert not (world["project"] / "escaped.txt").exists()


def test_forced_off_tao_says_so_and_the_gate_sees_it_S10(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TAO_SANDBOX=off``: the probe says unavailable (so the approval gate asks), and the
    child still gets the allow-list environment, never tao's own."""
    monkeypatch.setenv("TAO_SANDBOX", "off")
    assert availability().available is False
    output = run_attack(world["project"], show("print('ENV', dict(os.environ))"))
    assert SECRET not in output and printed(output, "ENV {")


def test_require_without_a_sandbox_refuses_to_run_tests_S10(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tao.sandbox import command as command_module

    empty = world["tmp"] / "no-bin"
    empty.mkdir()
    monkeypatch.setattr(command_module, "SYSTEM_BIN", str(empty))
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("TAO_SANDBOX", "require")
    sandbox_probe._probe.cache_clear()
    try:
        with pytest.raises(ToolError, match=r"pytest was not started.*bwrap is not installed"):
            run_attack(world["project"], "def test_ok():\n    pass\n")
    finally:
        sandbox_probe._probe.cache_clear()


def _later_run_world(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A writable project holding what runs later outside the sandbox: a git folder with
    hooks, a worktree's `.git` file, a nested Mercurial checkout, a virtual environment,
    and tao's own import path inside the project (tao installed in `./.venv`)."""
    project = world["project"]
    for folder in (".git/hooks", "vendor/lib/.hg", "env/lib/site-packages", "out", "evil"):
        (project / folder).mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    (project / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "wt").mkdir()
    (project / "wt" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    site = project / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))  # as if tao ran from a venv in the project
    for root, _folders, _files in os.walk(project):
        Path(root).chmod(0o777)  # under root the child is uid 65534 (see test_writable.py)
    return project


LATER_RUN = [".git/hooks/pre-commit", ".git/config", "wt/.git", "vendor/lib/.hg/hgrc",
             "env/lib/site-packages/evil.pth", "env/bin-activate", "site/evil.pth"]  # fmt: skip


def test_what_runs_later_outside_the_sandbox_stays_read_only_in_a_writable_project_S10(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy that pre-approves writes to the whole project opens it to the tests; a test
    must still not plant a git hook, `core.fsmonitor`, a worktree redirect, an hg hook or a
    `.pth` in a virtual environment or in tao's own import path: each runs later with the
    person's authority. Writing, replacing (rename over, delete, symlink) all fail; the
    project's own files stay writable."""
    project = _later_run_world(world, monkeypatch)
    body = f"""
import shutil
for target in {LATER_RUN!r}:
    try:
        open(target, 'w').write('pwned'); print('WROTE', target)
    except OSError as error:
        print('NO', target, error)
for folder in ['.git', 'env', 'vendor/lib/.hg', 'site']:
    for how in ('rename', 'rmtree', 'symlink'):
        try:
            if how == 'rename':
                os.rename('evil', folder)
            elif how == 'rmtree':
                shutil.rmtree(folder)
            else:
                os.rename(folder, folder + '.old'); os.symlink('evil', folder)
            print('REPLACED', how, folder)
        except OSError as error:
            print('NO', how, folder, error)
open('out/ok.txt', 'w').write('fine')
"""
    output = run_attack(project, show(body), Sandbox(writable=(project,)))
    assert printed(output, "WROTE") == [] and printed(output, "REPLACED") == [], output
    assert len(printed(output, "NO ")) == len(LATER_RUN) + 12
    for target in LATER_RUN:
        assert not (project / target).exists() or "pwned" not in (project / target).read_text()
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert (project / "out" / "ok.txt").read_text() == "fine"


def test_a_writable_folder_too_big_to_search_is_read_only_S10(tmp_path: Path) -> None:
    """Past its bound the search cannot say what is inside: the whole folder stays read-only."""
    from tao.sandbox.protected import later_run

    for index in range(10):
        (tmp_path / f"d{index}").mkdir()
    (tmp_path / "d3" / ".git").mkdir()
    assert later_run(tmp_path, max_entries=5) == [tmp_path]
    assert later_run(tmp_path) == [tmp_path / "d3" / ".git"]


PLANTED = {
    ".git/config": "[core]\n\tfsmonitor = touch /tmp/pwned\n",
    "sub/.git": "gitdir: ../evil\n",
    "deep/er/.hg/hgrc": "[hooks]\nprecommit = touch /tmp/pwned\n",
    "jj/.jj/repo": "x",
    "svn/.svn/wc.db": "x",
    "bzr/.bzr/branch.conf": "x",
    "venv/pyvenv.cfg": "home = /usr/bin\n",
    "venv/lib/site-packages/evil.pth": "import os\n",
}


def test_metadata_a_test_creates_where_there_was_none_is_removed_after_it_S10(
    world: dict[str, Path],
) -> None:
    """A writable project with no `.git` of its own: a test creates one (or `.hg`, `.jj`,
    `.svn`, `.bzr`, a `.git` file redirecting elsewhere, a virtual environment) with a
    `core.fsmonitor` or a hook, which the person's next `git status` (a shell prompt runs
    one) would execute unconfined. What did not exist before the call is removed after it,
    and the observation says so; the project's own new files stay."""
    project = world["project"]
    for root, _folders, _files in os.walk(project):
        Path(root).chmod(0o777)
    body = f"""
for name, text in {PLANTED!r}.items():
    os.makedirs(os.path.dirname(name), exist_ok=True)
    open(name, 'w').write(text)
os.makedirs('evil', exist_ok=True)
os.makedirs('sub3', exist_ok=True); os.symlink('../evil', 'sub3/.git')
open('kept.txt', 'w').write('fine')
print('PLANTED', len(os.listdir('.')))
"""
    output = run_attack(project, show(body), Sandbox(writable=(project,)))
    assert printed(output, "PLANTED"), output
    for name in PLANTED:  # a venv without its pyvenv.cfg is inert: no Python reads its .pth
        assert name.endswith(".pth") or not (project / name).exists(), (name, output)
    assert not os.path.lexists(project / "sub3" / ".git")
    for top in (".git", "deep/er/.hg", "jj/.jj", "svn/.svn", "bzr/.bzr"):
        assert not os.path.lexists(project / top), top
    assert (project / "kept.txt").read_text() == "fine"
    assert (project / "deep" / "er").is_dir()  # only the metadata goes, not its folder
    assert (project / "evil").is_dir()  # a link's target is not the link
    assert "removed" in output and ".git" in output, output


def test_a_marker_dropped_in_a_source_folder_costs_that_folder_nothing_S10(
    world: dict[str, Path],
) -> None:
    """The undo must not become a way to delete the person's files: a `pyvenv.cfg` dropped
    into `src/` removes the marker only, and a `.git` symlink to `src` removes the link."""
    project = world["project"]
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print('mine')\n")
    for root, _folders, _files in os.walk(project):
        Path(root).chmod(0o777)
    body = "open('src/pyvenv.cfg', 'w').write('home = /usr/bin')\nos.symlink('src', '.git')"
    output = run_attack(project, show(body), Sandbox(writable=(project,)))
    assert (project / "src" / "main.py").read_text() == "print('mine')\n", output
    assert not (project / "src" / "pyvenv.cfg").exists() and not os.path.lexists(project / ".git")


def test_a_git_symlink_already_there_protects_its_target_S10(world: dict[str, Path]) -> None:
    """A `.git` that is a symlink to a folder inside the writable project (git follows it):
    its target is as read-only as a real `.git` folder, so no hook or fsmonitor lands."""
    project = world["project"]
    (project / "gitdir" / "hooks").mkdir(parents=True)
    (project / "gitdir" / "config").write_text("[core]\n")
    (project / ".git").symlink_to("gitdir")
    for root, _folders, _files in os.walk(project):
        Path(root).chmod(0o777)
    body = """
for target in ['gitdir/config', 'gitdir/hooks/pre-commit', '.git/config']:
    try:
        open(target, 'w').write('[core]\\n\\tfsmonitor = touch /tmp/pwned\\n')
        print('WROTE', target)
    except OSError as error:
        print('NO', target, error)
"""
    output = run_attack(project, show(body), Sandbox(writable=(project,)))
    assert printed(output, "WROTE") == [] and len(printed(output, "NO ")) == 3, output
    assert (project / "gitdir" / "config").read_text() == "[core]\n"


POISON = """
import importlib.util, marshal
def poison(source, compiled, text):
    info = os.stat(source)
    mtime = (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, 'little')
    header = importlib.util.MAGIC_NUMBER + bytes(4) + mtime
    code = marshal.dumps(compile(text, source, 'exec'))
    os.makedirs(os.path.dirname(compiled) or '.', exist_ok=True)
    open(compiled, 'wb').write(header + (info.st_size & 0xFFFFFFFF).to_bytes(4, 'little') + code)
tag = sys.implementation.cache_tag
poison('helper.py', f'__pycache__/helper.{tag}.pyc', "VALUE = 'POISONED'\\n")
poison('lib/util.py', f'lib/__pycache__/util.{tag}.pyc', "VALUE = 'POISONED'\\n")
poison('helper.py', 'sourceless.pyc', "VALUE = 'POISONED'\\n")
print('POISONED')
"""


def test_compiled_python_a_test_writes_is_removed_after_it_S10(world: dict[str, Path]) -> None:
    """A test in a writable project writes `__pycache__/helper.cpython-311.pyc` whose header
    matches `helper.py`'s mtime and size (Python then runs it instead of the source, and
    `git diff` never shows it), overwrites a `.pyc` the project already had, or drops a
    sourceless `.pyc`: the person's next `python` would run the code unconfined. Every
    `.pyc` made or changed by the tests is removed after the call; Python recompiles."""
    import subprocess
    import sys

    project = world["project"]
    (project / "lib").mkdir()
    (project / "lib" / "__init__.py").write_text("")
    (project / "lib" / "util.py").write_text("VALUE = 1\n")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(project / "lib")], check=True)
    for root, _folders, _files in os.walk(project):
        Path(root).chmod(0o777)
        for name in _files:
            (Path(root) / name).chmod(0o666)
    output = run_attack(project, show(POISON.strip()), Sandbox(writable=(project,)))
    assert printed(output, "POISONED"), output
    code = "import helper, lib.util; print(helper.VALUE, lib.util.VALUE)"
    code += "\ntry:\n import sourceless; print('SOURCELESS')\nexcept ImportError: pass"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    seen = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, env=env
    )
    assert seen.stdout.split() == ["42", "1"], (seen.stdout, seen.stderr, output)
    assert "removed" in output and ".pyc" in output, output


@pytest.mark.parametrize(
    ("config", "name", "text"),
    [
        ("pytest.ini", "docs/readme.md", "[pytest]\naddopts = docs --doctest-glob=*.md\n"),
        ("tox.ini", "notes/test_notes.txt", "[pytest]\naddopts = -q notes\n"),
        ("pyproject.toml", "docs/guide.rst",
         '[tool.pytest.ini_options]\naddopts = ["--doctest-glob", "*.rst", "docs"]\n'),
        ("setup.cfg", "tests/test_data.txt", "[tool:pytest]\naddopts = tests\n"),
    ],
)  # fmt: skip
def test_a_configuration_cannot_make_data_files_run_as_tests_S11(
    world: dict[str, Path], config: str, name: str, text: str
) -> None:
    """The code fingerprint covers code, not data: a `.md`, `.rst` or `test*.txt` file the
    model may write without asking changes nothing the gate sees. A configuration that adds
    a folder to collect and a doctest glob (or relies on pytest's default `test*.txt`)
    would run the doctests in those data files at every `run_tests`, unasked. Only the
    named test file's tests run; the rest are deselected before anything executes."""
    project = world["project"]
    (project / config).write_text(text)
    (project / name).parent.mkdir(parents=True, exist_ok=True)
    (project / name).write_text('>>> print("DOCTEST" + " RAN")\nnothing\n')
    output = run_attack(project, "def test_ok():\n    pass\n")
    # the doctest expects "nothing": had it run, it would have failed the call
    assert "DOCTEST RAN" not in output and "exited with code 0" in output, output
