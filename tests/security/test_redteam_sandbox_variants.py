"""Red team, sandbox attack variants (SPEC S10, S11; issue 26 items 1, 2, 7).

Each case runs a real tao process (a small driver calling the real ``run_tests``) that
starts real bubblewrap and real pytest on a test file the attacker wrote. Every case
runs twice: as tao is invoked here (root on CI: the child becomes uid 65534), and as an
ordinary user (tao inside a user namespace of its own, uid 1000: the unprivileged
bubblewrap path, where the test shares its uid with bubblewrap's init).

Classes: ptrace and memory reads of tao, of the sandbox's init and of siblings; a
sandbox whose init no longer dies with its parent; writable folders swapped for links
between two calls and links inside a writable folder; ``.pth``/``sitecustomize`` where
the child or the person's Python would load them; compiled Python planted for a
module the fingerprint saw as source; ``/proc/sys`` and variables of tao's environment.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tao.errors import ToolError
from tao.sandbox.children import children_of, kill_group
from tao.tools.fingerprint import CodeGate

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

#: The driver: one tao process running ``run_tests`` as a model's call would. With a
#: ``marker``, it holds a secret in its memory and tells the test file where (an attacker
#: who guesses the address right: the strongest case).
DRIVER = """import ctypes, json, os, sys
from pathlib import Path
from tao.sandbox import Sandbox, availability
from tao.tools.tests import run_pytest
if not availability().available:  # never a vacuous pass: pytest unconfined proves nothing
    sys.exit(f"no sandbox: {availability().reason}")
spec = json.loads(sys.argv[1])
project = Path(spec["project"])
held = ctypes.create_string_buffer(spec.get("marker", "").encode())
test = project / spec["path"]
if "marker" in spec:
    text = test.read_text().replace("@ADDR@", str(ctypes.addressof(held)))
    test.write_text(text.replace("@PID@", str(os.getpid())).replace("@PPID@", str(os.getppid())))
sandbox = Sandbox(writable=tuple(Path(p) for p in spec["writable"]))
for _ in range(spec.get("times", 1)):
    print(run_pytest(project, spec["path"], 60, sandbox), flush=True)
"""


def _ordinary_user_works() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = [unshare, "--user", "--map-user=1000", "--map-group=1000", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


WHO = [
    "as-invoked",
    pytest.param(
        "ordinary-user",
        marks=pytest.mark.skipif(not _ordinary_user_works(), reason="no user namespaces"),
    ),
]


@pytest.fixture(params=WHO)
def who(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A fake HOME with a shell start-up file, TAO_HOME, a project with a helper module."""
    home, project, outside = tmp_path / "home", tmp_path / "proj", tmp_path / "outside"
    for folder in (home, tmp_path / "taohome", project / "tests", outside):
        folder.mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    (project / "helper.py").write_text("VALUE = 42\n")
    (outside / "keep.txt").write_text("outside\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TAO_HOME", str(tmp_path / "taohome"))
    monkeypatch.delenv("TAO_SANDBOX", raising=False)
    return {"home": home, "project": project, "outside": outside, "tmp": tmp_path}


def open_up(*folders: Path) -> None:
    """Under root the child is uid 65534: what a test must write has to let it."""
    for folder in folders:
        for root, _dirs, files in os.walk(folder):
            Path(root).chmod(0o777)
            for name in files:
                (Path(root) / name).chmod(0o666)


