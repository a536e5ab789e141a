"""Red team, secrets in the channels the earlier rounds did not probe (SPEC S5, S8, L15;
issue 26 items 4 and 7).

The earlier rounds read the model's request, ``--json``, ``runs show``, ``runs export``
and the files under TAO_HOME. Here a secret is planted in each place text enters a run
(the task, a tool's observation, a tool's argument, the model's reply, the summary a
model writes when the run is compacted) and in a variable of the process's own
environment, and every other channel is read for it: the summarize prompt and the
summary stored with the steps, the OpenTelemetry spans, ``tao serve`` (the runs API, its
errors, streamed or not, and its log), the web page's runs-index event stream and JSON
endpoints, the SQLite run log and the PostgreSQL rows a queued run leaves, read table by
table and column by column (JSON decoded, compressed cells inflated), and ``tao eval``.
Real ``tao`` processes, real HTTP servers on 127.0.0.1, real databases.

What the model itself is sent is its own business for the task and its own words (it
wrote the reply and the argument; the person gave the task): only what a tool returned is
checked there (S5). The chat completions ``tao serve`` answers are the model's words too,
returned to the client that asked, as a model server must.

Shapes only: none of these is a real credential.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.http import FakeServer, Reply, Request, chat_completion
from tests.fakes.otlp import OtlpReceiver
from tests.security.stored import home_files, sqlite_cells

from tao.redact import REDACTED
from tao.telemetry.attributes import CAPTURE_VARIABLE

Replay = Callable[[list[str]], Path]

#: Where each secret was planted. Provider shapes, so shape redaction must find them...
TASK = "ghp_" + "Task8Cv6Bn" * 4
OBSERVED = "sk-proj-" + "Obs7Er9Ty" * 6
ARGUMENT = "AKIA" + "ARGS7Q2W3E4R5T6Y"
REPLY = "xoxb-1234567890-" + "Reply9Kd" * 3
SUMMARY = "glpat-" + "Summ4Xy7Pq2Wr9Tz5Kc1"
#: ... and one with no shape at all: known only as the value of a secret-named variable
#: (or one passed with --pass-env) of the process that handles it.
KNOWN = "Zq7hunter2horse"
SECRETS = {
    "task": TASK, "observation": OBSERVED, "argument": ARGUMENT, "reply": REPLY,
    "summary": SUMMARY, "known": KNOWN,
}  # fmt: skip
#: The line a summarize compaction's prompt starts with (tao.run.policies.Summarize).
SUMMARIZE = "You compact the working notes of an agent"

pytestmark = pytest.mark.usefixtures("clean_known_registry")


def leaks_in(channels: dict[str, str]) -> list[tuple[str, str]]:
    """(secret, channel) for each secret found, as itself or JSON-escaped."""
    found = []
    for channel, text in channels.items():
        for name, secret in SECRETS.items():
            if secret in text or json.dumps(secret)[1:-1] in text:
                found.append((name, channel))
    return found


def stored_leaks(home: Path) -> list[tuple[str, str]]:
    """Every file under TAO_HOME but ``private/`` as bytes, and every SQLite file's cells
    decoded one by one (a leak may hide in a JSON escape or a compressed column)."""
    channels = {name: data.decode("utf-8", "replace") for name, data in home_files(home).items()}
    for path in home.rglob("*"):
        if path.is_file() and path.read_bytes()[:16] == b"SQLite format 3\x00":
            for table, column, text in sqlite_cells(path):
                channels[f"{path.name}:{table}.{column}"] = text
    return leaks_in(channels)


# -- compaction: the summarize prompt, the summary stored, recall, the spans --------------


class Scripted:
    """A chat-completions server on 127.0.0.1: the agent's replies in order, and a summary
    holding a secret whenever a summarize compaction asks for one."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.requests: list[Any] = []
        self.summaries: list[Any] = []

    def __call__(self, request: Request) -> Reply:
        self.requests.append(request.body)
        if SUMMARIZE in json.dumps(request.body):
            self.summaries.append(request.body)
            text = f"Read notes.txt twice; the key there was {SUMMARY}, keep it."
            return Reply.json(chat_completion(text, request.body))
        text = self.replies.pop(0) if self.replies else f"Action: finish[done, {REPLY}]"
        return Reply.json(chat_completion(text, request.body))


