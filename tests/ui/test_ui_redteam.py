"""Red team for ``tao ui`` (SPEC S7, S9; issue 12 items 2 and 7): a real server on 127.0.0.1,
a real paused run, raw sockets for what no browser sends.

Per class, several variants: DNS-rebinding Host names on every route, cross-site origins on
Approve, media types and sizes, malformed bodies and ``Content-Length`` forms, and the
stale form: an Approve fetched for one call, submitted after the run moved on.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from tests.server.rawhttp import Reply, request, send

from tao.approval import decide as approvals
from tao.state.result import Status
from tao.store.factory import open_store

ROUTES = ["/", "/api/runs", "/runs/{run}", "/api/runs/{run}", "/live", "/static/app.js"]


def nothing_decided(run_id: str) -> bool:
    with open_store() as store:
        checkpoint = store.load_state(run_id)
        waiting = store.get_summary(run_id).status is Status.AWAITING_APPROVAL
    return waiting and (checkpoint is None or dict(checkpoint.decisions) == {})


def post_form(ui: Any, run_id: str, fields: list[tuple[str, str]], **headers: str) -> Reply:
    base = {"Content-Type": "application/x-www-form-urlencoded", "Origin": ui.origin}
    base.update({k.replace("_", "-"): v for k, v in headers.items()})
    path = f"/runs/{run_id}/approve"
    return request(ui.server.port, "POST", path, base, urlencode(fields).encode())


def refused(reply: Reply, *statuses: int) -> None:
    assert reply.status in statuses, (reply.status, reply.text[:300])
    assert "Traceback" not in reply.text


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", "0.0.0.0:{port}",
     "localhost.evil.example:{port}", "127.0.0.1:{port}@evil.example", "[::ffff:7f00:1]:{port}"],
)  # fmt: skip
def test_rebinding_hosts_get_nothing_on_any_route_S9(ui: Any, paused_run: Any, host: str) -> None:
    run_id, _ = paused_run()
    host = host.format(port=ui.server.port)
    for route in ROUTES:
        reply = request(ui.server.port, "GET", route.format(run=run_id), host=host)
        refused(reply, 403, 421)
        assert run_id not in reply.text
    refused(post_form(ui, run_id, ui.form(run_id), Host=host), 403, 421)
    assert nothing_decided(run_id)


@pytest.mark.parametrize(
    "headers",
    [{"Origin": "http://evil.example"}, {"Origin": "null"}, {"Origin": "https://127.0.0.1:{port}"},
     {"Origin": "http://localhost:{other}"}, {"Origin": "http://127.0.0.1.evil.example:{port}"},
     {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}, {"Origin": ""}],
)  # fmt: skip
def test_cross_site_approvals_are_refused_S9(
    ui: Any, paused_run: Any, headers: dict[str, str]
) -> None:
    run_id, project = paused_run()
    port = ui.server.port
    filled = {k: v.format(port=port, other=port + 1) for k, v in headers.items()}
    reply = ui.request(f"/runs/{run_id}/approve", method="POST", data=ui.form(run_id),
                       headers=filled)  # fmt: skip
    refused(reply, 403)
    assert nothing_decided(run_id) and (project / "old.log").exists()


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "multipart/form-data; boundary=x", "application/xml", "",
     "application/x-www-form-urlencoded; charset=latin-1"],
)  # fmt: skip
def test_only_forms_and_json_are_taken_S9(ui: Any, paused_run: Any, content_type: str) -> None:
    run_id, _ = paused_run()
    headers = {"Origin": ui.origin}
    if content_type:
        headers["Content-Type"] = content_type
    body = urlencode(ui.form(run_id)).encode()
    refused(request(ui.server.port, "POST", f"/runs/{run_id}/approve", headers, body), 415)
    assert nothing_decided(run_id)


def test_bodies_are_bounded_and_malformed_ones_are_4xx_S9(ui: Any, paused_run: Any) -> None:
    run_id, _ = paused_run()
    fields = ui.form(run_id)
    refused(post_form(ui, run_id, [*fields, ("reason", "x" * 70_000)]), 413)
    refused(post_form(ui, run_id, [*fields] + [("call", str(n)) for n in range(100)]), 400)
    path, port = f"/runs/{run_id}/approve", ui.server.port
    form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": ui.origin}
    refused(request(port, "POST", path, form, b"csrf=\xff\xfe&call=\xc3"), 400)
    as_json = {"Content-Type": "application/json", "X-CSRF-Token": ui.csrf()}
    for body in (b"{", b"[" * 60_000, b'{"call": 5}', b'{"call": ["x"], "reason": 7}', b"null"):
        refused(request(port, "POST", path, as_json, body), 400)
    for length in ("abc", "-1", "1e3", "0x10"):
        raw = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {ui.origin}\r\n"
               "Content-Type: application/x-www-form-urlencoded\r\n"
               f"Content-Length: {length}\r\n\r\ncsrf=x").encode()  # fmt: skip
        reply = send(port, raw)
        assert 400 <= reply.status < 500 and "Traceback" not in reply.text, length
    assert nothing_decided(run_id)


def test_a_slow_body_gets_408_and_the_page_stays_up_S9(ui: Any) -> None:
    head = (f"POST /runs/x/approve HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {ui.origin}\r\n"
            "Content-Type: application/json\r\nContent-Length: 50\r\n\r\n{").encode()  # fmt: skip
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", ui.server.port), timeout=30) as conn:
        conn.sendall(head)
        assert conn.recv(100).startswith(b"HTTP/1.1 408")
    assert time.monotonic() - started < 20
    assert ui.request("/").status == 200


def test_every_answer_carries_the_security_headers_S9(ui: Any) -> None:
    for path in ("/", "/nothing", "/runs/zzz", "/static/app.js"):
        headers = ui.request(path).headers
        policy = headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, path
        assert "unsafe-inline" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "same-origin"
    refusal = request(ui.server.port, "GET", "/", host="evil.example")
    assert refusal.headers["x-frame-options"] == "DENY"


def test_the_card_names_the_call_and_shows_the_thought_and_preview_S7(
    ui: Any, paused_run: Any
) -> None:
    run_id, _ = paused_run(thought="old.log is stale <b>really</b>")
    (waiting,) = approvals.pending_calls(run_id)
    page = ui.request(f"/runs/{run_id}").body
    assert page.count(f'name="call" value="{waiting.call.id}"') == 2  # Approve and Deny
    assert "old.log is stale &lt;b&gt;really&lt;/b&gt;" in page
    assert waiting.call.preview and waiting.call.preview.split()[0] in page


def two_deletes(tao_cli: Callable[..., Any], replay: Any, tmp_path: Path) -> tuple[str, Path]:
    project = tmp_path / "two"
    project.mkdir()
    for name in ("old.log", "keep.db"):
        (project / name).write_text("data\n", encoding="utf-8")
    script = replay(["Thought: Stale.\nAction: delete_file[old.log]",
                     "Thought: And this.\nAction: delete_file[keep.db]",
                     "Thought: Done.\nAction: finish[done]"])  # fmt: skip
    out = tao_cli("run", "Clean up", "--model", f"replay:{script}", "--tools", "files,write",
                  "--project", str(project), "--no-input", "--json")  # fmt: skip
    assert out.returncode == 4, out.stderr
    return str(out.json()["run_id"]), project


def test_a_stale_form_cannot_approve_the_next_call_S7(
    ui: Any, tao_cli: Any, replay: Any, tmp_path: Path
) -> None:
    """The form for the first delete, submitted once the run waits on the second: 409."""
    run_id, project = two_deletes(tao_cli, replay, tmp_path)
    stale = ui.form(run_id)
    assert tao_cli("runs", "approve", run_id).returncode == 0
    tao_cli("resume", run_id, "--no-input")
    assert not (project / "old.log").exists()
    assert approvals.pending_calls(run_id)[0].call.arguments == {"path": "keep.db"}
    reply = ui.request(f"/runs/{run_id}/approve", method="POST", data=stale)
    assert reply.status == 409 and "moved on" in reply.body
    assert "Traceback" not in reply.body
    assert nothing_decided(run_id) and (project / "keep.db").exists()
    no_call = [item for item in ui.form(run_id) if item[0] == "csrf"]
    refused(ui.request(f"/runs/{run_id}/approve", method="POST", data=no_call), 400)
    assert nothing_decided(run_id)


def test_a_json_client_decides_with_the_token_and_the_call_S7(ui: Any, paused_run: Any) -> None:
    run_id, project = paused_run()
    (waiting,) = approvals.pending_calls(run_id)
    body = json.dumps({"call": [waiting.call.id], "reason": "not today"}).encode()
    path, port = f"/runs/{run_id}/deny", ui.server.port
    without = request(port, "POST", path, {"Content-Type": "application/json"}, body)
    refused(without, 403)
    headers = {"Content-Type": "application/json", "X-CSRF-Token": ui.csrf()}
    reply = request(port, "POST", path, headers, body)
    assert reply.status == 200, reply.text
    assert reply.json() == {"run_id": run_id, "calls": [waiting.call.id], "approved": False}
    ui.server.resumer.wait(60)
    assert (project / "old.log").exists()


def test_live_updates_stream_as_server_sent_events_M3(ui: Any, paused_run: Any) -> None:
    run_id, _ = paused_run()
    page = ui.request(f"/runs/{run_id}").body
    assert f'data-live="/live/runs/{run_id}"' in page
    version = page.split('data-version="', 1)[1].split('"', 1)[0]
    with socket.create_connection(("127.0.0.1", ui.server.port), timeout=30) as conn:
        conn.sendall(f"GET /live/runs/{run_id}?v={version} HTTP/1.1\r\n"
                     f"Host: 127.0.0.1:{ui.server.port}\r\n\r\n".encode())  # fmt: skip
        time.sleep(0.8)
        assert approvals.pending_calls(run_id)  # nothing changed yet: no update sent
        assert ui.decide(run_id).status == 303
        seen = b""
        while b"event: end" not in seen:
            chunk = conn.recv(65536)
            assert chunk, seen[-500:]
            seen += chunk
    head, _, stream = seen.partition(b"\r\n\r\n")
    assert b"text/event-stream" in head
    events = [json.loads(line[6:]) for line in stream.split(b"\n") if line.startswith(b"data: {")]
    updates = [event for event in events if "version" in event]
    assert updates[0]["html"] and updates[-1]["status"] == "finished"
    assert updates[-1]["live"] is False
    assert ui.request("/live/runs/zzz").status == 404
