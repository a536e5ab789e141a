"""``tao ui`` end to end in headless Debian Chromium, driven by Playwright (SPEC M3, S3).

Skips with the reason when /usr/bin/chromium or playwright is missing; .ci/run
installs both. Screenshots go to $TAO_ARTIFACTS (default: artifacts/ in the checkout).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from tao.state.config import RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store.factory import open_store


def test_see_a_paused_run_approve_it_and_watch_it_finish_S3_M3(
    store_backend: str, ui: Any, paused_run: Any, page: Any, artifacts: Path
) -> None:
    """S3/M3: open the page, see the paused run, click Approve, see it finish, screenshot."""
    run_id, project = paused_run(thought="old.log is a stale log file; deleting it cleans up.")
    page.goto(ui.url)
    card = page.locator(f'.approval[data-run="{run_id}"]')
    card.wait_for()
    assert "delete_file(path='old.log')" in card.inner_text()
    assert "DELETES" in card.inner_text().upper()
    assert "delete old.log" in card.inner_text()  # the tool's preview
    page.screenshot(path=str(artifacts / f"ui-paused-{store_backend}.png"), full_page=True)

    card.get_by_role("button", name="Approve").click()
    page.wait_for_url(re.compile(f"/runs/{run_id}$"))
    badge = page.locator(".run-head .badge")
    badge.filter(has_text="finished").wait_for(timeout=60_000)  # live update, no reload
    page.locator(".answer", has_text="done with old.log").wait_for()
    steps = page.locator("article.step")
    assert steps.count() == 2
    assert "delete_file" in steps.nth(0).inner_text()
    assert not (project / "old.log").exists()
    page.locator("details.model-io").first.click()  # model input on demand
    page.locator(".msg .role", has_text="system").first.wait_for()
    shot = artifacts / f"ui-approval-{store_backend}.png"
    page.screenshot(path=str(shot), full_page=True)
    if store_backend == "sqlite":
        page.screenshot(path=str(artifacts / "ui-approval.png"), full_page=True)
    assert shot.stat().st_size > 10_000


def test_deny_with_a_reason_from_the_page_S3(ui: Any, paused_run: Any, page: Any) -> None:
    """S3: Deny with a typed reason; the model is told and finishes; the file is kept."""
    run_id, project = paused_run()
    page.goto(f"{ui.url}runs/{run_id}")
    page.get_by_placeholder("Reason (optional)").fill("keep it for the audit")
    page.get_by_role("button", name="Deny").click()
    page.locator(".run-head .badge", has_text="finished").wait_for(timeout=60_000)
    observation = page.locator(".observation").first.inner_text()
    assert "denied" in observation
    assert "keep it for the audit" in observation
    assert (project / "old.log").exists()


def test_script_in_an_observation_shows_as_text_and_never_runs_M3(ui: Any, page: Any) -> None:
    """M3: a tool output holding <script> is displayed literally; no script of it executes."""
    hostile = "<script>window.pwned = 1; alert('x')</script><img src=x onerror=\"window.pwned=2\">"
    result = RunResult(
        run_id="0193dddd0001", task="Read the README", model="replay:x", started_at=time.time()
    )
    step = Step(
        index=1,
        kind=StepKind.ACTION,
        thought="Read it.",
        tool="read_file",
        arguments={"path": "README.md"},
        observation=hostile,
        model_input=[{"role": "user", "content": hostile}],
        model_output="Action: read_file[README.md]",
        duration_s=0.2,
        input_tokens=50,
        output_tokens=9,
    )
    config = RunConfig(model="replay:x", tools=("files",))
    with open_store() as store:
        store.begin_run(result, config)
        result.add_step(step)
        store.add_step(result, step)
        result.status, result.answer = Status.FINISHED, "ok"
        store.finish_run(result, config)
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(f"{ui.url}runs/0193dddd0001")
    shown = page.locator(".observation pre").inner_text()
    assert shown == hostile
    assert page.evaluate("window.pwned") is None
    assert page.locator(".observation img").count() == 0
    assert dialogs == []


def test_a_running_run_updates_live_M3(ui: Any, page: Any) -> None:
    """M3: steps recorded while the page is open appear without a reload."""
    result = RunResult(
        run_id="0193eeee0001", task="Count to three", model="replay:x", started_at=time.time()
    )
    config = RunConfig(model="replay:x", tools=("calc",))
    with open_store() as store:
        store.begin_run(result, config)
        page.goto(f"{ui.url}runs/0193eeee0001")
        page.locator(".thinking").wait_for()
        for index in (1, 2, 3):
            step = Step(
                index=index,
                kind=StepKind.ACTION,
                thought=f"Step {index}.",
                tool="calculator",
                arguments={"expression": f"{index}+0"},
                observation=str(index),
                model_output=f"Action: calculator[{index}+0]",
                duration_s=0.1,
                input_tokens=5,
                output_tokens=2,
            )
            result.add_step(step)
            store.add_step(result, step)
            page.locator(f"#step-{index}").wait_for(timeout=10_000)
        result.status, result.answer = Status.FINISHED, "3"
        store.finish_run(result, config)
    page.locator(".run-head .badge", has_text="finished").wait_for(timeout=10_000)
    assert page.locator(".thinking").count() == 0


def test_a_cross_site_form_cannot_approve_S3(ui: Any, paused_run: Any, page: Any) -> None:
    """S3: a page on another origin posting to the Approve URL gets 403; nothing is decided."""
    run_id, project = paused_run()
    responses: list[int] = []
    page.on("response", lambda r: responses.append(r.status) if "/approve" in r.url else None)
    attacker = (
        f'<form id="f" method="post" action="{ui.url}runs/{run_id}/approve">'
        '<input name="csrf" value="guessed"></form>'
        "<script>document.getElementById('f').submit()</script>"
    )
    page.set_content(attacker)  # about:blank origin: a different site
    page.wait_for_load_state()
    page.wait_for_timeout(500)
    assert responses == [403]
    with open_store() as store:
        assert store.get_summary(run_id).status == "awaiting_approval"
    assert (project / "old.log").exists()
