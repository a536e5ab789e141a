"""Plugins (issue 29, item 5): a separate distribution adds a model backend and a tool set
through the ``tao.models`` and ``tao.tools`` entry points, and every command uses them.

The distribution in ``tests/data/plugin`` is installed for real, once, with pip (its build
backend is stdlib-only, so no network is needed) into a folder the child processes get on
``PYTHONPATH``; ``importlib.metadata`` finds it there as it would in site-packages. Beside its
working plugins it has broken ones (a missing module, one that exits as it is imported, wrong
types, a built-in's name): every test runs with them installed, so none of them may break a
built-in or another plugin (SPEC: untrusted input).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PLUGIN_SOURCE = Path(__file__).resolve().parents[1] / "data" / "plugin"


@pytest.fixture(scope="session")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where ``pip install --target`` put the plugin's distribution (built once a session)."""
    target = tmp_path_factory.mktemp("plugin-site")
    built = subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
            "--no-build-isolation", "--no-cache-dir", "--disable-pip-version-check",
            "--target", str(target), str(PLUGIN_SOURCE),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    assert (target / "tao_shout-0.3.1.dist-info" / "entry_points.txt").is_file()
    return target


@pytest.fixture
def cracked_path(tmp_path: Path) -> Path:
    """A distribution whose entry_points.txt no parser accepts (a line with no '='), as a
    bare ``.dist-info`` folder: ``importlib.metadata.entry_points()`` raises for everyone
    while it is installed (pydantic's own plugin loader too, so every ``@tool`` fails)."""
    cracked = tmp_path / "site" / "tao_cracked-1.0.dist-info"
    cracked.mkdir(parents=True)
    (cracked / "METADATA").write_text("Metadata-Version: 2.1\nName: tao-cracked\nVersion: 1.0\n")
    (cracked / "entry_points.txt").write_text("[tao.models]\ncracked\n")
    return cracked.parent


@pytest.fixture
def tao(tao_cli: Callable[..., Any], plugin_path: Path) -> Callable[..., Any]:
    """The real ``tao`` command, with the plugin installed."""
    paths = [str(plugin_path), os.environ.get("PYTHONPATH", "")]
    pythonpath = os.pathsep.join(p for p in paths if p)

    def run(*args: str, **kwargs: Any) -> Any:
        return tao_cli(*args, env={"PYTHONPATH": pythonpath}, **kwargs)

    return run


def test_a_plugin_model_and_tool_set_run_from_the_command_line(tao: Any) -> None:
    """``tao run --model NAME:x --tools NAME``: the plugin's model asks the plugin's tool,
    and its observation reaches the answer (SPEC M1, T2)."""
    out = tao("run", "Shout hi.", "--model", "shout:hi", "--tools", "shout", "--json")
    assert out.returncode == 0, out.stderr
    result = out.json()
    assert result["status"] == "finished"
    assert result["answer"] == "the plugin heard HI!"
    first = result["steps"][0]
    assert (first["tool"], first["arguments"], first["observation"]) == (
        "shout",
        {"text": "hi"},
        "HI!",
    )
    shown = tao("runs", "show", result["run_id"], "--json")
    assert shown.json()["model"] == "shout:hi"


def test_a_plugin_set_mixes_with_built_in_sets_and_a_name_is_found_in_any_spelling(
    tao: Any,
) -> None:
    out = tao("run", "Shout hi.", "--model", "Shout:hi", "--tools", "calc, SHOUT", "--json")
    assert out.returncode == 0, out.stderr
    assert out.json()["answer"] == "the plugin heard HI!"


