"""The run list and run pages of ``tao ui`` in headless Chromium, at 1280 and 800 px (SPEC M3).

A table that fits its container with long tasks cut by an ellipsis, search, status and
model filters and pages driven by typing and clicking, duration and cost columns, eval
runs tagged with their question, coloured diffs, and the paused step's Thought.
Screenshots go to $TAO_ARTIFACTS (default: artifacts/ in the checkout).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tao.state.config import EvalTag, RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store import Store
from tao.store.factory import open_store
from tao.ui import pages

WIDTHS = (1280, 800)
LONG_TASK = "Summarise " + "every chapter of the very long handbook " * 12 + "THE-END"
NO_SPACES = "x" * 300

#: Measured in the page: the document, the table's container, and the first long task cell.
_OVERFLOW = """() => {
  const doc = document.scrollingElement, wrap = document.querySelector('.table-wrap');
  const cell = document.querySelector('td.c-task a');
  return {doc: [doc.scrollWidth, doc.clientWidth], wrap: [wrap.scrollWidth, wrap.clientWidth],
          cell: [cell.scrollWidth, cell.clientWidth],
          ellipsis: getComputedStyle(cell).textOverflow};
}"""


def _record(store: Store, run_id: str, task: str, **fields: Any) -> None:
    """One finished run, recorded the way the agent records it."""
    config: RunConfig = fields.pop("config", RunConfig(model=fields.get("model", "local")))
    result = RunResult(run_id=run_id, task=task, model=fields.pop("model", "local"),
                       started_at=fields.pop("started_at"))  # fmt: skip
    observation = fields.pop("observation", None)
    acted = {"kind": StepKind.ACTION, "tool": "run_command", "arguments": {"command": "git diff"}}
    final = {"kind": StepKind.FINAL, "tool": "finish", "arguments": {"answer": "ok"}}
    step = Step(index=1, thought="Done.", model_output="Action: finish[ok]", duration_s=0.4,
                input_tokens=30, output_tokens=5, observation=observation,
                **(acted if observation else final))  # fmt: skip
    store.begin_run(result, config)
    result.add_step(step)
    result.status = fields.pop("status", Status.FINISHED)
    result.answer, result.duration_s = "ok", 2.5
    store.finish_run(result, config)


def _seed(count: int) -> None:
    """``count`` runs: every third on another model and an error; two long tasks; newest last."""
    with open_store() as store:
        for n in range(count):
            odd = n % 3 == 2
            task = f"Task {n:02d}: " + ("read the README" if odd else "count files")
            _record(store, f"0193aaaa{n:04d}", task, started_at=1_700_000_000.0 + n,
                    model="openai:some-very-long-model-name-2026-12-01" if odd else "local",
                    status=Status.ERROR if odd else Status.FINISHED)  # fmt: skip
        _record(store, "0193bbbb0001", LONG_TASK, started_at=1_700_001_000.0)
        _record(store, "0193bbbb0002", NO_SPACES, started_at=1_700_001_001.0)


def test_the_runs_table_fits_at_1280_and_800_px_with_ellipsis_M3(
    ui: Any, page: Any, artifacts: Path
) -> None:
    """M3: at 1280 and 800 px nothing spills out (page, table container); a long task is cut
    with an ellipsis and kept whole in the title; duration and cost columns are there."""
    _seed(6)
    page.goto(ui.url)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"ui-runs-{width}.png"), full_page=True)
        seen = page.evaluate(_OVERFLOW)
        assert seen["doc"][0] <= seen["doc"][1], (width, seen)
        assert seen["wrap"][0] <= seen["wrap"][1], (width, seen)
        assert seen["cell"][0] > seen["cell"][1], "the long task is cut"
        assert seen["ellipsis"] == "ellipsis"
    long_cell = page.locator('tr[data-run="0193bbbb0001"] td.c-task')
    assert long_cell.get_attribute("title") == LONG_TASK
    headers = page.locator("table.runs th").all_inner_texts()
    assert [h.strip().lower() for h in headers][-4:] == ["duration", "cost", "model", "task"]
    row = page.locator('tr[data-run="0193aaaa0000"]')
    assert row.locator("td.c-duration").inner_text() == "2.50 s"
    assert row.locator("td.c-cost").inner_text() == "unknown"  # never a guessed $0


def test_search_filter_and_pages_by_typing_and_clicking_M3(ui: Any, page: Any) -> None:
    """M3: type a search, pick a status and a model, walk the pages; each is in the address."""
    _seed(40)  # 42 runs: two pages of 25
    page.goto(ui.url)
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == 25
    assert "Page 1 of 2 · 42 runs" in page.locator(".pager").inner_text()
    page.get_by_role("link", name="Older →").click()
    page.wait_for_url(re.compile(r"page=2"))
    assert rows.count() == 17
    assert rows.first.get_attribute("data-run") == "0193aaaa0016"
    page.get_by_role("link", name="← Newer").click()
    page.wait_for_url(re.compile(r"/$"))

    page.get_by_label("Search tasks").fill("readme")
    page.get_by_label("Search tasks").press("Enter")
    page.wait_for_url(re.compile(r"q=readme"))
    assert rows.count() == 13  # n = 2, 5, … 38
    page.get_by_label("Status").select_option("finished")  # applies at once
    page.wait_for_url(re.compile(r"status=finished"))
    assert "No runs match" in page.locator("main").inner_text()
    page.get_by_label("Status").select_option("error")
    page.wait_for_url(re.compile(r"status=error"))
    assert rows.count() == 13
    with open_store() as store:  # a new matching run appears live; the filters still hold
        _record(store, "0193ffff0001", "readme, live", started_at=1_800_000_000.0,
                status=Status.ERROR)  # fmt: skip
        _record(store, "0193ffff0002", "readme, finished", started_at=1_800_000_001.0)
    page.locator('tr[data-run="0193ffff0001"]').wait_for(timeout=10_000)
    assert rows.count() == 14
    assert page.locator('tr[data-run="0193ffff0002"]').count() == 0
    page.get_by_label("Model").select_option("local")
    page.wait_for_url(re.compile(r"model=local"))
    assert page.get_by_label("Search tasks").input_value() == "readme"  # the filters stay
    assert [row.get_attribute("data-run") for row in rows.all()] == ["0193ffff0001"]
    page.get_by_role("link", name="Clear").click()
    page.wait_for_url(re.compile(r"/$"))
    assert rows.count() == 25
    assert "Page 1 of 2 · 44 runs" in page.locator(".pager").inner_text()


def test_a_bad_filter_is_a_clear_400_M3(ui: Any) -> None:
    """M3: an untrusted query string gets a clear error page, never a traceback."""
    for query, words in (("status=done", "unknown status"), ("page=0", "page must be")):
        reply = ui.request(f"/?{query}")
        assert reply.status == 400, reply.text
        assert words in reply.text
    reply = ui.request("/?q=%3Cscript%3Ealert(1)%3C/script%3E")
    assert reply.status == 200
    assert "<script>alert" not in reply.text and "&lt;script&gt;alert(1)" in reply.text  # S9


def test_an_eval_run_shows_its_benchmark_question_and_gold_answer_M3(ui: Any, page: Any) -> None:
    """M3: an eval's run is tagged in the list and on its page with what it was scored on."""
    tag = EvalTag(benchmark="hotpotqa", question_id="5a8b57f25542995d1e6f1371",
                  gold="<b>Richard Nixon</b>", strategy="react")  # fmt: skip
    with open_store() as store:
        _record(store, "0193cccc0001", "Who was Milhouse named after?", started_at=1_700_000_000.0,
                config=RunConfig(model="local", eval_tag=tag))  # fmt: skip
        _record(store, "0193cccc0002", "A plain run", started_at=1_700_000_001.0)
    page.goto(ui.url)
    listed = page.locator('tr[data-run="0193cccc0001"] .eval-tag').inner_text()
    assert listed == "hotpotqa · 5a8b57f25542995d1e6f1371 · gold: <b>Richard Nixon</b>"
    assert page.locator('tr[data-run="0193cccc0002"] .eval-tag').count() == 0
    page.goto(f"{ui.url}runs/0193cccc0001")
    head = page.locator(".run-head .eval-tag").inner_text()
    for words in ("benchmark hotpotqa", "question 5a8b57f25542995d1e6f1371",
                  "gold answer <b>Richard Nixon</b>", "strategy react"):  # fmt: skip
        assert words in " ".join(head.split()), head
    assert page.locator(".run-head .eval-tag b b").count() == 0  # the gold is text (S9)
    cost = page.locator(".run-head .cost").inner_text()
    assert "cost unknown" in cost and cost.count("cost") == 1, cost  # said once (issue 30)


