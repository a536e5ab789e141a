"""Fixtures for ``tao ui``: a real server on 127.0.0.1, paused runs, headless Chromium."""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tao.store import Store
from tao.ui import UiServer

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
#: Headless Chromium as root on a machine without network: no sandbox, no phoning home.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go: $TAO_ARTIFACTS, else artifacts/ in the checkout (gitignored)."""
    folder = Path(os.environ.get("TAO_ARTIFACTS") or REPO / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Response:
    status: int
    body: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Ui:
    """A running ``tao ui`` server and a small HTTP client for it."""

    server: UiServer

    @property
    def url(self) -> str:
        return self.server.url

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        data: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        body = None
        if data is not None:
            body = "&".join(
                f"{urllib.parse.quote(k)}={urllib.parse.quote(v)}" for k, v in data.items()
            ).encode()
        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=body, method=method, headers=headers or {}
        )
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=30) as reply:
                return Response(reply.status, reply.read().decode(), dict(reply.headers))
        except urllib.error.HTTPError as error:
            return Response(error.code, error.read().decode(), dict(error.headers))

    def csrf(self) -> str:
        page = self.request("/").body
        match = re.search(r'<meta name="csrf-token" content="([^"]+)">', page)
        assert match, page
        return match.group(1)


@pytest.fixture
def ui(tao_home: Path) -> Iterator[Ui]:
    """``tao ui`` in a thread of the test, on a free port, over the test's run log."""
    store = Store.open()
    server = UiServer(store, 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield Ui(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
        server.resumer.wait(60)  # let background resumes end before the log goes away
        store.close()


@pytest.fixture
def paused_run(
    tao_cli: Callable[..., Any], replay: Callable[[list[str]], Path], tmp_path: Path
) -> Callable[..., tuple[str, Path]]:
    """Start a real run that wants to delete a file, with --no-input: it pauses.

    Returns (run id, project folder). The model's second reply finishes the run.
    """

    def start(task: str = "Clean up old.log", *, thought: str = "It is no longer needed.") -> Any:
        project = tmp_path / f"project-{len(list(tmp_path.glob('project-*')))}"
        project.mkdir()
        (project / "old.log").write_text("old log line\n", encoding="utf-8")
        script = replay(
            [
                f"Thought: {thought}\nAction: delete_file[old.log]",
                "Thought: The file is handled.\nAction: finish[done with old.log]",
            ]
        )
        out = tao_cli(
            "run",
            task,
            "--model",
            f"replay:{script}",
            "--tools",
            "files,write",
            "--project",
            str(project),
            "--no-input",
            "--json",
        )
        assert out.returncode == 4, out.stderr  # EXIT[awaiting_approval]
        data = out.json()
        assert data["status"] == "awaiting_approval"
        return data["run_id"], project

    return start


def _browser_missing() -> str | None:
    if not CHROMIUM.exists():
        return "headless browser tests need Debian's chromium (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "headless browser tests need playwright (pip install 'tao[ui-test]')"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Debian Chromium for the session, driven by Playwright (never downloaded)."""
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{missing} (CI must provide it: see .ci/run)")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 820})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    try:
        yield tab
    finally:
        context.close()