@pytest.mark.parametrize("policy", ["summarize", "elide"])
def test_a_compacted_run_keeps_every_planted_secret_out_of_every_channel_S5_S8_L15(
    policy: str, tao_cli: Any, tao_home: Path, tmp_path: Path
) -> None:
    """A run long enough to be compacted (a 1,500-token window): the summarize prompt holds
    no observed secret, the summary the model wrote is stored redacted, ``recall`` brings an
    observation back redacted, and neither ``--json``, ``runs show``, ``runs export``, the
    spans with content capture on, nor any cell of the run log holds a planted secret."""
    project = tmp_path / "proj"
    project.mkdir()
    filler = "a line of ordinary notes about the build\n" * 25
    (project / "notes.txt").write_text(f"{filler}the key is {OBSERVED}; setting {KNOWN}\n")
    server = Scripted(
        [
            f"Thought: I remember {REPLY}.\nAction: read_file[notes.txt]",
            f"Thought: and the other file.\nAction: read_file[{ARGUMENT}.txt]",
            "Thought: once more.\nAction: list_files[.]",
            "Thought: the first again.\nAction: recall[1]",
        ]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with FakeServer(server, prefix="/v1") as fake, OtlpReceiver() as receiver:
        env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, CAPTURE_VARIABLE: "true"}
        out = tao_cli(
            "run", f"read the notes; the deploy token is {TASK}", "--model", "openai:m",
            "--base-url", fake.base_url, "--protocol", "text", "--tools", "files",
            "--project", str(project), "--pass-env", "MY_SETTING", "--compaction", policy,
            "--context-window", "1500", "--max-steps", "8", "--json",
            env={**env, "MY_SETTING": KNOWN},
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        spans = list(receiver.spans)
    result = json.loads(out.stdout)
    run_id = result["run_id"]
    shown = tao_cli("runs", "show", run_id, "--json")
    compactions = [c for step in shown.json()["steps"] for c in step.get("compactions") or []]
    assert compactions, "the run was never compacted: the test would prove nothing"
    assert {c["policy"] for c in compactions} == {policy}
    observations = [step.get("observation") or "" for step in result["steps"]]
    assert any("the key is" in o and REDACTED in o for o in observations)  # read, and hidden
    if policy == "summarize":
        assert server.summaries, "no summary was asked for"
        stored = json.dumps(compactions)
        assert "Read notes.txt twice" in stored and REDACTED in stored  # kept, redacted
    # What a tool returned never reaches the model, the summarize prompt included (S5).
    assert [k for k in ("observation", "known") if SECRETS[k] in json.dumps(server.requests)] == []
    channels = {
        "--json": out.stdout + out.stderr,
        "runs show": tao_cli("runs", "show", run_id).stdout,
        "runs show --json": shown.stdout,
        "export --full": tao_cli("runs", "export", run_id, "--full").stdout,
        "spans": json.dumps([[s.name, s.attributes, s.status_message] for s in spans], default=str),
    }
    assert "gen_ai.input.messages" in channels["spans"]  # content was captured
    assert leaks_in(channels) + stored_leaks(tao_home) == []


# -- tao serve: the runs API, every refusal (streamed or not), the access log -------------


SERVE = (
    "import sys\n"
    "from tao.models import load_model\n"
    "from tao.server.http import serve_forever\n"
    "serve_forever(load_model('replay:' + sys.argv[1]), port=0, queue='jobs')\n"
)


@pytest.fixture
def served(tao_home: Path, replay: Replay) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``tao serve --queue jobs`` as its own process (a scripted model: ``tao serve``'s CLI
    takes local models only), with a secret-named variable in its environment."""
    script = replay([f"Thought: {REPLY}\nAction: finish[ok]"] * 4)
    env = {**os.environ, "TAO_HOME": str(tao_home), "DEPLOY_API_KEY": KNOWN}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(script)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        assert " at http://127.0.0.1:" in line, line + (proc.stderr.read() if proc.stderr else "")
        yield proc, int(line.rsplit(":", 1)[1].split("/")[0])
    finally:
        if proc.poll() is None:
            proc.terminate()


def _call(port: int, method: str, path: str, body: object = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data is not None else {}
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    return response.status, response.read().decode()


def test_tao_serve_answers_and_logs_no_secret_sent_to_it_or_known_to_it_S8_S9(
    served: tuple[subprocess.Popen[str], int], tao_home: Path
) -> None:
    """Every refusal quotes what was sent (a model, run id or route named by a token, a
    setting's bad value, an unknown field, a chat message's role; streamed or not), a run
    posted with a task holding a key and the value of the server's own ``DEPLOY_API_KEY``
    is read back, and the server logs every request: no answer, no log line and no cell of
    the run log holds either secret."""
    proc, port = served
    chat = "/v1/chat/completions"
    bad_role = {"messages": [{"role": SUMMARY, "content": "hi"}]}
    answers = {
        "model by name": _call(port, "GET", f"/v1/models/{TASK}"),
        "run by id": _call(port, "GET", f"/v1/runs/{TASK}"),
        "no route": _call(port, "GET", f"/nothing/{TASK}?key={OBSERVED}"),
        "bad setting": _call(
            port, "POST", "/v1/runs", {"task": "x", "config": {"max_steps": ARGUMENT}}
        ),
        "tools named by a token": _call(
            port, "POST", "/v1/runs", {"task": "x", "config": {"tools": [ARGUMENT]}}
        ),
        "unknown field": _call(port, "POST", "/v1/runs", {"task": "x", REPLY: 1}),
        "bad role": _call(port, "POST", chat, bad_role),
        "bad role, streamed": _call(port, "POST", chat, {**bad_role, "stream": True}),
    }
    accepted = {name for name, (status, _) in answers.items() if status < 400}
    assert accepted <= {"tools named by a token"}, answers  # queued; a worker says why later
    posted = _call(port, "POST", "/v1/runs", {"task": f"deploy with {TASK} and {KNOWN}"})
    assert posted[0] == 202, posted
    run_id = json.loads(posted[1])["id"]
    status, summary = _call(port, "GET", f"/v1/runs/{run_id}")
    assert status == 200 and json.loads(summary)["task"] == f"deploy with {REDACTED} and {REDACTED}"
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert f"/v1/runs/{run_id}" in out + err  # each request was logged
    channels = {name: body for name, (_, body) in answers.items()}
    channels |= {"run summary": summary, "server log": out + err}
    assert leaks_in(channels) + stored_leaks(tao_home) == []
