"""``tao serve --queue``: agent runs submitted over HTTP go to the queue (issue 28, SPEC S9)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tao.models import load_model
from tao.server import Running, make_app
from tao.store.factory import open_store
from tao.workers.queue import client


def call(port: int, method: str, path: str, body: object = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data is not None else {}
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def test_a_run_posted_to_the_server_is_queued_for_the_workers_not_run_there(
    replay: Callable[[list[str]], Path],
) -> None:
    """Issue 28: POST /v1/runs records the run `queued` with its settings and enqueues its
    workflow (a worker runs it; the server runs nothing); GET /v1/runs/ID reads it back; a
    bad body is a 400 naming the field, recording nothing (an unknown setting or tool set
    too, which a worker would meet only after the run was queued); an unknown id is a 404."""
    script = str(replay(["Action: finish[4]"]))
    app = make_app(load_model(f"replay:{script}"), queue="jobs")
    with Running(app) as running:
        status, made = call(
            running.port,
            "POST",
            "/v1/runs",
            {"task": "2+2?", "config": {"model": f"replay:{script}", "tools": ["calc"]}},
        )
        assert status == 202, made
        assert (made["status"], made["queue"]) == ("queued", "jobs")
        status, shown = call(running.port, "GET", f"/v1/runs/{made['id']}")
        assert status == 200
        assert (shown["status"], shown["task"], shown["config"]["tools"]) == (
            "queued",
            "2+2?",
            ["calc"],
        )
        assert shown["config"]["queue"] == "jobs"
        flow = client().retrieve_workflow(made["id"]).get_status()
        assert (flow.status, flow.queue_name) == ("ENQUEUED", "jobs")

        status, refused = call(
            running.port, "POST", "/v1/runs", {"task": "x", "config": {"max_steps": 0}}
        )
        assert status == 400 and "max_steps" in refused["error"]["message"]
        status, refused = call(running.port, "POST", "/v1/runs", {"task": "", "extra": 1})
        assert status == 400 and "extra" in refused["error"]["message"]
        status, refused = call(
            running.port, "POST", "/v1/runs", {"task": "x", "config": {"max_stepz": 3}}
        )  # a misspelled setting would be dropped silently by the log's reader
        message = refused["error"]["message"]
        assert status == 400 and "unknown setting(s) max_stepz" in message
        assert "max_steps" in message  # the valid ones are named
        status, refused = call(
            running.port, "POST", "/v1/runs", {"task": "x", "config": {"tools": ["calc,wikki"]}}
        )  # a worker would fail on it after the run was queued
        assert status == 400 and "unknown tool set 'wikki'" in refused["error"]["message"]
        status, missing = call(running.port, "GET", "/v1/runs/ffffffff")
        assert status == 404 and "no run" in missing["error"]["message"]
    with open_store() as store:
        assert [s.run_id for s in store.list_runs()] == [made["id"]]


def test_two_server_replicas_share_one_queue_and_one_run_log(
    replay: Callable[[list[str]], Path],
) -> None:
    """Issue 28, item 6: `tao serve --queue` as two replicas over one PostgreSQL: a run
    posted to either is on the one queue, and either replica reads any run back."""
    script = str(replay(["Action: finish[4]"]))
    config = {"model": f"replay:{script}", "tools": ["calc"]}
    apps = [make_app(load_model(f"replay:{script}"), queue="jobs") for _ in range(2)]
    with Running(apps[0]) as first, Running(apps[1]) as second:
        made = [
            call(server.port, "POST", "/v1/runs", {"task": f"{n}+{n}?", "config": config})[1]
            for n, server in enumerate((first, second, first))
        ]
        for run in made:
            for server in (first, second):
                status, shown = call(server.port, "GET", f"/v1/runs/{run['id']}")
                assert (status, shown["status"]) == (200, "queued"), shown
            flow = client().retrieve_workflow(run["id"]).get_status()
            assert (flow.status, flow.queue_name) == ("ENQUEUED", "jobs")
    with open_store() as store:
        assert {s.run_id for s in store.list_runs()} == {run["id"] for run in made}
    assert len({run["id"] for run in made}) == 3
