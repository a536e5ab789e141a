"""What OpenTelemetry spans cost a step: the same scripted run with telemetry off and on.

A zero-latency scripted model asks the calculator at every step; the run is not recorded
(``record=False``), so what is timed is the loop, the tool and, when on, the spans (a run,
each step, each model call and each tool call) handed to a real SDK ``TracerProvider``
whose ``BatchSpanProcessor`` exports to an exporter that drops them (no network in the
timing). Prints the median per-step time of each, the difference, and what three bare
SDK spans cost on the same machine (most of the difference is the SDK's own price).

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


def bare_spans_us(provider: TracerProvider, rounds: int = 2_000) -> float:
    """The SDK's own price for three spans of a step (a parent and two children, a few
    attributes each), with nothing of tao: what any instrumentation pays."""
    tracer = provider.get_tracer("bench")
    started = time.perf_counter()
    for index in range(rounds):
        with tracer.start_as_current_span("step", attributes={"index": index}):
            for name in ("chat", "tool"):
                span = tracer.start_span(name, attributes={"a": 1, "b": "x", "c": 0.0})
                span.set_attributes({"d": 1, "e": 2})
                span.end()
    return (time.perf_counter() - started) / rounds * 1e6


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
    bare = statistics.median(bare_spans_us(provider) for _ in range(3))
    provider.shutdown()
    row = {
        "steps": args.steps,
        "repeat": args.repeat,
        "off_us_per_step": statistics.median(off) * 1e6,
        "on_us_per_step": statistics.median(on) * 1e6,
        "spans_exported": exporter.count,
        "bare_sdk_3_spans_us": bare,
    }
    row["spans_cost_us_per_step"] = row["on_us_per_step"] - row["off_us_per_step"]
    if args.json:
        print(json.dumps(row))
        return
    print(f"{args.steps} steps x {args.repeat}, median per step:")
    print(f"  telemetry off  {row['off_us_per_step']:8.1f} µs")
    print(f"  telemetry on   {row['on_us_per_step']:8.1f} µs  ({exporter.count} spans exported)")
    print(f"  spans cost     {row['spans_cost_us_per_step']:8.1f} µs a step")
    print(f"  (the SDK alone: {bare:.1f} µs for three bare spans on this machine)")


if __name__ == "__main__":
    main()
