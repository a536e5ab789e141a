"""The one fixture the store tests run through, and the runs they record.

``store`` is an open run log of each backend in turn: SQLite in ``$TAO_HOME``
and a fresh PostgreSQL database (skipped without ``TAO_TEST_DATABASE_URL``),
both chosen through ``TAO_DATABASE_URL`` by ``open_store()`` exactly as a user's
would be (``store_backend`` in tests/conftest.py). A test that needs a *fresh*
log (racing to create it) asks for ``store_backend`` alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tao.state.config import RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.store import RunRecorder, Store
from tao.store.factory import open_store

CONFIG = RunConfig(model="replay:script.json", tools=("calc",), max_steps=8)


@pytest.fixture
def store(store_backend: str) -> Iterator[Store]:
    """An open run log, SQLite then PostgreSQL; closed afterwards."""
    with open_store() as opened:
        yield opened


class Runs:
    """Builds steps and runs with every field set, and records them as the agent does."""

    config = CONFIG
    """What :meth:`record` records unless told otherwise (test_store.py's ``CONFIG``)."""

    @staticmethod
    def step(index: int, **overrides: object) -> Step:
        step = Step(
            index=index,
            kind=StepKind.ACTION,
            thought=f"thought {index}: 100% sure? ünïcödé, 日本語, O'Brien [bold]x[/bold]",
            tool="calculator",
            arguments={"expression": f"{index} * 2"},
            observation=f"{index * 2} <script>alert(1)</script>",
            model_input=[
                {"role": "system", "content": "You are tao."},
                {"role": "user", "content": f"Task: step {index} — 50% of ? ünïcödé, 日本語"},
            ],
            model_output=f"Thought: t{index}\nAction: calculator[{index} * 2]",
            duration_s=0.25 * index,
            input_tokens=100 + index,
            output_tokens=10 + index,
            evaluated_tokens=50 + index,
            model_duration_s=0.2 * index,
            tool_duration_s=0.01 * index,
        )
        return step.replace(**overrides)

    @staticmethod
    def run(run_id: str, *, started_at: float = 1_700_000_000.0, task: str = "What?") -> RunResult:
        return RunResult(
            run_id=run_id, task=task, model="replay:script.json", lang="en", started_at=started_at
        )

    def record(
        self,
        store: Store,
        result: RunResult,
        steps: int,
        *,
        status: Status = Status.FINISHED,
        config: RunConfig | None = CONFIG,
    ) -> RunResult:
        """Drive a RunRecorder the way the agent does: start, each step, finish."""
        recorder = RunRecorder(store, config)
        recorder.on_start(result)
        for index in range(1, steps + 1):
            step = self.step(index)
            result.add_step(step)
            recorder.on_step(result, step)
        result.status = status
        result.answer = "42" if status is Status.FINISHED else None
        result.duration_s = 1.5
        recorder.on_finish(result)
        return result

    @staticmethod
    def corrupt(store: Store, sql: str, *params: str | int | None) -> None:
        """Damage the log behind the API's back (what a crash or a hand edit could do)."""
        with store._write() as conn:
            conn.execute(sql, params)

    @staticmethod
    def query(store: Store, sql: str, *params: str | int | None) -> list[tuple[object, ...]]:
        """Read the log's tables directly, to see what the API really stored."""
        with store._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [tuple(row[i] for i in range(len(row))) for row in rows]


@pytest.fixture
def runs() -> Runs:
    return Runs()
