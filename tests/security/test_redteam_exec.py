"""Red team: code nobody approved must not run (SPEC S10, S11, S3, S7).

Two classes, with real processes, real files and the real web page:

- the web page's Approve and Deny start tao again; a working folder (and a
  ``PYTHONPATH``) holding modules named like tao or its imports must not run in its stead;
- ``run_tests`` executes the project's code: whatever the model wrote since the last
  approval (tests, conftest, pytest configuration, modules a test imports) waits for a person.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tao.sandbox.selfrun import loader_free_environment, loader_variable, tao_command
from tao.store.factory import open_store

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
    with open_store() as store:
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


# -- run_tests executes the project's code: what changed since the last approval asks (S11) --

#: A test that passes and imports a helper module of the project.
PASSING = "import helper\n\ndef test_ok():\n    assert helper.VALUE == 1\n"


def _project(root: Path) -> Path:
    """A small real project: one passing test that imports ``tests/helper.py``, a data file."""
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_ok.py").write_text(PASSING, encoding="utf-8")
    (root / "tests" / "helper.py").write_text("VALUE = 1\n", encoding="utf-8")
    (root / "tests" / "data.json").write_text('{"a": 1}\n', encoding="utf-8")
    (root / "old.log").write_text("old\n", encoding="utf-8")
    return root


def _marker_code(marker: Path) -> str:
    """Code that shows it ran: a marker file (where it may write) and a line in the output
    (pytest reports a conftest or plugin that raises, sandboxed or not)."""
    return (
        f"import pathlib\ntry:\n    pathlib.Path({str(marker)!r}).write_text('ran')\n"
        f"except OSError:\n    pass\nraise RuntimeError({RAN!r})\n"
    )


#: What planted code says when it runs.
RAN = "planted code ran"


def _mutations(root: Path, marker: Path) -> dict[str, Callable[[], str]]:
    """Ways code nobody approved enters the project; each returns the file a person must see."""
    code = _marker_code(marker)

    def conftest() -> str:
        (root / "conftest.py").write_text(code, encoding="utf-8")
        return "conftest.py"

    def nested_conftest() -> str:
        (root / "tests" / "conftest.py").write_text(code, encoding="utf-8")
        return "tests/conftest.py"

    def helper_edit() -> str:  # same size, same mtime: only the content and ctime differ
        path = root / "tests" / "helper.py"
        before = path.stat()
        path.write_text(code + "VALUE = 1\n", encoding="utf-8")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return "tests/helper.py"

    def pyproject_addopts() -> str:
        (root / "plug.py").write_text(code, encoding="utf-8")
        (root / "pyproject.toml").write_text(
            '[tool.pytest.ini_options]\naddopts = "-p plug"\npythonpath = ["."]\n',
            encoding="utf-8",
        )
        return "pyproject.toml"

    def ini_in_subfolder() -> str:
        (root / "tests" / "pytest.ini").write_text("[pytest]\naddopts = -p plug2\n")
        (root / "tests" / "plug2.py").write_text(code, encoding="utf-8")
        return "tests/pytest.ini"

    def symlink_swap() -> str:
        (root / "payload.txt").write_text(code + "VALUE = 1\n", encoding="utf-8")
        helper = root / "tests" / "helper.py"
        helper.unlink()
        helper.symlink_to(root / "payload.txt")
        return "tests/helper.py"

    def rename_over() -> str:
        staged = root / "tests" / ".helper.tmp"
        staged.write_text(code + "VALUE = 1\n", encoding="utf-8")
        os.replace(staged, root / "tests" / "helper.py")
        return "tests/helper.py"

    def changed_back() -> str:  # edited, then the very same bytes and mtime restored
        path = root / "tests" / "helper.py"
        before, text = path.stat(), path.read_text(encoding="utf-8")
        path.write_text(code, encoding="utf-8")
        path.write_text(text, encoding="utf-8")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return "tests/helper.py"

    def pth_file() -> str:
        (root / "zz.pth").write_text("import os\n", encoding="utf-8")
        return "zz.pth"

    def new_shadow_module() -> str:  # a module named like one pytest imports
        (root / "tests" / "pluggy.py").write_text(code, encoding="utf-8")
        return "tests/pluggy.py"

    return {f.__name__: f for f in (conftest, nested_conftest, helper_edit, pyproject_addopts,
            ini_in_subfolder, symlink_swap, rename_over, changed_back, pth_file,
            new_shadow_module)}  # fmt: skip


def _agent(replay: Callable[[list[str]], Path], root: Path, script: list[str], **kw: Any) -> Any:
    """An agent with the tests and write tools on ``root``, a policy that allows every
    write and ``mutate`` unasked (the auto-allow the attack relies on), and ``extra`` tools."""
    from tao import Agent
    from tao.approval.policy import Policy, Rule
    from tao.tools.registry import resolve_tools

    tools = [*resolve_tools(["tests", "write"], project=root), *kw.pop("extra", [])]
    policy = Policy((Rule("write_file"), Rule("mutate")))
    return Agent(f"replay:{replay(script)}", tools, policy=policy, **kw)


def _mutate_tool(mutations: dict[str, Callable[[], str]]) -> Any:
    """What an MCP server or another tool with side effects could do to the project."""
    from tao import tool

    @tool(effects="writes")
    def mutate(name: str) -> str:
        """Change the project."""
        return mutations[name]()

    return mutate


@pytest.mark.parametrize(
    "variant",
    ["conftest", "nested_conftest", "helper_edit", "pyproject_addopts", "ini_in_subfolder",
     "symlink_swap", "rename_over", "changed_back", "pth_file", "new_shadow_module"],
)  # fmt: skip
def test_code_changed_by_an_allowed_tool_waits_before_run_tests(
    tmp_path: Path, replay: Callable[[list[str]], Path], variant: str
) -> None:
    """S11, S3: a policy allows the change, but the test run that would execute it waits
    for a person (awaiting_approval), who is told which file changed; nothing ran."""
    root, marker = _project(tmp_path / "p"), tmp_path / "marker"
    mutations = _mutations(root, marker)
    script = [
        f"Thought: prepare.\nAction: mutate[{variant}]",
        "Thought: test.\nAction: run_tests[tests/test_ok.py]",
        "Action: finish[done]",
    ]
    agent = _agent(replay, root, script, extra=[_mutate_tool(mutations)], record=False)
    paused = agent.run("fix the tests")
    assert paused.status.value == "awaiting_approval", paused.steps
    assert paused.pending is not None
    (call,) = paused.pending
    assert call.tool == "run_tests"
    assert call.reason is not None
    changed_file = {"conftest": "added: conftest.py", "nested_conftest": "added: tests/conftest.py",
                    "pyproject_addopts": "pyproject.toml", "ini_in_subfolder": "tests/pytest.ini",
                    "pth_file": "added: zz.pth", "new_shadow_module": "added: tests/pluggy.py",
                    }.get(variant, "changed: tests/helper.py")  # fmt: skip
    assert changed_file in call.reason
    assert call.warning is not None and call.warning == call.reason
    assert not marker.exists()


def test_the_preview_names_the_file_and_approval_runs_it(
    tmp_path: Path, replay: Callable[[list[str]], Path]
) -> None:
    """S11: conftest.py written under an auto-allow policy: run_tests pauses naming it; once
    approved it runs (the approval is what lets the code run), and a second test run with
    nothing changed since that approval asks nobody."""
    root, marker = _project(tmp_path / "p"), tmp_path / "marker"
    content = json.dumps(_marker_code(marker))
    script = [
        f'Action: write_file({{"path": "conftest.py", "content": {content}}})',
        "Action: run_tests[tests/test_ok.py]",
        "Action: run_tests[tests/test_ok.py]",
        "Action: finish[done]",
    ]
    agent = _agent(replay, root, script, record=False)
    paused = agent.run("fix the tests")
    assert paused.status.value == "awaiting_approval"
    assert paused.pending is not None
    (call,) = paused.pending
    assert call.reason is not None and "added: conftest.py" in call.reason
    assert call.preview is not None and "fingerprint" in call.preview
    assert not marker.exists()
    done = agent.resume(paused, approve=True)
    assert done.status.value == "finished", done.error
    observations = [s.observation or "" for s in done.steps]
    assert RAN in observations[1]  # the approval is what let it run
    assert RAN in observations[2]  # unchanged since: run again, unasked


def test_an_unchanged_project_or_changed_data_runs_tests_unasked(
    tmp_path: Path, replay: Callable[[list[str]], Path]
) -> None:
    """S11 without friction: data files are not code; nothing executable changed, no pause."""
    root = _project(tmp_path / "p")
    script = [
        'Action: write_file({"path": "tests/data.json", "content": "{\\"a\\": 2}"})',
        "Action: run_tests[tests/test_ok.py]",
        "Action: finish[done]",
    ]
    done = _agent(replay, root, script, record=False).run("run the tests")
    assert done.status.value == "finished", done.pending
    assert "exited with code 0" in (done.steps[1].observation or "")


def test_an_edit_after_the_approval_refuses_the_approved_call(
    tmp_path: Path, replay: Callable[[list[str]], Path]
) -> None:
    """S7: the approval covers the code the person was shown; changed in between, the call
    is refused and nothing runs."""
    root, marker = _project(tmp_path / "p"), tmp_path / "marker"
    script = [
        'Action: write_file({"path": "conftest.py", "content": "X = 1\\n"})',
        "Action: run_tests[tests/test_ok.py]",
        "Action: finish[done]",
    ]
    agent = _agent(replay, root, script, record=False)
    paused = agent.run("fix the tests")
    assert paused.status.value == "awaiting_approval"
    (root / "conftest.py").write_text(_marker_code(marker), encoding="utf-8")
    done = agent.resume(paused, approve=True)
    assert "changed since it was approved" in (done.steps[1].observation or "")
    assert not marker.exists()


def _cli_run(tao_cli: Callable[..., Any], script: Path, root: Path, policy: Path) -> Any:
    return tao_cli("run", "fix", "--model", f"replay:{script}", "--tools", "files,write,tests",
                   "--project", str(root), "--no-input", "--json",
                   env={"TAO_POLICY": str(policy)})  # fmt: skip


def test_resume_in_another_process_keeps_the_approved_fingerprint(
    tmp_path: Path, tao_cli: Callable[..., Any], replay: Callable[[list[str]], Path]
) -> None:
    """S11, R1: the fingerprint taken when the run started is the run's, not the resuming
    process's: conftest written before a pause on another call still makes run_tests ask
    after a resume in a new process; once approved there, an unchanged re-run does not ask,
    and a further write asks again, each in its own process."""
    root, marker = _project(tmp_path / "p"), tmp_path / "marker"
    policy = tmp_path / "policy.toml"
    policy.write_text('[[allow]]\ntool = "write_file"\n', encoding="utf-8")
    content = json.dumps(_marker_code(marker))
    script = replay(
        [
            f'Action: write_file({{"path": "conftest.py", "content": {content}}})',
            "Action: delete_file[old.log]",
            "Action: run_tests[tests/test_ok.py]",
            "Action: run_tests[tests/test_ok.py]",
            'Action: write_file({"path": "tests/helper.py", "content": "VALUE = 1\\n#\\n"})',
            "Action: run_tests[tests/test_ok.py]",
            "Action: finish[done]",
        ]
    )
    out = _cli_run(tao_cli, script, root, policy)
    assert out.returncode == 4, out.stderr
    run_id = out.json()["run_id"]
    assert [c["tool"] for c in out.json()["pending"]] == ["delete_file"]

    def approve_and_resume() -> Any:
        assert tao_cli("runs", "approve", run_id).returncode == 0
        return tao_cli("resume", run_id, "--no-input", "--json",
                       env={"TAO_POLICY": str(policy)})  # fmt: skip

    second = approve_and_resume()
    assert second.returncode == 4, second.stderr
    (call,) = second.json()["pending"]
    assert call["tool"] == "run_tests"
    assert "conftest.py" in call["reason"]
    assert not marker.exists()
    third = approve_and_resume()  # runs it, runs it again unasked, writes, asks again
    assert third.returncode == 4, third.stderr
    (call,) = third.json()["pending"]
    assert call["tool"] == "run_tests"
    assert "changed: tests/helper.py" in call["reason"]
    assert "conftest.py" not in call["reason"]
    with open_store() as store:
        observations = [s.observation or "" for s in store.get_run(run_id).steps]
    assert RAN in observations[2] and RAN in observations[3]  # approved, then unasked
    last = approve_and_resume()
    assert last.returncode == 0, last.stderr
    assert last.json()["status"] == "finished"


def test_a_run_recorded_without_an_approved_state_asks(tmp_path: Path) -> None:
    """S11: a checkpoint written before this check existed has no approved fingerprint; it
    still loads, and its test runs ask rather than run unasked."""
    from tao.state.config import Checkpoint
    from tao.tools.fingerprint import CodeGate

    old = Checkpoint.from_json({"schema_version": 2, "messages": [], "step": None})
    assert old.approved == {}
    gate = CodeGate(_project(tmp_path / "p"))
    assert gate.reason({"path": "tests/test_ok.py"}, old.approved.get("run_tests")) is not None
    assert gate.reason({"path": "tests/test_ok.py"}, gate.snapshot()) is None


def test_without_a_sandbox_every_test_run_asks(
    tmp_path: Path, replay: Callable[[list[str]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """S10, S11: where children cannot be confined (here: TAO_SANDBOX=off), even an
    unchanged project's test run waits for a person, who is told why."""
    monkeypatch.setenv("TAO_SANDBOX", "off")
    root = _project(tmp_path / "p")
    script = ["Action: run_tests[tests/test_ok.py]", "Action: finish[done]"]
    paused = _agent(replay, root, script, record=False).run("run the tests")
    assert paused.status.value == "awaiting_approval"
    assert paused.pending is not None
    (call,) = paused.pending
    assert call.reason is not None and "unconfined" in call.reason
    assert "TAO_SANDBOX=off" in call.reason


