"""Words and numbers as a person reads them, shared by the terminal and the web page."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao.format import plural, run_costs
from tao.state.budget import Usage
from tao.state.result import RunResult, Status, Step, StepKind


@pytest.mark.parametrize(
    ("count", "word", "many", "said"),
    [
        (0, "step", None, "0 steps"),
        (1, "step", None, "1 step"),
        (2, "model call", None, "2 model calls"),
        (1, "query", "queries", "1 query"),
        (3, "query", "queries", "3 queries"),
        (12345, "token", None, "12,345 tokens"),
    ],
)
def test_plural(count: int, word: str, many: str | None, said: str) -> None:
    assert plural(count, word, many) == said


def test_a_one_step_run_reads_1_step_and_1_model_call() -> None:
    step = Step(index=1, kind=StepKind.FINAL, arguments={"answer": "x"})
    result = RunResult(
        run_id="r", task="t", model="m", status=Status.FINISHED, steps=[step],
        usage=Usage(model_calls=1),
    )  # fmt: skip
    said = run_costs(result, Status.FINISHED, 1.0)
    assert said.startswith("1 step · 1 model call · ")


def test_the_terminal_footer_says_1_step(tao_cli: Any, replay: Callable[[list[str]], Path]) -> None:
    out = tao_cli("run", "x", "-m", f"replay:{replay(['Action: finish[done]'])}")
    assert out.returncode == 0, out.stderr
    assert "1 step · 1 model call · " in out.stdout
    assert "1 steps" not in out.stdout and "1 model calls" not in out.stdout
