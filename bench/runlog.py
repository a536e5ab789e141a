"""The run log's cost as a run grows (SPEC R3, issue 14): size on disk, time per step, --json.

One scripted model drives the calculator for N steps, once without the run log and
once recording into a fresh SQLite file (or PostgreSQL with ``--database-url``).
The table shows what the log costs: bytes on disk, the whole run's time logged
against unlogged, the per-step cost early and late in the run (flat when the log
is linear, growing when it is quadratic), and the size and build time of ``--json``.

    python bench/runlog.py                     # 600 steps, SQLite
    python bench/runlog.py --steps 1200 --json # a bigger run, machine-readable
    python bench/runlog.py --database-url postgresql://tao:…@127.0.0.1:55432/tao

Needs only tao itself (run with ``PYTHONPATH=src`` from a checkout).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tao.agent import Agent
from tao.state.result import RunResult, Step
from tao.store import Store
from tao.store.factory import open_store
from tao.tools.calc import calculator_tool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.fakes
from tests.fakes.models import CalculatorScript

TASK = "Add up the numbers 1 to N, one addition per step, then give the total."


@dataclass
class StepClock:
    """An observer noting when each step was handed over, to see the late steps' cost."""

    times: list[float] = field(default_factory=list)

    def on_start(self, result: RunResult) -> None:
        self.times.append(time.perf_counter())

    def on_step(self, result: RunResult, step: Step) -> None:
        self.times.append(time.perf_counter())

    def on_finish(self, result: RunResult) -> None:
        pass

    def ms_per_step(self, first: bool, window: int = 50) -> float:
        gaps = [b - a for a, b in zip(self.times, self.times[1:], strict=False)]
        chosen = gaps[:window] if first else gaps[-window:]
        return 1000 * sum(chosen) / max(len(chosen), 1)


def run_once(steps: int, store: Store | None) -> tuple[RunResult, float, StepClock]:
    clock = StepClock()
    agent = Agent(
        CalculatorScript(steps),
        [calculator_tool()],
        max_steps=steps + 2,
        max_tokens=10**12,
        max_seconds=3600,
        record=store if store is not None else False,
    )
    started = time.perf_counter()
    result = agent.run(TASK, observers=[clock])
    elapsed = time.perf_counter() - started
    assert result.answer == "done", (result.status, result.error)
    assert len(result.steps) == steps
    return result, elapsed, clock


def disk_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def measure(steps: int, database_url: str | None) -> dict[str, float]:
    _, plain_s, plain_clock = run_once(steps, None)
    with tempfile.TemporaryDirectory(prefix="tao-runlog-") as folder:
        if database_url:
            from tao.store.postgres import PostgresStore

            store: Store = PostgresStore.connect(database_url)
        else:
            store = open_store(Path(folder) / "runs.db")
        with store:
            result, logged_s, clock = run_once(steps, store)
            read_started = time.perf_counter()
            stored = store.get_run(result.run_id)
            read_s = time.perf_counter() - read_started
        size = 0 if database_url else disk_bytes(Path(folder))
    json_started = time.perf_counter()
    text = json.dumps(stored.to_json(), ensure_ascii=False)
    json_s = time.perf_counter() - json_started
    assert stored.steps == result.steps, "the run log must give back the steps it was given"
    return {
        "steps": steps,
        "disk_mb": size / 1e6,
        "unlogged_s": plain_s,
        "logged_s": logged_s,
        "logged_over_unlogged": logged_s / plain_s,
        "unlogged_first_ms": plain_clock.ms_per_step(first=True),
        "unlogged_last_ms": plain_clock.ms_per_step(first=False),
        "logged_first_ms": clock.ms_per_step(first=True),
        "logged_last_ms": clock.ms_per_step(first=False),
        "get_run_s": read_s,
        "json_mb": len(text.encode()) / 1e6,
        "json_s": json_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--database-url", help="record into this PostgreSQL instead of SQLite")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    row = measure(args.steps, args.database_url)
    if args.json:
        print(json.dumps(row))
        return
    backend = "PostgreSQL" if args.database_url else "SQLite"
    print(f"run log cost of a {args.steps}-step calculator run ({backend})")
    print(f"{'measure':<34}{'value':>12}")
    for name, value in row.items():
        print(f"{name:<34}{value:>12.3f}" if isinstance(value, float) else f"{name:<34}{value:>12}")


if __name__ == "__main__":
    main()