@dataclass
class _Css:
    color: str
    background: str


def _style(locator: Any) -> _Css:
    found = locator.evaluate(
        "el => [getComputedStyle(el).color, getComputedStyle(el).backgroundColor]"
    )
    return _Css(*found)


def test_a_write_waits_with_a_coloured_diff_and_its_thought_S3_M3(
    ui: Any, tao_cli: Callable[..., Any], replay: Callable[[list[str]], Path], tmp_path: Path,
    page: Any, artifacts: Path,
) -> None:  # fmt: skip
    """S3/M3: the approval view shows why (the paused step's Thought) and what changes
    (additions green, deletions red, hunks marked), fitting at 1280 and 800 px."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("old line\nkeep <me>\n", encoding="utf-8")
    script = replay([
        'Thought: The notes are stale; replace the first line.\n'
        'Action: write_file(path="notes.txt", content="new line\\nkeep <me>\\n")',
        "Action: finish[updated]",
    ])  # fmt: skip
    out = tao_cli("run", "Update the notes", "--model", f"replay:{script}", "--tools",
                  "files,write", "--project", str(project), "--no-input", "--json")  # fmt: skip
    assert out.returncode == 4, out.stderr
    page.goto(f"{ui.url}runs/{out.json()['run_id']}")
    card = page.locator(".approval")
    thought = card.locator(".thought").inner_text()
    assert thought == "Thought The notes are stale; replace the first line."
    diff = card.locator("pre.preview.diff")
    assert diff.locator(".d-add").all_inner_texts() == ["+new line\n"]
    assert diff.locator(".d-del").all_inner_texts() == ["-old line\n"]
    assert diff.locator(".d-hunk").inner_text().startswith("@@ -1,2 +1,2 @@")
    assert diff.locator(".d-file").count() == 2
    assert diff.locator(".d-ctx").inner_text() == " keep <me>\n"  # escaped, shown as text
    assert _style(diff.locator(".d-add")) == _Css("rgb(26, 127, 55)", "rgb(218, 251, 225)")
    assert _style(diff.locator(".d-del")) == _Css("rgb(207, 34, 46)", "rgb(255, 235, 233)")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"ui-approval-diff-{width}.png"), full_page=True)
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width


def test_a_diff_in_an_observation_is_coloured_in_the_steps_M3(ui: Any, page: Any) -> None:
    """M3: a tool output that is a unified diff (``git diff``) is coloured in the steps;
    other output stays plain."""
    observation = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-print(1)\n+print('<2>')"
    with open_store() as store:
        _record(store, "0193dddd0002", "Show the change", started_at=1_700_000_000.0,
                observation=observation)  # fmt: skip
        _record(store, "0193dddd0003", "Plain", started_at=1_700_000_001.0,
                observation="+1 and -1 are not a diff")  # fmt: skip
    page.goto(f"{ui.url}runs/0193dddd0002")
    assert page.locator(".observation pre.diff .d-add").inner_text() == "+print('<2>')\n"
    assert page.locator(".observation pre.diff .d-del").inner_text() == "-print(1)\n"
    page.goto(f"{ui.url}runs/0193dddd0003")
    assert page.locator(".observation pre.diff").count() == 0


@dataclass(frozen=True)
class _Priced:
    cost_usd: object


@dataclass(frozen=True)
class _WithUsage:
    usage: _Priced


def test_a_known_cost_is_shown_in_dollars_and_a_missing_one_as_unknown_M3() -> None:
    """M3: the cost read from the run (or its usage) as ``$0.0123``; absent or not a number
    is ``unknown``, never a guessed zero."""
    assert pages.cost_usd(_Priced(0.0123)) == 0.0123
    assert pages.cost_usd(_WithUsage(_Priced(0.5))) == 0.5
    for value in (None, "0.1", True, -1.0):
        assert pages.cost_usd(_Priced(value)) is None
    assert pages.cost_usd(object()) is None
    assert pages.cost_text(_Priced(0.0123)) == "$0.0123"
    assert pages.cost_text(_Priced(None)) == "unknown"