def attack(
    who: str, project: Path, body: str, writable: tuple[Path, ...] = (), **spec: object
) -> str:
    """Write ``tests/test_attack.py`` running ``body`` (then failing, so pytest shows what it
    printed), run it through a real tao process; the output of each call, joined."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    head = "import os, sys, ctypes, glob\ndef test_attack():\n"
    (project / "tests" / "test_attack.py").write_text(
        f"{head}{indented}\n    assert False, 'show'\n"
    )
    open_up(project)
    data = {"project": str(project), "path": "tests/test_attack.py", **spec}
    data["writable"] = [str(path) for path in writable]
    argv = [sys.executable, "-c", DRIVER, json.dumps(data)]
    if who == "ordinary-user":
        argv = ["unshare", "--user", "--map-user=1000", "--map-group=1000", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def printed(output: str, prefix: str) -> list[str]:
    """Lines the test printed that start with ``prefix`` (pytest's listing of the failing
    test's source is indented, so it never matches)."""
    return [line for line in output.splitlines() if line.startswith(prefix)]


PTRACE = """
libc = ctypes.CDLL(None, use_errno=True)
class Vec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
size, addr = len(MARK), @ADDR@
got = ctypes.create_string_buffer(size)
mine = Vec(ctypes.cast(got, ctypes.c_void_p), size)
theirs = Vec(addr, size)
inside = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
print('SEEN', inside, 'ME', os.getpid(), os.getppid())
for pid in sorted(set(range(1, 4097)) | {@PID@, @PPID@} - {os.getpid()}):
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        print('GOT attach', pid); libc.ptrace(17, pid, 0, 0)
    if libc.ptrace(0x4206, pid, 0, 0) == 0:  # PTRACE_SEIZE
        print('GOT seize', pid); libc.ptrace(17, pid, 0, 0)
    for call in (310, 311):  # process_vm_readv, process_vm_writev
        if libc.syscall(call, pid, ctypes.byref(mine), 1, ctypes.byref(theirs), 1, 0) > 0:
            print('GOT vm', call, pid, got.raw)
    try:
        with open(f'/proc/{pid}/mem', 'rb') as memory:
            memory.seek(addr); print('GOT mem', pid, memory.read(size))
    except (OSError, ValueError, OverflowError):
        pass
    handle = libc.syscall(434, pid, 0)  # pidfd_open, then pidfd_getfd of its fds 0..9
    for fd in range(10) if handle >= 0 else ():
        if libc.syscall(438, handle, fd, 0) >= 0:
            print('GOT fd', pid, fd)
for pid in inside:
    for name in ('mem', 'environ', 'fd/0', 'root/etc/hostname'):
        try:
            open(f'/proc/{pid}/{name}', 'r+b' if name == 'mem' else 'rb').close()
            print('GOT open', pid, name) if pid != os.getpid() else None
        except OSError:
            pass
print('INIT', libc.ptrace(16, 1, 0, 0), ctypes.get_errno())
if os.uname().machine == 'x86_64':  # the 32-bit ABI: ptrace is 26 there, not 101
    import mmap
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes.fromhex('53b81a000000bb10000000b90100000031d231f6cd805bc3'))
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    attach32 = ctypes.CFUNCTYPE(ctypes.c_int)(address)
    print('COMPAT', attach32())
print('CHECKED', len(inside))
"""


def test_no_process_inside_or_outside_the_sandbox_can_be_traced_or_read_S10(
    world: dict[str, Path], who: str
) -> None:
    """A test attaches (PTRACE_ATTACH, PTRACE_SEIZE), reads and writes memory
    (process_vm_readv/writev, /proc/PID/mem at the very address where tao holds a secret)
    and takes open files (pidfd_getfd) of every pid 1-4096, tao's host pid and its
    parent's, and opens the /proc files (mem for writing, environ, fds, root) of every
    process it sees: tao is not in its PID namespace; bubblewrap's init, which shares the
    test's uid for an ordinary user, refuses with EPERM (a seccomp filter, which also
    refuses the 32-bit `int 0x80` ptrace) and its /proc entry is hidden."""
    marker = "PTRACE-" + os.urandom(8).hex()
    body = f"MARK = {marker!r}\n" + PTRACE
    output = attack(who, world["project"], body, marker=marker)
    assert printed(output, "CHECKED"), output
    assert printed(output, "GOT") == [], output
    assert printed(output, "INIT") == ["INIT -1 1"], output  # EPERM, not "no such process"
    assert all(line != "COMPAT 0" for line in printed(output, "COMPAT")), output
    assert marker not in output.replace(f"MARK = {marker!r}", "")


def test_a_sandbox_init_that_outlives_its_parent_still_dies_with_the_call_S10() -> None:
    """bubblewrap's init dies with its parent by a parent-death signal, which a traced
    init can lose, and it leads a session of its own, so killing the monitor's group
    missed it. Ending a call kills the leader's children by pid first: a child that
    left the group and ignores its parent's death (here `setsid sleep`) dies too."""
    leader = subprocess.Popen(["sh", "-c", "setsid sleep 300 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not (children := children_of(leader.pid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert children, "the child did not start"
        (child,) = children
        kill_group(leader.pid)
        leader.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(child)
    finally:
        kill_group(leader.pid)
        leader.wait(timeout=10)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its new parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


SWAP = """
if os.path.islink('out/inner'):
    for name in ('pwned.txt', '.git/config', 'keep.txt'):
        try:
            open('out/inner/' + name, 'w').write('pwned'); print('WROTE', name)
        except OSError as error:
            print('NO', name, type(error).__name__)
else:
    os.rename('out/inner', 'out/inner.old'); os.symlink({target!r}, 'out/inner')
    open('out/inner.old/x.pyc', 'wb').write(b'x'); print('SWAPPED')
"""


def test_a_writable_folder_inside_another_cannot_be_swapped_for_a_link_S10(
    world: dict[str, Path], who: str
) -> None:
    """Writable `out/` and `out/inner/` (a Python caller may give both): a test renames
    `inner` away and puts a link to a folder outside the project (with a `.git`) in its
    place. The next call must not open the link's target for writing, and cleaning up
    after the tests must not follow it either (its `.git` is not the tests' doing)."""
    project, outside = world["project"], world["outside"]
    (project / "out" / "inner").mkdir(parents=True)
    (outside / ".git").mkdir()
    (outside / ".git" / "config").write_text("[core]\n")
    open_up(outside)
    writable = (project / "out", project / "out" / "inner")
    body = SWAP.format(target=str(outside))
    output = attack(who, project, body, writable, times=2)
    assert printed(output, "SWAPPED") and len(printed(output, "NO ")) == 3, output
    assert printed(output, "WROTE") == [], output
    assert (outside / ".git" / "config").read_text() == "[core]\n"
    assert sorted(os.listdir(outside)) == [".git", "keep.txt"]
    assert (outside / "keep.txt").read_text() == "outside\n"


LINKS = """
links = {{'home': {home!r}, 'rc': {rc!r}, 'up': '..', 'outside': {outside!r}, 'etc': '/etc',
         'root': '/proc/1/root', 'cwd': '/proc/self/cwd', 'abs': {project!r}}}
for name, target in links.items():
    os.symlink(target, 'out/' + name)
for path in ('out/home/.bashrc', 'out/rc', 'out/up/helper.py', 'out/outside/keep.txt',
             'out/etc/profile', 'out/root{project}/helper.py', 'out/cwd/helper.py',
             'out/abs/helper.py', 'out/home/.profile', 'out/up/conftest.py'):
    try:
        open(path, 'a').write('pwned'); print('WROTE', path)
    except OSError as error:
        print('NO', path, type(error).__name__)
"""


def test_links_inside_a_writable_folder_reach_nothing_writable_S10(
    world: dict[str, Path], who: str
) -> None:
    """A writable `out/` whose test plants links to HOME, its `.bashrc`, the project root,
    a folder outside, /etc, the project through /proc/1/root and /proc/self/cwd: writing
    through any of them fails, and every host file stays as it was."""
    project, home, outside = world["project"], world["home"], world["outside"]
    (project / "out").mkdir()
    body = LINKS.format(
        home=str(home), rc=str(home / ".bashrc"), outside=str(outside), project=str(project)
    )
    output = attack(who, project, body, (project / "out",))
    assert len(printed(output, "NO ")) == 10 and printed(output, "WROTE") == [], output
    assert (home / ".bashrc").read_text() == "# mine\n" and not (home / ".profile").exists()
    assert (project / "helper.py").read_text() == "VALUE = 42\n"
    assert not (project / "conftest.py").exists()
    assert (outside / "keep.txt").read_text() == "outside\n"


STARTUP = {
    "evil.pth": "import os; print('RAN pth-in-project')\n",
    "sitecustomize.py": "print('RAN sitecustomize-in-project')\n",
    "usercustomize.py": "print('RAN usercustomize-in-project')\n",
    "tests/sitecustomize.py": "print('RAN sitecustomize-in-tests')\n",
    "tests/evil.pth": "import os; print('RAN pth-in-tests')\n",
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
    ".venv/lib/python3/site-packages/evil.pth": "import os; print('RAN pth-in-venv')\n",
    ".pyuser/lib/python3/site-packages/usercustomize.py": "print('RAN user-site')\n",
}


def test_startup_files_in_the_project_never_run_in_the_child_S10(
    world: dict[str, Path], who: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.pth`, `sitecustomize.py` and `usercustomize.py` in the project root, in the test's
    folder, in a virtual environment inside the project, in a user base the person's
    environment points into the project (PYTHONUSERBASE): pytest's interpreter is
    isolated (-I: no working folder, no user site, no PYTHON* variables) and none runs."""
    project = world["project"]
    for name, text in STARTUP.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    monkeypatch.setenv("PYTHONUSERBASE", str(project / ".pyuser"))
    monkeypatch.setenv("PYTHONSTARTUP", str(project / "sitecustomize.py"))
    body = """
import helper
print('FLAGS', sys.flags.isolated, sys.flags.no_user_site, sys.flags.ignore_environment)
print('ENV', sorted(name for name in os.environ if name.startswith('PYTHON')))
"""
    output = attack(who, project, body)
    assert printed(output, "RAN") == [], output
    assert printed(output, "FLAGS") == ["FLAGS 1 1 1"], output
    assert printed(output, "ENV") == ["ENV ['PYTHONDONTWRITEBYTECODE']"], output


PLANT_STARTUP = """
for path in ('.pyuser/lib/python3/site-packages/evil.pth', '.pyuser/bin/git',
             'pylib/sitecustomize.py', 'pylib/evil.pth'):
    try:
        open(path, 'w').write('import os; os.system("touch /tmp/pwned")\\n'); print('WROTE', path)
    except OSError as error:
        print('NO', path, type(error).__name__)
"""


def test_the_persons_user_base_inside_a_writable_project_stays_read_only_S10(
    world: dict[str, Path], who: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person's PYTHONUSERBASE and PYTHONPATH lie inside a project the tests may
    write: a `.pth` in the user site would run in every Python the person (and tao)
    starts, a `bin/git` would stand in for git on their PATH, a `sitecustomize.py` on
    PYTHONPATH would run in tao itself. Both are bound read-only again."""
    project = world["project"]
    (project / ".pyuser" / "lib" / "python3" / "site-packages").mkdir(parents=True)
    (project / ".pyuser" / "bin").mkdir()
    (project / "pylib").mkdir()
    monkeypatch.setenv("PYTHONUSERBASE", str(project / ".pyuser"))
    monkeypatch.setenv("PYTHONPATH", str(project / "pylib"))
    output = attack(who, project, PLANT_STARTUP, (project,))
    assert len(printed(output, "NO ")) == 4 and printed(output, "WROTE") == [], output
    assert not (project / ".pyuser" / "bin" / "git").exists()
    assert not (project / "pylib" / "sitecustomize.py").exists()


PYC = """
import importlib.util, marshal, _pytest
def header(source, flags=0, hashed=b''):
    info = os.stat(source)
    mtime = (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, 'little')
    stamp = hashed or mtime + (info.st_size & 0xFFFFFFFF).to_bytes(4, 'little')
    return importlib.util.MAGIC_NUMBER + flags.to_bytes(4, 'little') + stamp
def code(text, source):
    return marshal.dumps(compile(text, source, 'exec'))
tag = sys.implementation.cache_tag
if os.path.exists('poisoned'):
    import helper; print('HELPER', helper.VALUE)
else:
    import pytest as real
    rewrite = f'tests/__pycache__/test_attack.{tag}-pytest-{real.__version__}.pyc'
    os.makedirs('tests/__pycache__', exist_ok=True)
    evil = "def test_attack():\\n    print('HELPER POISONED-BY-REWRITE')\\n    assert False\\n"
    open(rewrite, 'wb').write(header('tests/test_attack.py') + code(evil, 'tests/test_attack.py'))
    os.makedirs('__pycache__', exist_ok=True)
    unchecked = header('helper.py', 1, bytes(8)) + code("VALUE = 'POISONED'\\n", 'helper.py')
    open(f'__pycache__/helper.{tag}.pyc', 'wb').write(unchecked)
    os.makedirs('/tmp/elsewhere', exist_ok=True); os.makedirs('lib', exist_ok=True)
    os.symlink('/tmp/elsewhere', 'lib/__pycache__')
    open('poisoned', 'w').write('1'); print('PLANTED')
"""


def test_compiled_python_planted_for_a_source_module_never_runs_S10(
    world: dict[str, Path], who: str
) -> None:
    """In a writable project a test plants, for modules the fingerprint saw as source:
    pytest's assertion-rewrite cache for the test file itself (matching mtime and size:
    pytest would run it instead of the source), an *unchecked* hash-based `.pyc` for
    `helper.py` (Python never compares it with the source), and a `__pycache__` that is
    a link to a folder elsewhere. All are removed after the call; the next call (and
    the person's Python) runs the sources."""
    project = world["project"]
    (project / "lib").mkdir()
    (project / "lib" / "util.py").write_text("VALUE = 1\n")
    output = attack(who, project, PYC, (project,), times=2)
    assert printed(output, "PLANTED"), output
    assert printed(output, "HELPER") == ["HELPER 42"], output
    assert not list(project.rglob("*.pyc")) and not os.path.lexists(project / "lib" / "__pycache__")
    seen = subprocess.run(
        [sys.executable, "-c", "import helper; print(helper.VALUE)"],
        cwd=project, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert seen.stdout.strip() == "42", seen.stderr


@pytest.mark.parametrize(
    "name",
    [
        "__pycache__/helper.cpython-311.pyc",
        "tests/__pycache__/test_x.cpython-311-pytest-8.3.2.pyc",
        "helper.pyc",
        "sitecustomize.py",
        "evil.pth",
        ".venv/lib/python3.11/site-packages/evil.pth",
    ],
)
def test_compiled_or_startup_files_the_model_writes_make_run_tests_ask_S11(
    tmp_path: Path, name: str
) -> None:
    """What Python would load instead of, or before, the source it saw counts in the code
    fingerprint: a run_tests call after such a write waits for a person, who is shown
    the file by name."""
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    gate = CodeGate(tmp_path)
    approved = gate.snapshot()
    assert gate.reason({"path": "tests/test_x.py"}, approved) is None or not _sandboxed()
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_bytes(importlib.util.MAGIC_NUMBER + bytes(12))
    reason = gate.reason({"path": "tests/test_x.py"}, approved)
    assert reason is not None and name in reason, reason


def _sandboxed() -> bool:
    from tao.sandbox import availability

    return availability().available


KERNEL = """
for path in ('/proc/sys/kernel/core_pattern', '/proc/sys/kernel/hostname',
             '/proc/sys/fs/pipe-max-size', '/proc/sys/kernel/printk_ratelimit'):
    value = open(path).read()  # written back unchanged: the right to write is the point
    try:
        with open(path, 'w') as setting:
            setting.write(value)
        print('WROTE', path)
    except OSError as error:
        print('NO', path, type(error).__name__)
"""


def test_kernel_settings_cannot_be_written_from_the_sandbox_S10(
    world: dict[str, Path], who: str
) -> None:
    """/proc/sys is read-only inside: `core_pattern` (a program the kernel runs as root
    on the next crash), the host name, pipe and log limits. Each is written back with
    its own value, so the test changes nothing even where a write got through. (As an
    ordinary user here, tao is host root inside a user namespace: the owner check on
    these files passed until /proc/sys was bound read-only.)"""
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    output = attack(who, world["project"], KERNEL)
    assert len(printed(output, "NO ")) == 4 and printed(output, "WROTE") == [], output
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


def test_a_planted_pytest_cache_never_chooses_what_runs_S11(world: dict[str, Path]) -> None:
    """A `.pytest_cache` saying only `test_a` failed, and a configuration asking for
    `--lf`: pytest's cache plugin is off (`-p no:cacheprovider`, and `-p cacheprovider` in
    a configuration is refused as loading a plugin by name), so the cache never narrows
    or steers the run: pytest refuses the option, or every test of the file runs."""
    project = world["project"]
    cache = project / ".pytest_cache" / "v" / "cache"
    cache.mkdir(parents=True)
    (cache / "lastfailed").write_text(json.dumps({"tests/test_attack.py::test_a": True}))
    (project / "pytest.ini").write_text("[pytest]\naddopts = --lf\n")
    (project / "tests" / "test_attack.py").write_text(
        "def test_a():\n    print('RAN a')\n    assert False\n"
        "def test_b():\n    print('RAN b')\n    assert False\n"
    )
    open_up(project)
    from tao.tools.tests import test_tools

    (run_tests,) = test_tools(project)
    output = run_tests.invoke({"path": "tests/test_attack.py"})
    refused = "exited with code 4" in output and "--lf" in output
    assert refused or printed(output, "RAN") == ["RAN a", "RAN b"], output
    (project / "pytest.ini").write_text("[pytest]\naddopts = -p cacheprovider --lf\n")
    with pytest.raises(ToolError, match="cacheprovider"):
        run_tests.invoke({"path": "tests/test_attack.py"})


NESTED = """
for path in ('.git/hooks/pre-commit', '.git/hooks/x/../post-checkout',
             '.venv/lib/site-packages/evil.pth', '.venv/lib/site-packages/sitecustomize.py'):
    try:
        open(path, 'w').write('touch /tmp/pwned'); print('WROTE', path)
    except OSError as error:
        print('NO', path, type(error).__name__)
"""


def test_a_writable_folder_inside_git_or_a_venv_stays_read_only_S10(
    world: dict[str, Path], who: str
) -> None:
    """A writable folder *inside* what runs later (a policy rule for `.git/hooks/**` or
    `.venv/lib/**`, folders the file tools never write): the protection found from
    above applies to it too, so no hook or `.pth` lands."""
    project = world["project"]
    (project / ".git" / "hooks" / "x").mkdir(parents=True)
    (project / ".venv" / "lib" / "site-packages").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    writable = (project / ".git" / "hooks", project / ".venv" / "lib")
    output = attack(who, project, NESTED, writable)
    assert len(printed(output, "NO ")) == 4 and printed(output, "WROTE") == [], output
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert not list((project / ".venv").rglob("*.pth"))


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("pytest.toml", '[pytest]\naddopts = ["--junitxml=/tmp/tao-outside.xml"]\n'),
        ("pytest.toml", '[pytest]\naddopts = "-p evil"\n'),
        (".pytest.toml", '[pytest]\naddopts = ["-o", "cache_dir=/tmp/tao-outside"]\n'),
        (".pytest.toml", '[pytest]\nfilterwarnings = ["error::evil.Warn"]\n'),
        ("tests/pytest.toml", '[pytest]\naddopts = ["--basetemp=../../escape"]\n'),
    ],
)
def test_pytest_9_toml_configurations_are_checked_like_the_others_S10(
    world: dict[str, Path], file: str, text: str
) -> None:
    """pytest 9 reads `pytest.toml` and `.pytest.toml` (a `[pytest]` table) before any
    other configuration: their options that write outside the project or load a module
    by name are refused as those of `pytest.ini` are, with a reason the model can read."""
    from tao.tools.tests import test_tools

    project = world["project"]
    (project / "evil.py").write_text("class Warn(Warning):\n    pass\n")
    (project / file).parent.mkdir(parents=True, exist_ok=True)
    (project / file).write_text(text)
    (project / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (run_tests,) = test_tools(project)
    with pytest.raises(ToolError, match="run_tests refuses"):
        run_tests.invoke({"path": "tests/test_ok.py"})
    assert not Path("/tmp/tao-outside.xml").exists() and not (world["tmp"] / "escape").exists()


def test_a_malformed_pyproject_table_is_no_crash_S10(world: dict[str, Path]) -> None:
    """`tool = 1` or `[tool] pytest = "x"` in pyproject.toml: the options check reads no
    table there (pytest itself then reports the file), and never fails with a traceback."""
    from tao.tools.tests import test_tools

    project = world["project"]
    (project / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (run_tests,) = test_tools(project)
    for text in ("tool = 1\n", '[tool]\npytest = "x"\n'):
        (project / "pyproject.toml").write_text(text)
        output = run_tests.invoke({"path": "tests/test_ok.py"})
        assert "[run_tests: pytest tests/test_ok.py exited with code" in output, output


FLOOD = """
os.makedirs('junk', exist_ok=True)
for index in range(60_000):
    open(f'junk/{index}', 'w').close()
os.makedirs('.git', exist_ok=True)
open('.git/config', 'w').write('[core]\\n\\tfsmonitor = touch /tmp/pwned\\n')
os.makedirs('__pycache__', exist_ok=True)
open(f'__pycache__/helper.{sys.implementation.cache_tag}.pyc', 'wb').write(b'x')
print('FLOODED', sys.flags.dont_write_bytecode)
"""


def test_flooding_a_writable_folder_past_the_search_bound_hides_nothing_S10(
    world: dict[str, Path],
) -> None:
    """A test creates 60,000 empty files (past the 50,000 entries the protection search
    visits) and then a `.git` with `core.fsmonitor` and a compiled module: the search
    after the call gave up and the `.git` stayed for the person's next `git status`.
    It has no bound now, and both are removed; pytest itself writes no `__pycache__`
    (`-B`: `-I` ignores PYTHONDONTWRITEBYTECODE)."""
    project = world["project"]
    output = attack("as-invoked", project, FLOOD, (project,))
    assert printed(output, "FLOODED") == ["FLOODED 1"], output
    assert not (project / ".git").exists(), output
    assert not list(project.rglob("*.pyc")), output
    assert "removed .git" in output, output
