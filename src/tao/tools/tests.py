"""The ``tests`` tool set: ``run_tests`` on one ``test_*.py`` file of the project (SPEC S2, S10).

pytest runs in a child process inside the sandbox (:mod:`tao.sandbox`): the project
read-only (writable only where ``Sandbox.writable`` says), no network, its own PID
namespace, an allow-list environment and rlimits; cwd = the project, stdin closed, and
a wall-clock timeout that kills the child's whole process group (and so the sandbox).
It runs as the *real* pytest: the interpreter is isolated (``python -I``; ``-B`` too, since
``-I`` ignores ``PYTHONDONTWRITEBYTECODE``: no ``__pycache__`` in a writable folder), pytest is
imported before the project's folder joins the import path, at its end, so a project
module named ``pytest.py`` or ``_pytest/`` cannot stand in for it; the project's own
modules still import. Project pytest options that would write outside the project or
load a plugin by name are refused first (:mod:`tao.tools.pytest_options`). Where no
sandbox is available (``tao.sandbox.availability()``), pytest runs unconfined with the
same environment, and the approval gate asks a person first. The loop keeps the *last*
2,000 characters (SPEC L6), so the summary line (exit code, timeout) is written last.

    (run_tests,) = test_tools(Path("."), timeout_s=60)
    run_tests.invoke({"path": "tests/test_cart.py"})
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

from tao.errors import InternalError, ToolError
from tao.sandbox import Sandbox, SandboxUnavailable, confine, must_confine
from tao.sandbox.children import kill_group, tracked
from tao.sandbox.command import NotConfinable
from tao.sandbox.environment import child_environment
from tao.sandbox.protected import Sweep
from tao.tools.base import Tool, make_tool
from tao.tools.fingerprint import CodeGate
from tao.tools.limits import remaining_s
from tao.tools.paths import ProjectPath, act_path, open_in_project, project_root
from tao.tools.pytest_options import check_pytest_config

TESTS_MAX_CHARS = 2_000
#: Output kept in memory; far above what the model sees, it only bounds memory.
MAX_OUTPUT_BYTES = 1_000_000

_EXIT_CODES = {
    0: "all tests passed",
    1: "some tests failed",
    2: "the run was interrupted or the file has errors",
    3: "pytest hit an internal error",
    4: "pytest was called wrongly",
    5: "no tests were collected",
}


class _TailReader(threading.Thread):
    """Drain a pipe so the child never blocks, keeping at most ``limit`` bytes of its tail."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.limit = stream, limit
        self.buffer = bytearray()
        self.dropped = 0

    def run(self) -> None:
        while chunk := os.read(self.stream.fileno(), 65_536):
            self.buffer += chunk
            if len(self.buffer) > self.limit:
                extra = len(self.buffer) - self.limit
                del self.buffer[:extra]
                self.dropped += extra

    def text(self) -> str:
        head = f"[{self.dropped:,} earlier bytes of output dropped]\n" if self.dropped else ""
        return head + self.buffer.decode("utf-8", errors="replace")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the child and everything it started (it leads its own session; the sandbox's
    init, its child, by pid while the child is not yet reaped)."""
    kill_group(process.pid, children=process.poll() is None)


def _wait(
    process: subprocess.Popen[bytes], timeout_s: float, reader: _TailReader
) -> tuple[bool, int]:
    """Wait for the child; at the timeout kill its group. Whether it timed out, its code."""
    if process.stdout is None:
        raise InternalError("pytest's output pipe is missing")
    timed_out = False
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process)
        code = process.wait()
    finally:
        _kill_group(process)  # stray grandchildren holding the pipe open
        reader.join(timeout=5)
        process.stdout.close()
    return timed_out, code


def test_file(root: Path, raw: str) -> ProjectPath:
    """The checked test file: ``test_*.py``, a regular file, no component that reads as an option.

    pytest takes options anywhere on its command line; a folder named
    ``--junitxml=x`` or ``-p`` must never become one, so such names are refused
    here and the path is passed after ``--`` as well.
    """
    target = act_path(root, raw)
    option = next((part for part in target.parts if part.startswith("-")), None)
    if option is not None:
        raise ToolError(f"{target.relative!r}: a path component starts with '-' ({option!r})")
    name = target.parts[-1] if target.parts else ""
    if not (name.startswith("test_") and name.endswith(".py")):
        raise ToolError(f"{raw.strip()!r} is not a test file: only test_*.py files can be run")
    try:
        fd = open_in_project(target, os.O_RDONLY | os.O_NONBLOCK)
    except ToolError as error:
        raise ToolError(f"{error}; use list_files to find the tests") from None
    regular = stat.S_ISREG(os.fstat(fd).st_mode)
    os.close(fd)
    if not regular:
        raise ToolError(f"{target.relative!r} is not a regular file")
    return target


#: Runs the real pytest: imported from the isolated interpreter's own path first, then the
#: project folder (cwd) joins the import path at its *end*, so project modules import but
#: cannot shadow pytest, its plugins or the standard library. Plugins pytest loads by entry
#: point (``pytest11``) come only from the installation: the distributions are listed
#: before the project joins the path, and pytest sees only those until its plugins are
#: loaded (a ``*.dist-info``/``*.egg-info`` in the project or a ``pythonpath =`` folder
#: would otherwise load a plugin by name, SPEC S11). Only the named test file's tests run
#: (the last argument): a configuration's ``addopts = docs --doctest-glob=*.md`` would
#: otherwise execute doctests in data files the code fingerprint never covers, so every
#: other collected item is deselected before anything runs (SPEC S11).
PYTEST_LAUNCHER = """import importlib.metadata as metadata, os, sys, pytest
installed, everywhere = list(metadata.distributions()), metadata.distributions
def only_installed(**query):
    return everywhere(**query) if query else iter(installed)
