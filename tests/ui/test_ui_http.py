"""``tao ui`` over plain HTTP: pages, escaping, CSRF and host checks, approve/deny (M3, S3)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

from tao.state.config import RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store.factory import open_store

XSS = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def record_run(run_id: str, *, finish: bool = True, steps: int = 2) -> RunResult:
    """A run with hostile text everywhere a run can carry text."""
    result = RunResult(
        run_id=run_id, task=f"Task {XSS}", model=f"replay:{XSS}", started_at=time.time()
    )
    config = RunConfig(model=result.model, tools=("calc",))
    with open_store() as store:
        store.begin_run(result, config)
        for index in range(1, steps + 1):
            step = Step(
                index=index,
                kind=StepKind.ACTION,
                thought=f"thought {XSS}",
                tool="calculator",
                arguments={"expression": f"1+{XSS}"},
                observation=f"Observation text {XSS}",
                model_input=[{"role": "user", "content": f"input {XSS}"}],
                model_output=f"Action: calculator[{XSS}]",
                duration_s=0.5,
                input_tokens=120,
                output_tokens=30,
            )
            result.add_step(step)
            store.add_step(result, step)
        if finish:
            result.status, result.answer = Status.FINISHED, f"answer {XSS}"
            store.finish_run(result, config)
    return result


def test_pages_escape_every_run_text_M3(ui: Any) -> None:
    """M3: task, model, thought, action, observation, model input, answer all show as text."""
    record_run("0193aaaa0001")
    for path in ("/", "/runs/0193aaaa0001", "/api/runs/0193aaaa0001"):
        reply = ui.request(path)
        assert reply.status == 200, reply.body
        body = reply.body if not path.startswith("/api") else reply.json()["html"]
        assert "<script>window" not in body
        assert "<img src=x" not in body
        assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in body
    run_page = ui.request("/runs/0193aaaa0001").body
    for text in ("Observation text", "thought", "input", "answer", "Action: calculator["):
        assert f"{text} &lt;script&gt;" in run_page or f"{text}&lt;script&gt;" in run_page, text
    assert run_page.count("<script") == 1  # only the page's own /static/app.js


def test_security_headers_forbid_framing_and_inline_script_M3(ui: Any) -> None:
    """M3: no clickjacking of Approve, no inline script even if escaping ever failed."""
    headers = ui.request("/").headers
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_foreign_host_is_refused_against_dns_rebinding_M3(ui: Any) -> None:
    """M3: a page reached under another name (DNS rebinding) gets nothing."""
    record_run("0193aaaa0001")
    port = ui.server.port
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.nip.io:{port}"):
        reply = ui.request("/api/runs", headers={"Host": host})
        assert reply.status == 403, host
        assert "0193aaaa" not in reply.body
    for host in (f"localhost:{port}", "127.0.0.1", f"[::1]:{port}"):
        assert ui.request("/", headers={"Host": host}).status == 200, host


def test_unknown_and_prefix_run_ids_M3(ui: Any) -> None:
    """M3: a unique prefix redirects to the full id; an unknown id is a 404 page."""
    record_run("0193aaaa0001")
    reply = ui.request("/runs/0193a")
    assert (reply.status, reply.headers["Location"]) == (302, "/runs/0193aaaa0001")
    missing = ui.request("/runs/zzz")
    assert missing.status == 404
    assert "no run with id" in missing.body
    assert ui.request("/nothing").status == 404


def test_live_json_says_when_to_stop_listening_M3(ui: Any) -> None:
    """M3: a running run is live (the page polls); a finished one is not."""
    record_run("0193aaaa0001", finish=False, steps=1)
    running = ui.request("/api/runs/0193aaaa0001").json()
    assert (running["status"], running["steps"], running["live"]) == ("running", 1, True)
    record_run("0193bbbb0002")
    done = ui.request("/api/runs/0193bbbb0002").json()
    assert (done["status"], done["live"]) == ("finished", False)
    assert done["version"] != running["version"]


def test_state_changes_need_post_same_origin_and_the_csrf_token_S3(
    ui: Any, paused_run: Any
) -> None:
    """S3: without the page's token, from another origin, or by GET, nothing is decided."""
    run_id, project = paused_run()
    fields = ui.form(run_id)
    calls = [item for item in fields if item[0] == "call"]
    assert len(calls) == 1 and ("csrf", ui.csrf()) in fields
    port = ui.server.port
    approve = f"/runs/{run_id}/approve"
    attempts = [
        (calls, {}),  # no token at all
        ([("csrf", "guess"), *calls], {}),
        (fields, {"Origin": "http://evil.example"}),
        (fields, {"Origin": "null"}),
        (fields, {"Origin": ""}),  # a form without Origin: not from this page
        (fields, {"Origin": f"http://127.0.0.1:{port + 1}"}),
        (fields, {"Sec-Fetch-Site": "cross-site"}),
        (fields, {"Host": f"evil.example:{port}"}),
    ]
    for data, headers in attempts:
        reply = ui.request(approve, method="POST", data=data, headers=headers)
        assert reply.status == 403, (data, headers, reply.body)
    assert ui.request(approve).status in (404, 405)  # GET changes nothing
    with open_store() as store:
        assert store.get_summary(run_id).status is Status.AWAITING_APPROVAL
        checkpoint = store.load_state(run_id)
        assert checkpoint is None or dict(checkpoint.decisions) == {}
    assert (project / "old.log").exists()


