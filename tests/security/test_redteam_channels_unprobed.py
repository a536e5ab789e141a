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
from tests.security.stored import home_files, postgres_cells, sqlite_cells

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
    is read back, so is one whose model is a pasted token, and the server logs every
    request: no answer, no log line and no cell of
    the run log holds either secret."""
    proc, port = served
    chat = "/v1/chat/completions"
    bad_role = {"messages": [{"role": SUMMARY, "content": "hi"}]}
    answers = {
        "model by name": _call(port, "GET", f"/v1/models/{TASK}"),
        "run by id": _call(port, "GET", f"/v1/runs/{TASK}"),
        "no route": _call(port, "GET", f"/nothing/{TASK}?key={OBSERVED}"),
        "no route, known value": _call(port, "GET", f"/v1/nothing?v={KNOWN}"),
        "model, every byte encoded": _call(
            port, "GET", "/v1/models/" + "".join(f"%{b:02X}" for b in TASK.encode())
        ),
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
    pasted = {"model": f"openai:{ARGUMENT}", "base_url": f"https://u:{OBSERVED}@h.example/v1"}
    posted = _call(port, "POST", "/v1/runs", {"task": "x", "config": pasted})
    assert posted[0] == 202, posted  # a token pasted as the model: queued, and read back
    summary += _call(port, "GET", f"/v1/runs/{json.loads(posted[1])['id']}")[1]
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert f"/v1/runs/{run_id}" in out + err  # each request was logged
    assert "".join(f"%{b:02X}" for b in TASK.encode()) not in out + err  # nor encoded
    channels = {name: body for name, (_, body) in answers.items()}
    channels |= {"run summary": summary, "server log": out + err}
    assert leaks_in(channels) + stored_leaks(tao_home) == []


# -- a queued run: every row tao submit and tao worker leave, SQLite or PostgreSQL --------


def test_a_queued_run_leaves_no_planted_secret_in_any_row_S8_R5(
    store_backend: str, tao_cli: Any, tao_home: Path, replay: Replay, tmp_path: Path
) -> None:
    """``tao submit`` records the run and its DBOS workflow, ``tao worker`` runs it: every
    cell of every table (tao's run log, DBOS's tables beside it; PostgreSQL: every schema)
    decoded and read, with the task, an observation, an argument and the reply each
    holding a secret, and a ``--pass-env`` value the tool read."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text(f"the key is {OBSERVED}; setting {KNOWN}\n")
    script = replay(
        [
            f"Thought: I remember {REPLY}.\nAction: read_file[notes.txt]",
            f"Thought: and the other.\nAction: read_file[{ARGUMENT}.txt]",
            f"Action: finish[done, {REPLY}]",
        ]
    )
    env = {"MY_SETTING": KNOWN}
    submitted = tao_cli(
        "submit", f"read the notes; the deploy token is {TASK}", "-m", f"replay:{script}",
        "-t", "files", "--project", str(project), "--pass-env", "MY_SETTING", env=env,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    run_id = submitted.stdout.strip()
    worker = subprocess.Popen(
        [sys.executable, "-m", "tao", "worker", "--concurrency", "1"],
        env={**os.environ, "TAO_HOME": str(tao_home), **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        waited = tao_cli("runs", "wait", run_id, "--json", "--timeout", "90")
        assert waited.returncode == 0, waited.stderr
        assert waited.json()["status"] == "finished"
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=60)
    steps = tao_cli("runs", "show", run_id, "--json").json()["steps"]
    assert REDACTED in (steps[0].get("observation") or ""), steps  # read, and hidden
    channels = {"worker output": out + err, "runs wait": waited.stdout + waited.stderr}
    if store_backend == "postgres":
        for table, column, text in postgres_cells(os.environ["TAO_DATABASE_URL"]):
            channels[f"{table}.{column}"] = text
        assert "dbos.workflow_status.workflow_uuid" in channels  # DBOS's rows were read too
        assert any(f"the deploy token is {REDACTED}" in text for text in channels.values())
    assert leaks_in(channels) + stored_leaks(tao_home) == []


# -- the web page: the runs index's event stream, the JSON endpoints, the error pages -----


@pytest.fixture
def page(tao_home: Path) -> Iterator[str]:
    """``tao ui`` over the test's run log, in a thread, on a free port: its URL."""
    from tao.store.factory import open_store
    from tao.ui import UiServer

    store = open_store()
    server = UiServer(store, 0).start()
    try:
        yield server.url
    finally:
        server.stop()
        store.close()


def _get(url: str, path: str) -> str:
    host, port = url.split("//", 1)[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path)
    return conn.getresponse().read().decode()


def _first_event(url: str, path: str) -> str:
    """The first server-sent event of a stream that stays open (the runs index is always
    live): read up to the blank line that ends it."""
    host, port = url.split("//", 1)[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path)
    response = conn.getresponse()
    assert response.status == 200, response.status
    lines: list[str] = []
    while not (lines and lines[-1] == "" and any(x.startswith("data:") for x in lines)):
        lines.append(response.fp.readline().decode().rstrip("\r\n"))
    conn.close()
    return "\n".join(lines)


def test_the_web_pages_index_stream_json_and_error_pages_hold_no_planted_secret_S8_S11(
    page: str, tao_cli: Any, replay: Replay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run paused on a write whose content, path, Thought and task hold secrets, and a
    finished run that read one: the runs index's event stream (``/live``, always open), its
    JSON (``/api/runs``, with filters), each run's JSON, and the 404 and 400 pages for a run
    id, route or filter that is itself a token, none shows a planted secret or the value of
    the page's own secret-named variable."""
    monkeypatch.setenv("RELEASE_TOKEN", KNOWN)
    (tmp_path / "notes.txt").write_text(f"the key is {OBSERVED}\n")
    call = json.dumps({"path": f"{ARGUMENT}.txt", "content": f"key={OBSERVED} {KNOWN}\n"})
    paused = replay([f"Thought: I keep {REPLY}.\nAction: write_file[{call}]"])
    done = replay(["Action: read_file[notes.txt]", f"Action: finish[{REPLY}]"])
    run_ids = []
    for script, tools in ((paused, "write"), (done, "files")):
        out = tao_cli(
            "run", f"keep the token {TASK} and {KNOWN}", "--model", f"replay:{script}",
            "--tools", tools, "--project", str(tmp_path), "--json",
            env={"RELEASE_TOKEN": KNOWN},
        )  # fmt: skip
        assert out.returncode in (0, 4), out.stdout + out.stderr
        run_ids.append(out.json()["run_id"])
    assert tao_cli("runs", "show", run_ids[0], "--json").json()["status"] == "awaiting_approval"
    channels = {
        "index events": _first_event(page, "/live"),
        "filtered index events": _first_event(page, "/live?status=awaiting_approval"),
        "index json": _get(page, "/api/runs"),
        "filtered index json": _get(page, "/api/runs?status=awaiting_approval"),
    }
    for run_id in run_ids:
        channels[f"run json {run_id}"] = _get(page, f"/api/runs/{run_id}")
    refused = ["/runs/", "/api/runs/", "/live/runs/", "/x/", "/?status=", "/api/runs?since="]
    for path in [f"{where}{TASK}" for where in [*refused, "/live?status="]]:
        channels[f"refusal {path[:12]}"] = _get(page, path)
    assert "event: update" in channels["index events"]
    assert run_ids[0][:8] in channels["index events"] and "write_file" in channels["index events"]
    assert leaks_in(channels) == []


# -- tao eval: its records, its output, its report --------------------------------------


def test_an_eval_keeps_secrets_in_its_question_page_argument_and_reply_out_of_every_output_S8(
    tao_cli: Any, tao_home: Path, chat_server: Any, tmp_path: Path
) -> None:
    """A data folder whose question holds a key and whose wiki page holds another; the
    model's Thought holds a third and its search argument a fourth: the model is never sent
    the page's key, and ``tao eval``'s ``--json``, table, ``eval report``, its records under
    ``$TAO_HOME/evals`` and the run log hold none of them; a second ``tao eval`` still finds
    the recorded answer to the question it redacted."""
    import shutil

    from tao.eval import sources

    data = tmp_path / "data"
    shutil.copytree(Path(sources.__file__).with_name("sample"), data)
    questions = data / "hotpotqa" / "questions_dev.jsonl"
    first, *rest = questions.read_text().splitlines()
    record = json.loads(first)
    record["question"] = f"Using token {TASK}: {record['question']}"
    questions.write_text("\n".join([json.dumps(record), *rest]) + "\n")
    wiki = data / "hotpotqa" / "wiki.jsonl"
    pages = [json.loads(line) for line in wiki.read_text().splitlines()]
    for page_ in pages:
        if page_["title"] == "Ed Wood":
            page_["text"] = f"Ed Wood kept the studio key {OBSERVED} in a drawer. " + page_["text"]
    wiki.write_text("".join(json.dumps(p) + "\n" for p in pages))
    chat_server.replies.extend(
        [
            f"Thought 1: I hold {REPLY}.\nAction 1: Search[Ed Wood]",
            f"Thought 2: now the other.\nAction 2: Search[{ARGUMENT}]",
            "Thought 3: both American.\nAction 3: Finish[yes]",
        ]
    )
    out = tao_cli(
        "eval", "hotpotqa", "--model", "openai:m", "--base-url", chat_server.base_url,
        "--strategy", "react", "--limit", "1", "--data", str(data), "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    asked = len(chat_server.requests)
    table = tao_cli(
        "eval", "hotpotqa", "--model", "openai:m", "--base-url", chat_server.base_url,
        "--strategy", "react", "--limit", "1", "--data", str(data),
    )  # fmt: skip
    report = tao_cli("eval", "report")
    assert len(chat_server.requests) == asked  # the redacted record still matched: reused
    sent = json.dumps(chat_server.requests)
    assert "kept the studio key" in sent and OBSERVED not in sent  # read, and hidden (S5)
    records = [p.read_text() for p in (tao_home / "evals").glob("*.jsonl")]
    assert records and "Using token" in records[0]  # the question is recorded...
    channels = {
        "eval --json": out.stdout + out.stderr,
        "eval table": table.stdout + table.stderr,
        "eval report": report.stdout + report.stderr,
    }
    assert leaks_in(channels) + stored_leaks(tao_home) == []  # ...redacted


# -- OpenTelemetry: every attribute, event and status, through the real SDK --------------


def test_spans_events_and_statuses_hold_no_planted_secret_S8(
    replay: Replay, chat_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real SDK's in-memory exporter, content capture on: a run whose task, tool
    argument, Thought and tool output hold secrets, whose tool fails with one in its
    message, and a run whose provider rejects the key and echoes it; with the value of a
    secret-named variable of the process in the output and the error. No span's name,
    attributes, events (exceptions included) or status description holds any of them."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tao import Agent, tool
    from tao.telemetry.otel import OpenTelemetry

    monkeypatch.setenv("VAULT_TOKEN", KNOWN)

    @tool
    def lookup(key: str) -> str:
        """Look a key up in the vault."""
        if key == "broken":
            raise ConnectionError(f"vault refused {SUMMARY} (token {os.environ['VAULT_TOKEN']})")
        return f"value: {OBSERVED} / {os.environ['VAULT_TOKEN']}"

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = replay(
        [
            f"Thought: I hold {REPLY}.\nAction: lookup[{ARGUMENT}]",
            "Thought: the broken one.\nAction: lookup[broken]",
            "Action: finish[done]",
        ]
    )
    agent = Agent(f"replay:{script}", [lookup], record=False)
    agent.telemetry = OpenTelemetry(provider, capture_content=True)
    result = agent.run(f"check the vault with {TASK}")
    assert result.status == "finished", result.error
    chat_server.replies.extend(
        [(401, {"error": {"message": f"Incorrect API key provided: {TASK} {KNOWN}"}})] * 4
    )
    failing = Agent("openai:m", [lookup], record=False, base_url=chat_server.base_url)
    failing.telemetry = OpenTelemetry(provider, capture_content=True)
    assert failing.run("x").status == "error"
    spans = exporter.get_finished_spans()
    seen = [
        json.dumps(
            [span.name, dict(span.attributes or {}), span.status.description,
             [[event.name, dict(event.attributes or {})] for event in span.events]],
            default=str,
        )
        for span in spans
    ]  # fmt: skip
    everything = "\n".join(seen)
    assert "gen_ai.tool.call.result" in everything and "ConnectionError" in everything
    assert any(span.status.description for span in spans)  # the failures were recorded
    assert leaks_in({"spans": everything}) == []
