"""Prompt tokens per step over a long run, with compaction and without (issue 27).

A scripted OpenAI-compatible server on 127.0.0.1 (``tests/fakes/window.py``) drives a
200-step run that reads one ~1.65 KB file a step (the observations add up to ~80k
tokens). It is run twice: with ``--compaction elide`` in an 8,000-token window, and
with ``--compaction none`` against a server with room for everything. The table shows
the prompt each request sent, in tokens as the server counts them (4 characters a token):
flat (a sawtooth under the window) with compaction, growing linearly without. It also
counts the requests whose prompt only grew at its end (a prefix cache keeps hitting).

    python bench/long_runs.py               # 200 steps
    python bench/long_runs.py --quick       # 60 steps
    python bench/long_runs.py --json        # and one JSON line last
    python bench/long_runs.py --local       # the embedded model reads 30 files of 1 KB
                                            # in a 4,096-token window (slow: minutes);
                                            # a row per step, then one summary table
    python bench/long_runs.py --local --files 8 --window 2048   # smaller

Needs only tao itself (run with ``PYTHONPATH=src`` from a checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.fakes
from tests.fakes.window import WindowServer

from tao import Agent, RunConfig, tool
from tao.format import format_action
from tao.state.result import RunResult, Step, StepKind

WINDOW = 8000


def body(n: int) -> str:
    return f"file {n} begins. " + ("lorem ipsum dolor sit amet " * 62)[:1600] + f" file {n} ends."


@tool
def read(n: int) -> str:
    """Read file number n."""
    return body(n)


def one_run(steps: int, compaction: str) -> dict[str, object]:
    """Prompt sizes of each request of one run, and how many only grew at their end."""
    window = WINDOW if compaction != "none" else 10**9
    with WindowServer(window=window, reads=steps) as server:
        config = RunConfig(
            max_steps=steps + 5,
            max_tokens=10**9,
            protocol="text",
            compaction=compaction,
            context_window=window if compaction != "none" else None,
        )
        agent = Agent(
            "openai:scripted",
            tools=[read],
            base_url=server.base_url,
            api_key="k",
            config=config,
            record=False,
        )
        started = time.perf_counter()
        result = agent.run(f"Read files 1 to {steps}, one a step, then say you are done.")
        seconds = time.perf_counter() - started
    sizes = server.sizes
    grew = sum(
        1
        for before, now in zip(server.fitted, server.fitted[1:], strict=False)
        if now["messages"][: len(before["messages"])] == before["messages"]
    )
    return {
        "status": str(result.status),
        "sizes": sizes,
        "refused": server.refused,
        "compactions": sum(len(s.compactions) for s in result.steps),
        "grew_at_end": grew,
        "seconds": seconds,
    }


class _Rows:
    """Prints each step's row as it completes: a slow run shows its numbers as it goes."""

    def on_start(self, result: RunResult) -> None:
        pass

    def on_step(self, result: RunResult, step: Step) -> None:
        if step.kind is StepKind.MODEL_ERROR:
            return
        made = "; ".join(c.describe() for c in step.compactions)
        action = format_action(step) if step.tool else "-"
        print(
            f"| {step.index} | `{action}` | {step.input_tokens:,} | "
            f"{step.evaluated_tokens or 0:,} | {made} |",
            flush=True,
        )

    def on_finish(self, result: RunResult) -> None:
        pass


