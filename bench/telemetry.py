"""What OpenTelemetry spans cost a step: the same scripted run with telemetry off and on.

A zero-latency scripted model asks the calculator at every step; the run is not recorded
(``record=False``), so what is timed is the loop, the tool and, when on, the spans (a run,
each step, each model call and each tool call) handed to a real SDK ``TracerProvider``
whose ``BatchSpanProcessor`` exports to an exporter that drops them (no network in the
timing). Prints the median per-step time of each and the difference.

    python bench/telemetry.py [--steps 200] [--repeat 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.fakes
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from tests.fakes.models import CalculatorScript

from tao import Agent
from tao.telemetry.otel import OpenTelemetry


class Dropping(SpanExporter):
    """Counts the spans and drops them."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS


def per_step_s(steps: int, telemetry: OpenTelemetry | None) -> float:
    agent = Agent(CalculatorScript(steps), ["calc"], record=False, max_steps=steps + 1)
    agent.telemetry = telemetry
    started = time.perf_counter()
    result = agent.run("Add the numbers.")
    elapsed = time.perf_counter() - started
    assert result.status == "finished", result.status
    assert len(result.steps) == steps
    return elapsed / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    exporter = Dropping()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=100_000))
    telemetry = OpenTelemetry(provider)
    per_step_s(20, None), per_step_s(20, telemetry)  # warm both paths up
    off, on = [], []
    for _ in range(args.repeat):  # interleaved, so a busy moment hits both alike
        off.append(per_step_s(args.steps, None))
        on.append(per_step_s(args.steps, telemetry))
    provider.shutdown()
    row = {
        "steps": args.steps,
        "repeat": args.repeat,
        "off_us_per_step": statistics.median(off) * 1e6,
        "on_us_per_step": statistics.median(on) * 1e6,
        "spans_exported": exporter.count,
    }
    row["spans_cost_us_per_step"] = row["on_us_per_step"] - row["off_us_per_step"]
    if args.json:
        print(json.dumps(row))
        return
    print(f"{args.steps} steps x {args.repeat}, median per step:")
    print(f"  telemetry off  {row['off_us_per_step']:8.1f} µs")
    print(f"  telemetry on   {row['on_us_per_step']:8.1f} µs  ({exporter.count} spans exported)")
    print(f"  spans cost     {row['spans_cost_us_per_step']:8.1f} µs a step")


if __name__ == "__main__":
    main()
