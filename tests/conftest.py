"""Shared fixtures: an isolated TAO_HOME, the real CLI, a real HTTP model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `pytest` run without `python -m`: tests.fakes must import
    sys.path.insert(0, str(REPO))

from tests.fakes.http import FakeServer, Reply, Request, chat_completion  # noqa: E402

from tao.models import modelinfo  # noqa: E402


@pytest.fixture(autouse=True)
def tao_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own run log; nothing touches the user's real one."""
    home = tmp_path / "tao-home"
    monkeypatch.setenv("TAO_HOME", str(home))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TAO_MODEL", "TAO_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    # ... nor the user's downloaded eval data: without a folder named, tests get the sample
    monkeypatch.setenv("TAO_CACHE_DIR", str(tmp_path / "tao-cache"))
    for name in ("TAO_EVAL_DATA", "TAO_DATA_MIRROR"):
        monkeypatch.delenv(name, raising=False)
    # tiktoken (tao[tiktoken]) downloads its encoding at first use; a test never reaches
    # beyond loopback for it: an empty cache, and https only through a closed loopback port
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # the windows servers reported are kept per process by base URL: a later test's server may
    # get an earlier one's port
    monkeypatch.setattr(modelinfo, "_SAID", {})
    return home


def skip_or_fail_in_ci(reason: str) -> None:
    """Skip a test whose service is missing; in CI (CI=true) that is a setup bug: fail."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI must provide it: see .ci/run)")
    pytest.skip(reason)


#: Set by scripts/start-postgres.sh (and .ci/run): a role allowed to CREATE DATABASE.
PG_ADMIN_URL_ENV = "TAO_TEST_DATABASE_URL"


@pytest.fixture
def pg_database() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test; its ``postgresql://`` URL.

    Skips when ``TAO_TEST_DATABASE_URL`` is unset (``eval "$(scripts/start-postgres.sh)"``
    sets it; CI always does). The database is dropped afterwards.
    """
    admin_url = os.environ.get(PG_ADMIN_URL_ENV, "").strip()
    if not admin_url:
        skip_or_fail_in_ci(
            f"PostgreSQL store tests need {PG_ADMIN_URL_ENV}; start a server with "
            'eval "$(scripts/start-postgres.sh)"'
        )
    import psycopg

    name = f"tao_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
    parts = urlsplit(admin_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


@pytest.fixture(params=["sqlite", "postgres"])
def store_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test against both run logs: SQLite in $TAO_HOME, and a fresh PostgreSQL database.

    ``open_store()`` and every ``tao`` child process pick the backend up from the
    environment (``TAO_DATABASE_URL``), exactly as a user's would.
    """
    if request.param == "postgres":
        monkeypatch.setenv("TAO_DATABASE_URL", request.getfixturevalue("pg_database"))
    return str(request.param)


@pytest.fixture
def replay(tmp_path: Path) -> Callable[[list[str]], Path]:
    """Write a replay script (a JSON array of replies) and return its path."""
    counter = iter(range(1_000))

    def write(replies: list[str]) -> Path:
        path = tmp_path / f"replies-{next(counter)}.json"
        path.write_text(json.dumps(replies, ensure_ascii=False), encoding="utf-8")
        return path

    return write


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def tao_cli(tao_home: Path) -> Callable[..., CliResult]:
    """Run the real ``tao`` command in a child process, as a user would."""

    def run(
        *args: str,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> CliResult:
        full_env = {**os.environ, "TAO_HOME": str(tao_home), "COLUMNS": "120", **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "tao", *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            cwd=cwd,
            env=full_env,
            timeout=timeout,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


@dataclass
class ChatServer:
    """A real HTTP server on 127.0.0.1 speaking the chat-completions wire format.

    ``replies`` are served in order; each may be a string (the assistant's
    content) or a ``(status, body)`` tuple to answer with an error. Every request
    body is kept in ``requests`` so tests can assert what the SDK really sent.
    """

    base_url: str
    replies: list[Any]
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server_state = ChatServer("", [])
    lock = threading.Lock()

    def answer(request: Request) -> Reply:
        with lock:
            server_state.requests.append(request.body)
            server_state.paths.append(request.path)
            reply = (
                server_state.replies.pop(0)
                if server_state.replies
                else (500, {"error": {"message": "no scripted reply left", "type": "server_error"}})
            )
        if isinstance(reply, tuple):
            return Reply.json(reply[1], reply[0])
        return Reply.json(chat_completion(reply, request.body))

    with FakeServer(answer, prefix="/v1") as server:
        server_state.base_url = server.base_url
        yield server_state
