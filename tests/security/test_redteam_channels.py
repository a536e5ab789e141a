"""Red team, secrets in OUTPUT CHANNELS (SPEC S5, S8; issue 26 round 3).

The encodings were probed in ``test_redteam_leak.py``; here the secret is one tao itself
knows and no pattern can: the value of a variable the user passed with ``--pass-env``, or
one of tao's own environment under a secret-labelling name. A tool prints the bare value
(``print(os.environ[...])``, an assertion message, a dump of the environment), and every
place text leaves tao is read for it: the model's next request (a real HTTP server on
127.0.0.1), ``--json``, ``runs show`` (text and ``--json``), ``runs list``, ``runs
export``, stderr, and every file under ``TAO_HOME`` but the owner-only ``private/`` copies
a resume needs. Real processes, a real sandboxed pytest, real files.

Shapes only: none of these is a real credential.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.otlp import OtlpReceiver
from tests.fakes.terminal import Terminal, terminal_env
from tests.security.stored import home_files

from tao.redact import REDACTED, redact
from tao.redact.known import remember, remember_environment
from tao.telemetry.attributes import CAPTURE_VARIABLE

Replay = Callable[[list[str]], Path]
#: Unlabelled, no provider shape, too short and too plain for the entropy layer.
VALUE = "Zq7hunter2horse"
URL_PASSWORD = "Kp4wallet9stone"

#: How a test prints the value: each is one way a real project leaks its configuration.
ECHOES = {
    "print": 'print("value is", os.environ["MY_SETTING"])',
    "assertion": 'assert os.environ["MY_SETTING"] == "x"',
    "environ dump": "print(dict(os.environ))",
    "traceback local": 'setting = os.environ["MY_SETTING"]; raise RuntimeError(setting[::1])',
    "url password": 'print(urllib.parse.urlsplit(os.environ["MY_DB"]).password)',
    "sliced in text": 'print("a" + os.environ["MY_SETTING"] + "b")',
}


pytestmark = pytest.mark.usefixtures("clean_known_registry")


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_a_passed_env_value_a_test_prints_leaves_through_no_channel_S5(
    echo: str, tao_cli: Any, tao_home: Path, chat_server: Any, tmp_path: Path
) -> None:
    """``--pass-env MY_SETTING`` hands the value to the sandboxed test; the test prints it
    bare. The model is never sent it, and no output channel shows or stores it."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "test_env.py").write_text(
        f"import os, urllib.parse\n\ndef test_env():\n    {ECHOES[echo]}\n    assert False\n"
    )
    chat_server.replies.extend(["Action: run_tests[test_env.py]", "Action: finish[done]"])
    env = {"MY_SETTING": VALUE, "MY_DB": f"postgresql://app:{URL_PASSWORD}@db:5432/app"}
    out = tao_cli(
        "run", "run the tests", "--model", "openai:m", "--base-url", chat_server.base_url,
        "--protocol", "text", "--tools", "tests", "--project", str(project),
        "--pass-env", "MY_SETTING",
        "--pass-env", "MY_DB", "--json", env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run_id"]
    observation = json.loads(out.stdout)["steps"][0]["observation"]
    assert "test_env" in observation and REDACTED in observation  # it ran, and was read
    shown = {
        "--json": out.stdout + out.stderr,
        "model request": json.dumps(chat_server.requests),
        "runs show": tao_cli("runs", "show", run_id).stdout,
        "runs show --json": tao_cli("runs", "show", run_id, "--json").stdout,
        "runs list": tao_cli("runs", "list").stdout,
        "runs list --json": tao_cli("runs", "list", "--json").stdout,
        "export": tao_cli("runs", "export", run_id).stdout,
        "export --full": tao_cli("runs", "export", run_id, "--full").stdout,
    }
    for secret in (VALUE, URL_PASSWORD):
        leaks = [name for name, text in shown.items() if secret in text]
        leaks += [name for name, data in home_files(tao_home).items() if secret.encode() in data]
        assert leaks == [], (secret, leaks)


def test_an_in_process_tool_printing_a_secret_named_variable_is_redacted_S5(
    tao_home: Path, monkeypatch: pytest.MonkeyPatch, replay: Replay
) -> None:
    """A Python tool runs in tao's own process (no sandbox) and can read ``os.environ``:
    the value of every variable whose name labels a secret is hidden wherever it appears,
    in the result and the run log alike."""
    from tao import Agent, tool

    monkeypatch.setenv("PAYMENTS_API_KEY", "Pq8merlin4castle")
    monkeypatch.setenv("ORDERS_DB_PASSWORD", "Tm2violet6harbor")

    @tool
    def show_config(name: str) -> str:
        """Show one setting."""
        return f"{name} -> {os.environ[name]}"

    script = replay(
        ["Action: show_config[PAYMENTS_API_KEY]", "Action: show_config[ORDERS_DB_PASSWORD]",
         "Action: finish[done]"]
    )  # fmt: skip
    result = Agent(f"replay:{script}", tools=[show_config], record=True).run("show settings")
    observations = [step.observation or "" for step in result.steps]
    assert observations[0] == f"PAYMENTS_API_KEY -> {REDACTED}", observations
    stored = b"".join(p.read_bytes() for p in tao_home.glob("tao.db*"))
    for secret in ("Pq8merlin4castle", "Tm2violet6harbor"):
        assert all(secret not in text for text in observations)
        assert secret.encode() not in stored


def test_a_value_known_only_after_a_text_was_redacted_is_still_hidden_S5() -> None:
    """The memo of redacted texts must not answer with a result from before the value
    was registered (the same observation redacted again for the log)."""
    text = f"the setting is {VALUE}"
    assert redact(text) == text
    remember([VALUE])
    assert redact(text) == f"the setting is {REDACTED}"


def test_short_or_path_values_and_ordinary_names_leave_text_readable_S5() -> None:
    """Registering the environment must not blank ordinary text: values under 8
    characters, paths under secret-ish names, and ordinary names' values are not hidden."""
    remember_environment(
        ["SHORT", "PORTISH"],
        {"SHORT": "true", "PORTISH": "8080", "SSH_AUTH_SOCK": "/tmp/ssh-abc/agent.12",
         "EDITOR": "vim-huge-editor", "MY_TOKEN": "Wd5copper8lantern"},
    )  # fmt: skip
    text = "ok true 8080 /tmp/ssh-abc/agent.12 vim-huge-editor and Wd5copper8lantern"
    assert redact(text) == f"ok true 8080 /tmp/ssh-abc/agent.12 vim-huge-editor and {REDACTED}"


OPENAI = "sk-proj-" + "Qw7Er9Ty" * 6
GITHUB = "ghp_" + "Zx8Cv6Bn4M" * 4


@pytest.mark.parametrize(
    "reply",
    [
        f"Thought 1: the key is {OPENAI}\nAction 1: Finish[{OPENAI}]",
        f"Thought 1: I read it.\nAction 1: Finish[token {GITHUB} and pw: {VALUE}]",
    ],
)
def test_an_eval_records_and_reports_answers_redacted_S8(
    reply: str, tao_cli: Any, tao_home: Path, chat_server: Any
) -> None:
    """``tao eval`` writes each question's answer to ``$TAO_HOME/evals/*.jsonl`` and
    summarises it (``--json``, the table, ``tao eval report``): none of them holds a
    secret the model answered with; the answer is still recorded, redacted."""
    chat_server.replies.extend([reply] * 4)
    out = tao_cli(
        "eval", "hotpotqa", "--model", "openai:m", "--base-url", chat_server.base_url,
        "--strategy", "react", "--limit", "1", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = tao_cli("eval", "report")
    records = [
        json.loads(line)
        for path in (tao_home / "evals").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert records and REDACTED in (records[0]["answer"] or "")
    for secret in (OPENAI, GITHUB, VALUE):
        assert secret not in out.stdout + out.stderr + report.stdout + report.stderr
        leaks = [name for name, data in home_files(tao_home).items() if secret.encode() in data]
        assert leaks == [], (secret, leaks)


def test_a_model_error_echoing_the_key_is_redacted_on_every_channel_S8(
    tao_cli: Any, tao_home: Path, chat_server: Any
) -> None:
    """A server that rejects the key and echoes it back (``Incorrect API key provided:
    sk-…``): the error line on stderr, the terminal display, ``--json`` and the run log
    show it hidden."""
    error = {"error": {"message": f"Incorrect API key provided: {OPENAI}", "type": "x"}}
    chat_server.replies.extend([(401, error)] * 4)
    base = ("run", "x", "--model", "openai:m", "--base-url", chat_server.base_url)
    outs = [tao_cli(*base, "--json"), tao_cli(*base)]
    assert all(out.returncode != 0 for out in outs)
    assert "rejected" in outs[1].stdout + outs[1].stderr
    for out in outs:
        assert OPENAI not in out.stdout + out.stderr
    assert [name for name, data in home_files(tao_home).items() if OPENAI.encode() in data] == []


def test_otel_spans_with_content_capture_hold_no_known_or_shaped_secret_S8(
    tao_cli: Any, tao_home: Path, replay: Replay, tmp_path: Path
) -> None:
    """A real ``tao run`` exporting to a real OTLP receiver on 127.0.0.1, content capture
    on: the task holds a key, the test prints a ``--pass-env`` value and fails with it,
    and no span's attributes, events or status message carry either."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "test_env.py").write_text(
        'import os\n\ndef test_env():\n    raise RuntimeError(os.environ["MY_SETTING"])\n'
    )
    script = replay(["Thought: run them.\nAction: run_tests[test_env.py]", "Action: finish[ok]"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with OtlpReceiver() as receiver:
        env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, CAPTURE_VARIABLE: "true"}
        out = tao_cli(
            "run", f"check with {OPENAI}", "--model", f"replay:{script}", "--tools", "tests",
            "--project", str(project), "--pass-env", "MY_SETTING", "--json",
            env={**env, "MY_SETTING": VALUE},
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        spans = list(receiver.spans)
    everything = json.dumps([[s.name, s.attributes, s.status_message] for s in spans], default=str)
    assert "gen_ai.tool.call.result" in everything  # content was captured
    assert "test_env" in everything
    assert VALUE not in everything and OPENAI not in everything


def test_the_approval_prompt_at_a_real_terminal_shows_no_secret_and_no_raw_escape_S8_S9(
    tao_home: Path, replay: Replay, tmp_path: Path
) -> None:
    """A write waits for a person at a real pty. Its content holds a provider key and the
    value of a ``--pass-env`` variable; its Thought holds OSC 52 (clipboard write), a screen
    clear and a bidi override. The prompt shows neither secret, marks what was hidden, and
    no escape from the model reaches the terminal; approved, the real content is written."""
    content = f"key = {OPENAI}\nsetting {VALUE}\n"
    thought = "Thought: save \x1b]52;c;ZXZpbA==\x07 it \x1b[2J now \u202eevil"
    call = json.dumps({"path": "notes.txt", "content": content})
    script = replay([f"{thought}\nAction: write_file[{call}]", "Action: finish[written]"])
    args = [sys.executable, "-m", "tao", "run", "keep notes", "--model", f"replay:{script}",
            "--tools", "write", "--project", str(tmp_path), "--pass-env", "MY_SETTING"]  # fmt: skip
    env = terminal_env({**os.environ, "TAO_HOME": str(tao_home), "MY_SETTING": VALUE})
    with Terminal(args, env=env) as term:
        term.wait_for(lambda s: "Allow it?" in s)
        prompt = term.raw
        os.write(term.master, b"y\n")
        assert term.finish() == 0
    assert (tmp_path / "notes.txt").read_text() == content  # the act is the real one
    for secret in (OPENAI, VALUE):
        assert secret.encode() not in term.raw
    assert REDACTED.encode() in prompt
    for raw in (b"\x1b]52", b"\x1b[2J", "\u202e".encode()):
        assert raw not in term.raw
