"""Fixtures for ``tao ui``: a real server on 127.0.0.1, paused runs, headless Chromium."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from tao.store.factory import open_store
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
    #: Case-insensitive, as HTTP header names are.
    headers: Message

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body


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

    @property
    def origin(self) -> str:
        return self.url.rstrip("/")

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        data: dict[str, str] | list[tuple[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """One request; a POST carries this page's ``Origin``, as a browser's form does
        (``headers={"Origin": ""}`` sends none)."""
        body = None
        if data is not None:
            body = urllib.parse.urlencode(data).encode()
        headers = dict(headers or {})
        if method == "POST":
            headers.setdefault("Origin", self.origin)
            if not headers["Origin"]:
                del headers["Origin"]
        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=body, method=method, headers=headers
        )
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=30) as reply:
                return Response(reply.status, reply.read().decode(), reply.headers)
        except urllib.error.HTTPError as error:
            return Response(error.code, error.read().decode(), error.headers)

    def csrf(self) -> str:
        page = self.request("/").body
        match = re.search(r'<meta name="csrf-token" content="([^"]+)">', page)
        assert match, page
        return match.group(1)

    def form(self, run_id: str) -> list[tuple[str, str]]:
        """The hidden fields of the run page's Approve form: the token and the call ids."""
        page = self.request(f"/runs/{run_id}").body
        form = page.split('class="buttons"', 1)[1].split("</form>", 1)[0]
        return re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form)

    def decide(self, run_id: str, action: str = "approve", **extra: str) -> Response:
        """Submit the run page's Approve or Deny form, as a person would."""
        fields = self.form(run_id) + list(extra.items())
        return self.request(f"/runs/{run_id}/{action}", method="POST", data=fields)


@pytest.fixture
def ui(tao_home: Path) -> Iterator[Ui]:
    """``tao ui`` in a thread of the test, on a free port, over the test's run log."""
    store = open_store()
    server = UiServer(store, 0).start()
    try:
        yield Ui(server)
    finally:
        server.stop()
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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Debian Chromium per test module, driven by Playwright (never downloaded).

    One per module, not per session: Playwright's sync API keeps an event loop running in the
    main thread while it is open, so any later test's ``asyncio.run`` would refuse to start
    (pytest ties a wider scope in a folder without ``__init__.py`` to the whole session).
    """
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