def local_run(files: int, window: int) -> None:
    """The embedded model reads ``files`` files of 1 KB with ``--context-window window``:
    prompt tokens and evaluated tokens (what llama.cpp really processed) per step, and where
    compactions happened. Between compactions the evaluated tokens stay flat: only the new
    turn is prefilled, as the prompt only grew at its end."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for n in range(1, files + 1):
            lines = " ".join(f"Line {i}: record {n}-{i} checked and filed." for i in range(1, 30))
            text = f"File {n:02d}. Its code word is {words[n % 8]}{n}. {lines}"
            (root / f"f{n:02d}.txt").write_text(text[:1000])
        config = RunConfig(
            model="local",
            tools=("files",),
            project=str(root),
            context_window=window,
            max_steps=files + 8,
            max_seconds=7200.0,
            max_tokens=10**8,
        )
        task = (
            f"Read the files f01.txt, f02.txt, ... up to f{files:02d}.txt one at a time, in "
            f"order, with read_file. After reading f{files:02d}.txt, answer with its code word."
        )
        print(f"Embedded model, {files} files of 1 KB, --context-window {window}\n")
        print("| step | action | prompt tokens | evaluated tokens | compaction |")
        print("| ---: | --- | ---: | ---: | --- |", flush=True)
        started = time.perf_counter()
        result = Agent(config=config, record=False).run(task, observers=[_Rows()])
        seconds = time.perf_counter() - started
    reads = sum(1 for s in result.steps if s.tool == "read_file")
    print(f"\n{result.status}, {reads} reads, answer {result.answer!r}, {seconds:.0f} s")
    print(summary(result, files, window, seconds))


def summary(result: RunResult, files: int, window: int, seconds: float) -> str:
    """One table: steps, compactions, evaluated tokens per step (between compactions and at
    them), wall time; the load average beside it, as the embedded model's speed depends on it."""
    asked = [s for s in result.steps if s.call_index == 0 and s.evaluated_tokens is not None]
    compacted = {c.step for s in result.steps for c in s.compactions}
    between = [s.evaluated_tokens or 0 for s in asked[1:] if s.index not in compacted]
    at = [s.evaluated_tokens or 0 for s in asked if s.index in compacted]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())

    def spread(values: list[int]) -> str:
        if not values:
            return "-"
        return f"{sum(values) / len(values):,.0f} ({min(values):,}-{max(values):,})"

    return (
        "\n| files | window | status | steps | compactions | evaluated tokens per step, "
        "between compactions: mean (min-max) | at a compaction | prompt tokens, max | "
        "wall | load average |\n"
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
        f"| {files} | {window:,} | {result.status} | {len(result.steps)} | "
        f"{sum(len(s.compactions) for s in result.steps)} | {spread(between)} | {spread(at)} | "
        f"{max((s.input_tokens for s in asked), default=0):,} | {seconds:.0f} s | {load} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="60 steps")
    parser.add_argument("--json", action="store_true", help="one JSON line last")
    parser.add_argument("--local", action="store_true", help="the embedded model, 30 files")
    parser.add_argument("--files", type=int, default=30, help="with --local")
    parser.add_argument("--window", type=int, default=4096, help="with --local: tokens")
    args = parser.parse_args()
    if args.local:
        local_run(args.files, args.window)
        return
    steps = 60 if args.quick else args.steps
    with tempfile.TemporaryDirectory() as home:
        os.environ["TAO_HOME"] = home
        runs = {name: one_run(steps, name) for name in ("elide", "none")}
    marks = sorted({1, *range(25, steps + 1, 25), steps})
    print(f"Prompt tokens per step, {steps}-step run, ~412 tokens of observation a step\n")
    print("| step | " + " | ".join(f"`--compaction {name}`" for name in runs) + " |")
    print("| ---: | " + " | ".join("---:" for _ in runs) + " |")
    for mark in marks:
        cells = []
        for run in runs.values():
            sizes = run["sizes"]
            assert isinstance(sizes, list)
            cells.append(f"{sizes[mark - 1]:,}" if mark <= len(sizes) else "-")
        print(f"| {mark} | " + " | ".join(cells) + " |")
    summary: dict[str, object] = {"steps": steps, "window": WINDOW}
    for name, run in runs.items():
        sizes = run["sizes"]
        assert isinstance(sizes, list)
        late = sizes[len(sizes) // 2 :]
        summary[name] = {
            "status": run["status"],
            "max_prompt_tokens": max(sizes),
            "mean_prompt_tokens_second_half": round(sum(late) / len(late)),
            "last_prompt_tokens": sizes[-1],
            "total_prompt_tokens": sum(sizes),
            "compactions": run["compactions"],
            "refused": run["refused"],
            "requests_that_grew_at_their_end": run["grew_at_end"],
            "requests": len(sizes),
            "seconds": round(float(str(run["seconds"])), 2),
        }
    print()
    print("| | max prompt | mean, 2nd half | total prompt tokens | compactions | grew at end |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in runs:
        row = summary[name]
        assert isinstance(row, dict)
        print(
            f"| `{name}` | {row['max_prompt_tokens']:,} | "
            f"{row['mean_prompt_tokens_second_half']:,} | {row['total_prompt_tokens']:,} | "
            f"{row['compactions']} | {row['requests_that_grew_at_their_end']}/"
            f"{row['requests'] - 1} |"
        )
    if args.json:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
