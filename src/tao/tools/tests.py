"""The ``tests`` tool set: ``run_tests`` on one ``test_*.py`` file of the project (SPEC S2).

pytest runs in a child process: the current interpreter, cwd = the project, stdin
closed, a wall-clock timeout that kills the child's whole process group, and an
environment scrubbed of anything that looks like a key, token or password
(:func:`scrubbed_environment`). The loop keeps the *last* 2,000 characters
(SPEC L6), so the summary line (exit code, timeout) is written last.

    (run_tests,) = test_tools(Path("."), timeout_s=60)
    run_tests.invoke({"path": "tests/test_cart.py"})
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from tao.errors import ToolError
from tao.tools.base import Tool, make_tool
from tao.tools.paths import inside_project, project_root, relative

TESTS_MAX_CHARS = 2_000
#: Output kept in memory; far above what the model sees, it only bounds memory.
MAX_OUTPUT_BYTES = 1_000_000

#: A variable whose name contains one of these words is dropped.
SECRET_NAME_WORDS: tuple[str, ...] = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH",
    "COOKIE", "SESSION", "PRIVATE", "SIGNATURE", "CERT",
)  # fmt: skip
#: A variable whose name starts with one of these prefixes is dropped (provider and cloud logins).
SECRET_NAME_PREFIXES: tuple[str, ...] = (
    "AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "OPENAI_", "ANTHROPIC_", "GEMINI_",
    "MISTRAL_", "COHERE_", "GROQ_", "HF_", "HUGGING", "GITHUB_", "GH_", "GITLAB_", "NPM_",
    "PYPI_", "TWINE_", "DOCKER_", "VAULT_", "SLACK_", "STRIPE_", "DATABASE_", "PG", "MYSQL_",
    "REDIS_", "SENTRY_", "TAO_",
)  # fmt: skip
#: Values that look like credentials: provider key prefixes, URLs with a password.
_SECRET_VALUE = re.compile(
    r"^(sk-|sk_|pk_|rk_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|xox[abpr]-|AKIA|ASIA|AIza|hf_)"
    r"|://[^/\s:@]+:[^/\s@]+@"
)

_EXIT_CODES = {
    0: "all tests passed",
    1: "some tests failed",
    2: "the run was interrupted or the file has errors",
    3: "pytest hit an internal error",
    4: "pytest was called wrongly",
    5: "no tests were collected",
}


def scrubbed_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` without variables that may carry keys, tokens, secrets or passwords."""
    source = os.environ if environ is None else environ
    kept: dict[str, str] = {}
    for name, value in source.items():
        upper = name.upper()
        if any(word in upper for word in SECRET_NAME_WORDS):
            continue
        if upper.startswith(SECRET_NAME_PREFIXES) or _SECRET_VALUE.search(value):
            continue
        kept[name] = value
    kept["PYTHONDONTWRITEBYTECODE"] = "1"
    return kept


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
    """Kill the child and everything it started (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_pytest(root: Path, raw: str, timeout_s: float) -> str:
    """Run pytest on one test file of the project; return its output with a summary line last."""
    target = inside_project(root, raw)
    if not (target.name.startswith("test_") and target.suffix == ".py"):
        raise ToolError(f"{raw.strip()!r} is not a test file: only test_*.py files can be run")
    if not target.is_file():
        raise ToolError(f"{raw.strip()!r} does not exist; use list_files to find the tests")
    shown = relative(root, target)
    command = [sys.executable, "-m", "pytest", shown, "-q", "-p", "no:cacheprovider"]
    try:
        process = subprocess.Popen(
            command,
            cwd=root,
            env=scrubbed_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as error:
        raise ToolError(f"pytest could not be started: {error}") from None
    assert process.stdout is not None
    reader = _TailReader(process.stdout, MAX_OUTPUT_BYTES)
    reader.start()
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
    output = reader.text().rstrip("\n")
    if timed_out:
        summary = f"[run_tests: pytest {shown} was killed after the {timeout_s:g} s timeout]"
    elif code < 0:
        summary = f"[run_tests: pytest {shown} was killed by signal {-code}]"
    else:
        meaning = _EXIT_CODES.get(code, "unexpected exit code")
        if code == 1 and "No module named pytest" in output:
            meaning = f"pytest is not installed for {sys.executable}"
        summary = f"[run_tests: pytest {shown} exited with code {code}: {meaning}]"
    return f"{output}\n{summary}" if output else summary


def test_tools(project: Path | str, *, timeout_s: float = 120) -> list[Tool]:  # noqa: PT028
    """Build ``run_tests`` confined to ``project``, with a per-call timeout in seconds."""
    root = project_root(project)

    def run_tests(path: str) -> str:
        """Run pytest on one test file of the project and show the end of its output.

        Args:
            path: A test file relative to the project folder, named test_*.py,
                e.g. "tests/test_cart.py".
        """
        return run_pytest(root, path, timeout_s)

    return [make_tool(run_tests, max_chars=TESTS_MAX_CHARS, keep="tail")]


test_tools.__test__ = False  # type: ignore[attr-defined]  # not a pytest test despite its name