def test_approve_does_what_the_cli_does_then_resumes_S3_M3(
    store_backend: str, ui: Any, paused_run: Any
) -> None:
    """S3/M3: Approve = tao runs approve + tao resume: the file goes, the run finishes.

    On both run logs: the paused state and the decision live in SQLite or PostgreSQL.
    """
    run_id, project = paused_run()
    fields = ui.form(run_id)
    reply = ui.decide(run_id)
    assert (reply.status, reply.headers["Location"]) == (303, f"/runs/{run_id}")
    ui.server.resumer.wait(60)
    with open_store() as store:
        result = store.get_run(run_id)
    assert (result.status, result.answer) == (Status.FINISHED, "done with old.log")
    assert not (project / "old.log").exists()
    again = ui.request(f"/runs/{run_id}/approve", method="POST", data=fields)
    assert again.status == 409
    assert "moved on" in again.body and "not waiting for approval" in again.body


def test_deny_with_a_reason_reaches_the_model_S3(ui: Any, paused_run: Any) -> None:
    """S3: Deny records the reason; the resumed run sees it as the Observation, file kept."""
    run_id, project = paused_run()
    reply = ui.decide(run_id, "deny", reason="keep <b>logs</b> for audit")
    assert reply.status == 303
    ui.server.resumer.wait(60)
    with open_store() as store:
        result = store.get_run(run_id)
    assert result.status is Status.FINISHED
    assert "denied" in (result.steps[0].observation or "")
    assert "keep <b>logs</b> for audit" in (result.steps[0].observation or "")
    assert (project / "old.log").exists()
    page = ui.request(f"/runs/{run_id}").body
    assert "keep &lt;b&gt;logs&lt;/b&gt; for audit" in page


def test_tao_ui_command_serves_on_loopback_and_reports_a_busy_port_M3(tao_home: Any) -> None:
    """M3: `tao ui --port N` listens on 127.0.0.1 only; a busy port is a one-line error."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "tao", "ui", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 1
        assert f"port {port} is already in use" in out.stderr
        assert "Traceback" not in out.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "tao", "ui", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1].strip("/"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            assert conn.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        proc.terminate()  # our own child
        proc.communicate(timeout=30)


def test_a_decision_made_in_the_cli_shows_and_the_page_resumes_it_S3(
    ui: Any, paused_run: Any, tao_cli: Any
) -> None:
    """S3: `tao runs approve` without `tao resume` shows as decided; the page can resume it."""
    run_id, project = paused_run()
    index = ui.request("/").body
    assert f'class="approval" data-run="{run_id}"' in index
    assert "Already approved" not in index
    assert tao_cli("runs", "approve", run_id[:10]).returncode == 0
    assert "Already approved" in ui.request(f"/runs/{run_id}").body
    reply = ui.decide(run_id)
    assert reply.status == 303
    ui.server.resumer.wait(60)
    with open_store() as store:
        assert store.get_summary(run_id).status is Status.FINISHED
    assert not (project / "old.log").exists()
    assert f'data-run="{run_id}"' not in ui.request("/").body.split("<h2>Runs</h2>")[0]