def test_a_paused_run_with_plugin_parts_resumes_from_its_recorded_names_R1(tao: Any) -> None:
    """RunConfig records the spec and the set names; ``tao resume`` in a new process rebuilds
    the plugin's model and tools from them."""
    out = tao(
        "run", "Engrave it.", "--model", "shout:engrave", "--tools", "shout", "--no-input",
        "--json",
    )  # fmt: skip
    assert out.returncode == 4, out.stderr
    paused = out.json()
    assert paused["status"] == "awaiting_approval"
    assert tao("runs", "approve", paused["run_id"]).returncode == 0
    resumed = tao("resume", paused["run_id"], "--no-input", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.json()["answer"] == "the plugin heard engraved 'engrave'"


def test_tao_plugins_lists_each_entry_point_and_whether_it_loads(tao: Any) -> None:
    out = tao("plugins", "--json")
    assert out.returncode == 0, out.stderr
    listed = {(p["group"], p["name"]): p for p in out.json()}
    shout = listed[("tao.models", "shout")]
    assert (shout["distribution"], shout["version"], shout["loads"]) == ("tao-shout", "0.3.1", True)
    assert listed[("tao.tools", "shout")]["loads"] is True
    broken = listed[("tao.models", "broken")]
    assert broken["loads"] is False
    assert "No module named 'tao_shout_missing'" in broken["error"]
    assert listed[("tao.tools", "calc")]["loads"] is False  # a built-in's name
    assert listed[("tao.tools", "wrong")]["loads"] is False  # not a tool
    assert "SystemExit: 3" in listed[("tao.models", "quitter")]["error"]
    assert "reserved" in listed[("tao.tools", "finisher")]["error"]
    table = tao("plugins").stdout.splitlines()
    assert table[0].split() == ["NAME", "GROUP", "DISTRIBUTION", "VERSION", "STATUS"]
    assert re.search(r"^shout\s+tao\.tools\s+tao-shout\s+0\.3\.1\s+ok$", "\n".join(table), re.M)


def test_tao_plugins_without_any_says_how_to_add_one(tao_cli: Any) -> None:
    out = tao_cli("plugins", "--json")
    assert out.returncode == 0
    assert out.json() == []
    assert "tao.models" in tao_cli("plugins").stdout


def test_a_plugin_that_fails_to_import_is_one_line_naming_it_and_its_distribution(
    tao: Any,
) -> None:
    out = tao("run", "x", "--model", "broken:x")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "Error: plugin 'broken' (tao.models, from tao-shout 0.3.1) failed to load: "
        "ModuleNotFoundError: No module named 'tao_shout_missing'"
    )
    wrong = tao("run", "x", "--model", "shout:hi", "--tools", "wrong")
    assert wrong.returncode == 1
    assert "plugin 'wrong' (tao.tools, from tao-shout 0.3.1) gave 42, not a tao Tool" in (
        wrong.stderr
    )
    assert "Traceback" not in out.stderr + wrong.stderr


def test_a_plugin_cannot_take_a_built_in_name(tao: Any) -> None:
    """``Replay`` is ``replay`` in another spelling: refused, never silently used."""
    out = tao("run", "x", "--model", "Replay:x")
    assert out.returncode == 1
    assert "plugin 'Replay' (tao.models, from tao-shout 0.3.1) is refused" in out.stderr
    assert "'replay' is built in" in out.stderr
    # ... and the built-in keeps its name: --tools calc is the calculator, not the plugin's.
    calc = tao("run", "x", "--model", "shout:hi", "--tools", "calc", "--json")
    observation = calc.json()["steps"][0]["observation"]
    assert "calculator" in observation and "HI!" not in observation


def test_unknown_names_list_the_installed_plugins_too(tao: Any) -> None:
    spec = tao("run", "x", "--model", "nope:x")
    assert spec.returncode == 2
    assert spec.stderr.strip().endswith(
        "replay:PATH, broken:SPEC, liar:SPEC, quitter:SPEC, raiser:SPEC, shout:SPEC"
    )
    sets = tao("run", "x", "--model", "shout:hi", "--tools", "nope")
    assert sets.returncode == 2
    valid = "valid sets: calc, files, tests, wiki, write, human, finisher, gone, loud, shout, wrong"
    assert valid in sets.stderr