class OnlyNamed:
    def __init__(self, path):
        self.path = os.path.realpath(path)
    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self):
        metadata.distributions = everywhere
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        named = os.path.realpath
        other = [item for item in items if named(str(item.path)) != self.path]
        if other:
            config.hook.pytest_deselected(items=other)
            items[:] = [item for item in items if named(str(item.path)) == self.path]
metadata.distributions = only_installed
sys.path.append(os.getcwd())
sys.exit(int(pytest.main(sys.argv[1:], plugins=[OnlyNamed(sys.argv[-1])])))
"""


def _command(
    root: Path, shown: str, sandbox: Sandbox, scratch: str
) -> tuple[list[str], dict[str, str], str | None]:
    """The child's argv, environment and the sandbox's note (what it could not do here):
    confined when a sandbox is available, else plain (``scratch`` is then its HOME and
    TMPDIR). ``require`` without a sandbox: ToolError."""
    argv = [sys.executable, "-I", "-B", "-c", PYTEST_LAUNCHER, "-q", "-p", "no:cacheprovider"]
    argv += ["--", shown]
    try:
        if must_confine():
            confined = confine(argv, sandbox, cwd=root, readable=[root])
            return list(confined.argv), confined.env, confined.note
    except (SandboxUnavailable, NotConfinable) as error:
        raise ToolError(f"pytest was not started: {error}") from None
    return argv, child_environment(sandbox, home=scratch, tmp=scratch), None


def run_pytest(root: Path, raw: str, timeout_s: float, sandbox: Sandbox | None = None) -> str:
    """Run pytest on one test file of the project; return its output with a summary line last.

    The child is killed with its whole process group at ``timeout_s`` or at the
    deadline of the tool call it runs in (:func:`tao.tools.limits.remaining_s`),
    whichever comes first.
    """
    target = test_file(root, raw)
    shown = target.relative
    check_pytest_config(root, target.absolute)
    left = remaining_s()
    timeout_s = timeout_s if left is None else min(timeout_s, left)
    sandbox = sandbox or Sandbox()
    sweep = Sweep(sandbox.writable, "run_tests", "the tests")
    with tempfile.TemporaryDirectory(prefix="tao-tests-") as scratch:
        command, env, note = _command(root, shown, sandbox, scratch)
        try:
            process = subprocess.Popen(  # a fixed command; the path comes after --
                command,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as error:
            raise ToolError(f"pytest could not be started: {error}") from None
        if process.stdout is None:
            raise InternalError("pytest's output pipe is missing")
        reader = _TailReader(process.stdout, MAX_OUTPUT_BYTES)
        reader.start()
        with tracked(process):  # a stopped run kills it too (SPEC R2)
            timed_out, code = _wait(process, timeout_s, reader)
    output = reader.text().rstrip("\n")
    if note is not None:
        output += f"\n[run_tests: note: {note}]"
    removed = sweep(root)  # after pytest and all it started have ended (SPEC S10)
    output += f"\n{removed}" if removed else ""
    return f"{output}\n{_summary(shown, output, timed_out, code, timeout_s)}".lstrip("\n")


#: Signals the sandbox's limits send, as exit codes 128 + n say them to the model.
_SIGNALS = {
    signal.SIGXCPU.value: "the CPU-time limit was reached (SIGXCPU)",
    signal.SIGXFSZ.value: "the file-size limit was reached (SIGXFSZ)",
}


def _summary(shown: str, output: str, timed_out: bool, code: int, timeout_s: float) -> str:
    if timed_out:
        return f"[run_tests: pytest {shown} was killed after the {timeout_s:g} s timeout]"
    if code < 0:
        return f"[run_tests: pytest {shown} was killed by signal {-code}]"
    meaning = _EXIT_CODES.get(code, "unexpected exit code")
    if code == 1 and "No module named pytest" in output:
        meaning = f"pytest is not installed for {sys.executable}"
    elif output.startswith("bwrap:"):
        meaning = "the sandbox could not start"
    elif code - 128 in _SIGNALS:
        meaning = _SIGNALS[code - 128]
    elif code > 128:
        meaning = f"killed by signal {code - 128} (a resource limit, or the sandbox ended)"
    return f"[run_tests: pytest {shown} exited with code {code}: {meaning}]"


def test_tools(
    project: Path | str,
    *,
    timeout_s: float = 120,  # noqa: PT028  # a tool-set factory, not a pytest test
    sandbox: Sandbox | None = None,  # noqa: PT028
) -> list[Tool]:
    """Build ``run_tests`` confined to ``project``, with a per-call timeout in seconds.

    ``sandbox`` sets what pytest may do besides reading the project (network, variables
    passed by name, writable folders, limits); default: none of that.
    """
    root = project_root(project)

    def run_tests(path: str) -> str:
        """Run pytest on one test file of the project and show the end of its output.

        Args:
            path: A test file relative to the project folder, named test_*.py,
                e.g. "tests/test_cart.py".
        """
        return run_pytest(root, path, timeout_s, sandbox)

    gate = CodeGate(root)  # code the model changed runs only once a person says yes (S11)
    return [
        make_tool(
            run_tests,
            gate=gate,
            preview=gate.preview,
            max_chars=TESTS_MAX_CHARS,
            keep="tail",
            timeout_s=timeout_s + 10,  # its own kill comes first; the act's limit is a backstop
            path_params=("path",),
            project=root,
        )
    ]


test_tools.__test__ = False  # type: ignore[attr-defined]  # not a pytest test despite its name
