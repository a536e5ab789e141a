"""Replayed runs give the same results as before the redesign (issue 11's "Done when").

``tests/data/golden/golden.json`` holds what tao 0.1 printed for each scenario of
``scenarios.json`` (made by ``make_golden.py`` from the pre-redesign tree): the
status, the answer, every step with its exact model input, observation and
tokens. The current tao must print the same, scenario by scenario.

One entry was re-recorded on purpose, with the change that made it differ: ``files``
(issue 12, SPEC S6): a path that resolves outside the project is now refused when the
arguments are validated, so the refusal is tao's own error (``arguments`` null, not
fenced as untrusted tool output) instead of the tool's. Then again for issue 16: its
observations are fenced with three-letter ids, so its model inputs and input tokens are
shorter (1,152 → 1,135 input tokens); nothing else of it changed.

Issue 30 merged a step's ``argument`` into ``arguments``: the recorded steps are read
through the same upgrade an old run log gets (:func:`tao.state.migrations.step_without_argument`).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from tao.state.migrations import step_without_argument

GOLDEN = Path(__file__).parent / "data" / "golden"


def _maker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Fields added to a step's JSON since the reference was recorded (each in CHANGELOG.md).
ADDED_STEP_FIELDS = {"repeat_of", "forced", "cost_usd", "compactions", "approval"} | {
    # issue 31: the fallback model that answered, and an agent-as-tool call's child run
    "model", "model_failures", "child_run", "child_input_tokens", "child_output_tokens",
    "child_cost_usd",
    # issue 30: ``argument`` went; the text as written is kept only for a call that did not bind
    "unparsed",
}  # fmt: skip
#: Fields added to a run's JSON since then: ``parent_id`` (follow-ups, issue 15), null here.
ADDED_RUN_FIELDS = {"parent_id": None, "forced": False}  # forced: issue 30
#: Added to the run's usage since (issue 15): a replayed model's cost is unknown, not $0.
ADDED_USAGE = {"cost_usd": None}
SCENARIOS = json.loads((GOLDEN / "scenarios.json").read_text(encoding="utf-8"))
EXPECTED = json.loads((GOLDEN / "golden.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_a_replayed_run_gives_what_tao_0_1_gave(scenario: dict[str, object]) -> None:
    got = _maker().run_scenario(scenario)
    expected = EXPECTED[scenario["name"]]
    assert got["status"] == expected["status"]
    assert got["answer"] == expected["answer"]
    assert got["exit_code"] == expected["exit_code"]
    assert got["usage"] == expected["usage"] | ADDED_USAGE
    assert len(got["steps"]) == len(expected["steps"])
    for mine, recorded in zip(got["steps"], expected["steps"], strict=True):
        theirs = step_without_argument(recorded)  # issue 30: one field for the arguments
        assert set(mine) - set(theirs) <= ADDED_STEP_FIELDS
        assert {k: mine[k] for k in theirs} == theirs, f"step {theirs['index']} differs"
    assert {k: v for k, v in got.items() if k not in ("steps", "usage")} == {
        **{k: v for k, v in expected.items() if k not in ("steps", "usage")},
        **ADDED_RUN_FIELDS,
    }