def test_a_distribution_whose_entry_points_cannot_be_read_is_named(
    tao_cli: Any, cracked_path: Path
) -> None:
    """``tao plugins`` and an unknown model spec name the distribution and why, where
    ``importlib.metadata.entry_points()`` would end in a traceback."""
    env = {"PYTHONPATH": str(cracked_path)}
    why = "the entry points of tao-cracked 1.0 cannot be read: TypeError"
    listed = tao_cli("plugins", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [(p["name"], p["loads"], p["error"].split(":")[0]) for p in listed.json()] == [
        (None, False, why.split(":")[0])
    ]
    table = tao_cli("plugins", env=env)
    assert why in table.stdout.splitlines()[-1]
    spec = tao_cli("run", "x", "--model", "cracked:x", env=env)
    assert spec.returncode == 2
    assert why in spec.stderr and "Traceback" not in spec.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("--model", "liar:x"),
            "plugin 'liar' (tao.models, from tao-shout 0.3.1) made 42, not a tao Model",
        ),
        (
            ("--model", "raiser:x"),
            "plugin 'raiser' (tao.models, from tao-shout 0.3.1) failed to make a model for "
            "'raiser:x': RuntimeError: no model called 'x' here",
        ),
        (
            ("--model", "quitter:x"),
            "plugin 'quitter' (tao.models, from tao-shout 0.3.1) failed to load: SystemExit: 3",
        ),
        (
            ("--model", "shout:hi", "--tools", "finisher"),
            "plugin 'finisher' (tao.tools, from tao-shout 0.3.1) gave tools that cannot be used: "
            "the tool name 'finish' is reserved; the loop adds it",
        ),
        (
            ("--model", "shout:hi", "--tools", "files,gone"),
            "plugin 'gone' (tao.tools, from tao-shout 0.3.1) failed to load: "
            "ModuleNotFoundError: No module named 'tao_shout_missing'",
        ),
        (
            ("--model", "Iocal:x"),  # a capital I: it would pass for `local` in a run log
            "plugin 'Iocal' (tao.models, from tao-shout 0.3.1) is refused: 'local' is built "
            "in, and a plugin cannot take its name or one that looks like it",
        ),
    ],
    ids=[
        "not-a-model",
        "factory-raises",
        "exits-on-import",
        "reserved-tool-name",
        "tool-set-import-error",
        "look-alike-of-a-built-in",
    ],
)
def test_a_broken_plugin_is_one_error_line_naming_it(
    tao: Any, args: tuple[str, ...], expected: str
) -> None:
    """Whatever a plugin gets wrong, the run stops before it starts with exit 1 and one line
    naming the plugin and its distribution: no traceback, not the plugin's exit code."""
    out = tao("run", "x", *args)
    assert (out.returncode, out.stderr.strip()) == (1, f"Error: {expected}")


def test_built_ins_work_whatever_plugins_are_broken(tao: Any, replay: Any, tmp_path: Path) -> None:
    """With every broken plugin above installed, a run of built-in parts runs as if there
    were no plugins (SPEC M1, T2)."""
    (tmp_path / "notes.txt").write_text("forty-two\n")
    script = replay(
        [
            "Thought: read it.\nAction: read_file[notes.txt]",
            "Thought: compute.\nAction: calculator[6 * 7]",
            "Thought: done.\nFinal Answer: 42",
        ]
    )
    out = tao(
        "run", "What is in notes.txt?", "--model", f"replay:{script}", "--tools", "files,calc",
        "--project", str(tmp_path), "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = out.json()
    assert result["answer"] == "42"
    assert [step["observation"].strip() for step in result["steps"][:2]] == ["forty-two", "42"]


@pytest.fixture
def served(plugin_path: Path, tao_home: Path) -> Iterator[str]:
    """``tao serve --model shout:hi`` in a child process; yields its base URL."""
    env = {**os.environ, "PYTHONPATH": str(plugin_path), "TAO_HOME": str(tao_home)}
    server = subprocess.Popen(
        [sys.executable, "-m", "tao", "serve", "--model", "shout:hi", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"at (http://\S+/v1)", line)
        assert found, line + (server.stderr.read() if server.poll() is not None else "")
        yield found.group(1)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_tao_serve_serves_a_plugin_model(served: str) -> None:
    body = {"model": "shout:hi", "messages": [{"role": "user", "content": "Task: hi"}]}
    request = urllib.request.Request(
        f"{served}/chat/completions", json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:  # loopback only
        reply = json.loads(response.read())
    assert reply["choices"][0]["message"]["content"].endswith("Action: shout[hi]")


def test_load_model_and_resolve_tools_find_plugins_in_process(
    plugin_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python API sees the same plugins: ``Agent("shout:hi", ["shout"])`` (SPEC T2)."""
    monkeypatch.syspath_prepend(str(plugin_path))
    from tao import Agent

    result = Agent("shout:hi", ["shout"]).run("Shout hi.")
    assert (result.status, result.answer) == ("finished", "the plugin heard HI!")


def test_tao_eval_runs_a_plugin_model_M4(tao: Any) -> None:
    out = tao("eval", "hotpotqa", "--model", "shout:hi", "--limit", "1")
    assert out.returncode == 0, out.stderr
    assert "hotpotqa · shout:hi · n=1" in " ".join(out.stdout.split())
