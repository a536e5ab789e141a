"""The web page in headless Chromium: who decided on each call, and the page's nits (issue 30).

A decision taken on the page, through its JSON endpoint or with ``tao runs approve`` is shown
with who took it, when and from where; the run's cost is said once; no status badge is cut
at 1280 or 800 px; a follow-up run links to the run it continues (SPEC S3, M3).
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tao.state.config import RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store.factory import open_store

WIDTHS = (1280, 800)

#: Each status badge against its table cell, and against its own content.
_BADGES = """() => [...document.querySelectorAll('td.c-status .badge, .run-head .badge')].map(b => {
  const cell = b.closest('td') || b.parentElement, r = b.getBoundingClientRect(),
        c = cell.getBoundingClientRect();
  return {text: b.innerText, inside: r.left >= c.left - 0.5 && r.right <= c.right + 0.5,
          whole: b.scrollWidth <= b.clientWidth + 0.5 && cell.scrollWidth <= cell.clientWidth};
})"""


def _as(monkeypatch: pytest.MonkeyPatch, person: str) -> None:
    """The server runs in this process: who decides on its page is this process's user."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, person)


def test_a_decision_on_the_page_shows_who_when_and_where_S3_M3(
    ui: Any, paused_run: Any, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _as(monkeypatch, "hal-on-the-page")
    run_id, _ = paused_run()
    page.goto(f"{ui.url}runs/{run_id}")
    page.get_by_role("button", name="Approve").click()
    page.locator(".run-head .badge", has_text="finished").wait_for(timeout=60_000)
    note = page.locator("article.step").first.locator(".decision").inner_text()
    assert note.startswith("approved by hal-on-the-page via web at 20"), note
    assert page.locator("article.step").nth(1).locator(".decision").count() == 0


def test_a_denial_on_the_page_and_a_cli_decision_waiting_are_shown_S3(
    ui: Any, paused_run: Any, page: Any, tao_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, _ = paused_run()
    person = {"LOGNAME": "ivy-in-a-shell", "USER": "ivy-in-a-shell"}
    assert tao_cli("runs", "approve", run_id, env=person).returncode == 0
    page.goto(f"{ui.url}runs/{run_id}")
    card = page.locator(".approval .decision").inner_text()
    assert card.startswith("approved by ivy-in-a-shell via cli at "), card
    _as(monkeypatch, "jo-changes-her-mind")  # decide again on the page: the page's record wins
    page.get_by_placeholder("Reason (optional)").fill("on second thought, keep it")
    page.get_by_role("button", name="Deny").click()
    page.locator(".run-head .badge", has_text="finished").wait_for(timeout=60_000)
    note = page.locator("article.step .decision.denied").inner_text()
    assert note.startswith("denied by jo-changes-her-mind via web at "), note
    assert note.endswith(": on second thought, keep it")


def test_a_decision_through_the_json_endpoint_says_api_S3(
    ui: Any, paused_run: Any, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _as(monkeypatch, "kim-with-a-script")
    run_id, _ = paused_run()
    calls = [value for name, value in ui.form(run_id) if name == "call"]
    request = urllib.request.Request(
        f"{ui.origin}/runs/{run_id}/approve",
        data=json.dumps({"call": calls, "reason": "the nightly job wrote it"}).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "X-CSRF-Token": ui.csrf()}
        | {"Origin": ui.origin},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert json.loads(reply.read())["approved"] is True
    page.goto(f"{ui.url}runs/{run_id}")
    page.locator(".run-head .badge", has_text="finished").wait_for(timeout=60_000)
    note = page.locator("article.step .decision").inner_text()
    assert note.startswith("approved by kim-with-a-script via api at "), note
    assert note.endswith(": the nightly job wrote it"), note  # an approval's reason is kept


def _record(run_id: str, status: Status, *, parent: str | None = None, cost: float | None = None,
            pending: bool = False) -> None:  # fmt: skip
    from tao.state.config import PendingCall

    result = RunResult(run_id=run_id, task=f"task of {run_id}", model="local",
                       started_at=time.time(), parent_id=parent)  # fmt: skip
    with open_store() as store:
        store.begin_run(result, RunConfig(model="local"))
        step = Step(index=1, kind=StepKind.FINAL, tool="finish", arguments={"answer": "ok"},
                    duration_s=0.3, input_tokens=20, output_tokens=4, cost_usd=cost)  # fmt: skip
        result.add_step(step)
        result.status, result.answer, result.duration_s = status, "ok", 1.5
        if pending:
            result.pending = [PendingCall(step=2, position=0, tool="write_file",
                                          arguments={"path": "a"})]  # fmt: skip
        store.finish_run(result, RunConfig(model="local"))


def test_no_status_badge_is_cut_at_1280_or_800_px_M3(ui: Any, page: Any, artifacts: Path) -> None:
    statuses = [Status.AWAITING_APPROVAL, Status.MAX_STEPS, Status.INTERRUPTED,
                Status.CANCELLED, Status.FINISHED, Status.ERROR]  # fmt: skip
    for n, status in enumerate(statuses):
        _record(f"0193eeee{n:04d}", status)
    page.goto(ui.url)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"ui-badges-{width}.png"), full_page=True)
        seen = page.evaluate(_BADGES)
        assert len(seen) == len(statuses), seen
        cut = [badge for badge in seen if not (badge["inside"] and badge["whole"])]
        assert not cut, (width, cut)
    page.goto(f"{ui.url}runs/0193eeee0000")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        (head,) = page.evaluate(_BADGES)
        assert head["inside"] and head["whole"], (width, head)


def test_the_cost_is_said_once_and_a_follow_up_links_to_its_parent_M3(ui: Any, page: Any) -> None:
    _record("0193ffff0001", Status.FINISHED, cost=0.0123)
    _record("0193ffff0002", Status.FINISHED, parent="0193ffff0001", cost=0.0021)
    page.goto(f"{ui.url}runs/0193ffff0002")
    head = page.locator(".run-head").inner_text()
    assert head.count("$0.0021") == 1 and head.count("cost") == 1, head
    link = page.locator(".run-head .parent a")
    assert link.inner_text() == "0193ffff0001"
    link.click()
    page.wait_for_url(f"{ui.url}runs/0193ffff0001")
    assert page.locator(".run-head h1").inner_text() == "task of 0193ffff0001"
    assert page.locator(".run-head .parent").count() == 0  # the first run continues nothing