@pytest.mark.parametrize("layout", ["module", "package"])
def test_building_the_runtime_runs_no_pip_from_the_working_folder_S10(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """`python -m tao.models.install` builds llama-cpp-python with pip; run from a cloned
    repository holding a `pip.py` (or `pip/__main__.py`), a `sitecustomize.py`, a
    `PYTHONSTARTUP` and `PYTHONPATH=.`, none of it may run in pip's stead with the user's
    keys. pip is told to use no index, so the real pip only checks what is installed, or
    fails offline: either way it is the real pip that ran, and no marker appears."""
    from tao.models.install import install_runtime

    work, markers = tmp_path / "clone", tmp_path / "markers"
    markers.mkdir()
    plant = f"import os\nopen(os.path.join({str(markers)!r}, __name__), 'w').close()\n"
    work.mkdir()
    if layout == "module":
        (work / "pip.py").write_text(plant)
    else:
        (work / "pip").mkdir()
        (work / "pip" / "__init__.py").write_text(plant)
        (work / "pip" / "__main__.py").write_text(plant)
    for name in ("sitecustomize", "usercustomize", "startup"):
        (work / f"{name}.py").write_text(plant)
    monkeypatch.chdir(work)
    monkeypatch.setenv("PYTHONPATH", str(work))
    monkeypatch.setenv("PYTHONSTARTUP", str(work / "startup.py"))
    monkeypatch.setenv("TAO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # never the network: the real pip fails fast
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    with contextlib.suppress(subprocess.CalledProcessError):
        install_runtime(force=True)
    assert sorted(os.listdir(markers)) == []
    log = (tmp_path / "cache" / "llama-cpp-build.log").read_text()
    assert "llama" in log.lower()  # the real pip read the requirements


SHADOWS = ("bwrap", "prlimit", "setpriv", "true", "mcp-server")


@pytest.mark.skipif(shutil.which("bwrap", path="/usr/bin") is None, reason="needs bubblewrap")
@pytest.mark.parametrize("path", [":{bin}", "{bin}:", "{bin}::/nowhere", ".:{bin}", "tools:{bin}"])
def test_no_program_tao_starts_is_found_through_a_relative_path_entry_S10(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """An empty or relative PATH entry (`PATH=:/opt/bin`, a trailing colon, `.`, `tools`) is
    the working folder to `execvp`. On a host where bubblewrap lives outside the system
    folders (Nix, Homebrew, ~/.local/bin) a repository's `bwrap`, `prlimit` or `true` would
    run unconfined with the person's whole environment when tao probes its sandbox, and an
    MCP server's program would be the project's. tao resolves programs only through
    absolute PATH entries, and gives children only those."""
    from tao.sandbox import Sandbox, confine
    from tao.sandbox import command as sandbox_command
    from tao.sandbox import probe as sandbox_probe
    from tao.sandbox.command import NotConfinable

    bin_dir, project, marker = tmp_path / "bin", tmp_path / "proj", tmp_path / "RAN"
    bin_dir.mkdir()
    for name in ("bwrap", "prlimit", "setpriv", "true"):
        (bin_dir / name).symlink_to(shutil.which(name, path="/usr/bin:/bin") or "/bin/true")
    for folder in (project, project / "tools"):
        folder.mkdir(exist_ok=True)
        for name in SHADOWS:
            script = folder / name
            script.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
            script.chmod(0o755)
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", path.format(bin=bin_dir))
    monkeypatch.delenv("TAO_SANDBOX", raising=False)
    monkeypatch.setattr(sandbox_command, "SYSTEM_BIN", str(tmp_path / "nothing"))
    sandbox_probe._probe.cache_clear()
    try:
        found = sandbox_probe.availability()
        assert not marker.exists(), marker.read_text()
        with pytest.raises(NotConfinable):
            confine(["mcp-server"], Sandbox(), cwd=project)
        confined = confine(["true"], Sandbox(), cwd=project)
    finally:
        sandbox_probe._probe.cache_clear()
    assert found.available, found.reason
    assert not marker.exists(), marker.read_text()
    assert all(entry.startswith("/") for entry in confined.env["PATH"].split(":")), confined.env
    assert str(project) not in " ".join(confined.argv[-1:])


def _native(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One native reply holding ``calls``, run together by the driver."""
    made = [{"name": name, "arguments": arguments} for name, arguments in calls]
    return {"content": "all at once", "tool_calls": made}


NATIVE_FINISH = {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "ok"}}]}


@pytest.mark.parametrize("order", ["write-first", "tests-first"])
@pytest.mark.parametrize("writer", ["write_file", "mutate"])
def test_code_written_in_the_same_reply_as_run_tests_waits_S11(
    tmp_path: Path, replay: Callable[[list[Any]], Path], order: str, writer: str
) -> None:
    """S11: a reply that writes ``conftest.py`` (an auto-allowed write, or any tool with side
    effects) *and* runs the tests: the gate judged the project before the write, and the
    calls run together, so the test run would execute the new code unasked. It waits for
    a person, named beside what could change it; nothing planted ran."""
    root, marker = _project(tmp_path / "p"), tmp_path / "marker"
    mutations = _mutations(root, marker)
    write: tuple[str, dict[str, Any]] = (
        ("write_file", {"path": "conftest.py", "content": _marker_code(marker)})
        if writer == "write_file"
        else ("mutate", {"name": "conftest"})
    )
    tests: tuple[str, dict[str, Any]] = ("run_tests", {"path": "tests/test_ok.py"})
    calls = [write, tests] if order == "write-first" else [tests, write]
    agent = _agent(replay, root, [_native(calls), NATIVE_FINISH],
                   extra=[_mutate_tool(mutations)], record=False)  # fmt: skip
    paused = agent.run("fix the tests")
    assert paused.status.value == "awaiting_approval", paused.steps
    assert paused.pending is not None
    (call,) = paused.pending
    assert call.tool == "run_tests"
    assert call.reason is not None and f"beside {writer}" in call.reason
    assert not marker.exists()
    assert all(RAN not in (step.observation or "") for step in paused.steps)


def test_run_tests_beside_read_only_calls_runs_unasked_S11(
    tmp_path: Path, replay: Callable[[list[Any]], Path]
) -> None:
    """No friction where nothing can change: read-only calls beside a test run."""
    from tao.tools.registry import resolve_tools

    root = _project(tmp_path / "p")
    calls = [
        ("read_file", {"path": "tests/helper.py"}),
        ("run_tests", {"path": "tests/test_ok.py"}),
    ]
    agent = _agent(replay, root, [_native(calls), NATIVE_FINISH],
                   extra=resolve_tools(["files"], project=root), record=False)  # fmt: skip
    done = agent.run("run the tests")
    assert done.status.value == "finished", done.pending
    assert any("exited with code 0" in (step.observation or "") for step in done.steps)
