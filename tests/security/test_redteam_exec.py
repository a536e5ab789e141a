"""Red team: code nobody approved must not run (SPEC S10, S11, S3, S7).

Two classes, with real processes, real files and the real web page:

- the web page's Approve and Deny start tao again; a working folder (and a
  ``PYTHONPATH``) holding modules named like tao or its imports must not run in its stead;
- ``run_tests`` executes the project's code: whatever the model wrote since the last
  approval (tests, conftest, pytest configuration, modules a test imports) waits for a person.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tao.selfrun import loader_free_environment, loader_variable, tao_command
from tao.store import Store

#: Modules a Python would pick up from the working folder or PYTHONPATH before tao's own.
SHADOWS = ("click", "rich", "pydantic", "sitecustomize", "usercustomize", "encodings_x")


def _plant(folder: Path, markers: Path, layout: str) -> None:
    """Modules that leave a marker file when imported; ``layout`` chooses how tao is shadowed."""
    folder.mkdir(parents=True, exist_ok=True)

    def body(name: str) -> str:
        return (
            "import os\n"
            f"open(os.path.join({str(markers)!r}, {name!r} + '-' + str(os.getpid())), 'w')"
            ".close()\n"
        )

    for name in SHADOWS:
        (folder / f"{name}.py").write_text(body(name), encoding="utf-8")
    if layout == "module":
        (folder / "tao.py").write_text(body("tao"), encoding="utf-8")
    else:  # a package, with a __main__ for `-m tao`
        package = folder / "tao"
        package.mkdir()
        (package / "__init__.py").write_text(body("tao-package"), encoding="utf-8")
        (package / "__main__.py").write_text(body("tao-main"), encoding="utf-8")
    (folder / "evil.pth").write_text(f"import os; os.mkdir({str(markers / 'pth')!r})\n")


@pytest.fixture
def page_in(tao_home: Path) -> Iterator[Callable[[Path, dict[str, str]], str]]:
    """Start the real ``tao ui`` in a child process in ``cwd`` with ``env`` added; its URL.

    The page itself is started isolated (``-I``), as an installed entry point is: what is
    tested is what *it* starts.
    """
    started: list[subprocess.Popen[str]] = []

    def start(cwd: Path, env: dict[str, str]) -> str:
        process = subprocess.Popen(
            [*tao_command("ui", "--port", "0")],
            cwd=cwd,
            env={**os.environ, "TAO_HOME": str(tao_home), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        return url

    yield start
    for process in started:
        process.terminate()
        process.wait(10)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as reply:
        body: bytes = reply.read()
    return body.decode()


def _decide(url: str, run_id: str, action: str) -> int:
    """Submit the run page's Approve or Deny form as a browser would (token, call ids, Origin)."""
    page = _get(f"{url.rstrip('/')}/runs/{run_id}")
    form = page.split('class="buttons"', 1)[1].split("</form>", 1)[0]
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form)
    assert fields, page
    request = urllib.request.Request(
        f"{url.rstrip('/')}/runs/{run_id}/{action}",
        data=urllib.parse.urlencode(fields).encode(),
        method="POST",
        headers={"Origin": url.rstrip("/")},
    )

    class _Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    try:
        with urllib.request.build_opener(_Stay).open(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _wait_done(run_id: str, markers: Path, timeout: float = 90) -> str:
    """The run's status once its resume ended (neither awaiting approval nor running);
    a planted module that ran fails the test at once."""
    deadline = time.monotonic() + timeout
    with Store.open() as store:
        while time.monotonic() < deadline:
            ran = sorted(p.name for p in markers.iterdir())
            assert not ran, f"planted code ran: {ran}"
            status = str(store.get_summary(run_id).status)
            if status not in ("awaiting_approval", "running"):
                return status
            time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end within {timeout} s")


def _paused_delete(tao_cli: Callable[..., Any], replay: Callable[[list[str]], Path],
                   project: Path) -> str:  # fmt: skip
    """A real run (started elsewhere) that waits for approval to delete ``old.log``."""
    project.mkdir()
    (project / "old.log").write_text("old\n", encoding="utf-8")
    script = replay(
        [
            "Thought: Not needed.\nAction: delete_file[old.log]",
            "Thought: Handled.\nAction: finish[done]",
        ]
    )
    out = tao_cli("run", "Clean up", "--model", f"replay:{script}", "--tools", "files,write",
                  "--project", str(project), "--no-input", "--json")  # fmt: skip
    assert out.returncode == 4, out.stderr
    run_id: str = out.json()["run_id"]
    return run_id


@pytest.mark.parametrize("layout", ["module", "package"])
@pytest.mark.parametrize("action", ["approve", "deny"])
def test_page_resume_runs_no_code_from_the_working_folder(
    tmp_path: Path,
    tao_cli: Callable[..., Any],
    replay: Callable[[list[str]], Path],
    page_in: Callable[[Path, dict[str, str]], str],
    layout: str,
    action: str,
) -> None:
    """S10: Approve and Deny on a page started in a hostile folder, with PYTHONPATH=. and
    PYTHONSTARTUP set, resume the run with the installed tao: no planted module is imported,
    and the run goes on to its end (the file deleted only on Approve)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    hostile = tmp_path / "repo"
    _plant(hostile, markers, layout)
    project = tmp_path / "project"
    run_id = _paused_delete(tao_cli, replay, project)
    url = page_in(
        hostile,
        {
            "PYTHONPATH": ".",
            "PYTHONSTARTUP": str(hostile / "click.py"),
            "PYTHONUSERBASE": str(hostile),
        },
    )
    assert _decide(url, run_id, action) == 303
    assert _wait_done(run_id, markers) == "finished"
    assert sorted(p.name for p in markers.iterdir()) == []
    assert (project / "old.log").exists() is (action == "deny")


def test_the_child_environment_has_no_loader_variables() -> None:
    """S10: what tao starts of its own gets no PYTHON*, LD_* or shell start-up variables,
    whatever their case, and keeps what a resumed run needs (keys, TAO_HOME)."""
    source = {
        "PYTHONPATH": ".",
        "PYTHONSTARTUP": "x.py",
        "PYTHONHOME": "/x",
        "PYTHONINSPECT": "1",
        "pythonpath": ".",
        "LD_PRELOAD": "/tmp/x.so",
        "LD_LIBRARY_PATH": ".",
        "LD_AUDIT": "x.so",
        "DYLD_INSERT_LIBRARIES": "x.dylib",
        "BASH_ENV": "x.sh",
        "ENV": "x.sh",
        "PERL5OPT": "-Mx",
        "NODE_OPTIONS": "--require x",
        "GCONV_PATH": ".",
        "OPENAI_API_KEY": "sk-kept",
        "TAO_HOME": "/home/u/.tao",
        "PATH": "/usr/bin",
    }
    kept = loader_free_environment(source, NO_COLOR="1")
    assert kept == {
        "OPENAI_API_KEY": "sk-kept",
        "TAO_HOME": "/home/u/.tao",
        "PATH": "/usr/bin",
        "NO_COLOR": "1",
    }
    assert all(loader_variable(name) for name in set(source) - set(kept))


def test_tao_command_ignores_the_working_folder(tmp_path: Path) -> None:
    """S10: the command tao starts itself with imports the installed tao and no planted
    module, even run in the hostile folder with PYTHONPATH pointing there."""
    markers = tmp_path / "markers"
    markers.mkdir()
    hostile = tmp_path / "repo"
    _plant(hostile, markers, "package")
    env = {**os.environ, "PYTHONPATH": str(hostile)}
    done = subprocess.run(
        tao_command("--version"), cwd=hostile, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    # the same folder does take over a plain `python -m tao`: the test can tell
    plain = subprocess.run(
        [sys.executable, "-m", "tao", "--version"], cwd=hostile, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert plain.returncode is not None
    assert any(p.name.startswith("tao-") for p in markers.iterdir())
