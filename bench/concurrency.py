"""Throughput of N concurrent tao runs against a local model server with a fixed latency.

A stdlib ``ThreadingHTTPServer`` on 127.0.0.1 plays an OpenAI-compatible chat server
that answers every call after exactly ``--latency`` seconds (200 ms by default) with a
scripted ReAct reply: ``--steps - 1`` tool calls, then ``finish``. N threads each run
``Agent.run`` back to back (one Agent, so one OpenAI client and connection pool, per
thread); throughput is finished runs per second of wall time. With a perfect framework,
N runs in parallel take as long as one, so throughput grows N-fold.

    python bench/concurrency.py            # N = 1, 2, 4, 8, 16; with and without the run log
    python bench/concurrency.py --quick --json

The server binds to loopback only, serves a bounded number of requests and shuts
itself down after the benchmark (or after ``--max-seconds``, whichever comes first).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tao.store.factory import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.fakes
from tests.fakes.http import FakeServer, Reply, Request, chat_completion

LEVELS = (1, 2, 4, 8, 16)
ANSWER = "done"


def reply_for(messages: list[dict[str, Any]], steps: int) -> str:
    """Stateless script: the number of observations so far says which move comes next."""
    done = sum(1 for m in messages if str(m.get("content", "")).startswith("Observation"))
    if done >= steps - 1:
        return f"Thought: I now know the answer.\nAction: finish[{ANSWER}]"
    return f"Thought: I need the value of k{done}.\nAction: lookup[k{done}]"


class ModelServer:
    """An OpenAI-compatible ``/v1/chat/completions`` that sleeps ``latency`` per call.

    A :class:`tests.fakes.http.FakeServer` (keep-alive, TCP_NODELAY, a deep listen
    backlog), answering at most ``max_requests`` calls and stopping by itself after
    ``max_seconds`` even if the benchmark hangs.
    """

    def __init__(self, latency: float, steps: int, max_requests: int, max_seconds: float):
        self.latency, self.steps = latency, steps
        self.max_requests = max_requests
        self.requests = 0
        self.lock = threading.Lock()
        self.server = FakeServer(self._answer, prefix="/v1")
        self.base_url = self.server.base_url
        self.watchdog = threading.Timer(max_seconds, self.stop)
        self.watchdog.daemon = True

    def _answer(self, request: Request) -> Reply:
        with self.lock:
            self.requests += 1
            over = self.requests > self.max_requests
        if over:
            return Reply.json({"error": {"message": "benchmark request bound reached"}}, 429)
        text = reply_for(request.body.get("messages", []), self.steps)
        return Reply.json(chat_completion(text, request.body), delay_s=self.latency)

    def __enter__(self) -> ModelServer:
        self.server.start()
        self.watchdog.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.watchdog.cancel()
        self.server.stop()


def lookup(key: str) -> str:
    """Look up a key in the table.

    Args:
        key: The key to look up, e.g. "k3".
    """
    return f"value of {key}"


def measure(server: ModelServer, n: int, runs_per_thread: int, record: Any) -> dict[str, Any]:
    """N threads, each with its own Agent, each doing ``runs_per_thread`` runs."""
    from tao import tool
    from tao.agent import Agent

    agents = [
        Agent(
            "openai:bench",
            [tool(lookup)],
            base_url=server.base_url,
            api_key="not-needed",
            max_steps=server.steps + 2,
            record=record,
        )
        for _ in range(n)
    ]
    start = threading.Barrier(n + 1)
    failures: list[str] = []
    durations: list[float] = []

    def work(agent: Any) -> None:
        start.wait()
        for _ in range(runs_per_thread):
            began = time.perf_counter()
            result = agent.run("Look up the values.")
            durations.append(time.perf_counter() - began)
            if result.answer != ANSWER:
                failures.append(f"{result.status}: {result.error}")

    threads = [threading.Thread(target=work, args=(agent,)) for agent in agents]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    if failures:
        raise RuntimeError(f"N={n}: {len(failures)} runs failed, e.g. {failures[0]}")
    runs = n * runs_per_thread
    return {
        "n": n,
        "runs": runs,
        "wall_s": wall,
        "runs_per_s": runs / wall,
        "median_run_s": statistics.median(durations),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short latency, few runs (CI smoke)")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--latency", type=float, default=None, help="seconds per model call")
    parser.add_argument("--steps", type=int, default=3, help="model calls per run")
    parser.add_argument("--runs-per-thread", type=int, default=None)
    parser.add_argument("--levels", type=int, nargs="+", default=list(LEVELS))
    parser.add_argument("--no-record", action="store_true", help="skip the record=True pass")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="server watchdog")
    args = parser.parse_args(argv)
    latency = args.latency if args.latency is not None else (0.03 if args.quick else 0.2)
    runs_per_thread = args.runs_per_thread or (2 if args.quick else 3)
    levels = [n for n in args.levels if not args.quick or n <= 8]
    modes = ["off"] if (args.quick or args.no_record) else ["off", "on"]
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"  # never route loopback through a proxy

    bound = (sum(levels) * runs_per_thread + 1) * args.steps * len(modes) + 16
    results: dict[str, list[dict[str, Any]]] = {}
    with (
        ModelServer(latency, args.steps, bound, args.max_seconds) as server,
        tempfile.TemporaryDirectory(prefix="tao-bench-") as folder,
    ):
        for mode in modes:
            record: Any = False
            if mode == "on":
                record = open_store(Path(folder) / "runs.db")
            results[mode] = []
            measure(server, 1, 1, record)  # warm-up: lazy imports, first connection
            for n in levels:
                print(f"record={mode} N={n} ...", file=sys.stderr)
                results[mode].append(measure(server, n, runs_per_thread, record))
        served = server.requests

    ideal = 1 / (latency * args.steps)
    print(
        f"\nThroughput of N concurrent runs, {args.steps} model calls of {latency * 1000:.0f} ms "
        f"each per run, {runs_per_thread} runs per thread (ideal: N × {ideal:.2f} runs/s)"
    )
    print("| record | N | runs | wall s | runs/s | × N=1 | efficiency | median run s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    summary: dict[str, Any] = {"latency_s": latency, "steps": args.steps, "requests": served}
    for mode, rows in results.items():
        base = rows[0]["runs_per_s"] if rows and rows[0]["n"] == 1 else None
        for row in rows:
            speedup = row["runs_per_s"] / base if base else float("nan")
            print(
                f"| {mode} | {row['n']} | {row['runs']} | {row['wall_s']:.2f} | "
                f"{row['runs_per_s']:.2f} | {speedup:.2f} | {speedup / row['n']:.0%} | "
                f"{row['median_run_s']:.3f} |"
            )
            suffix = "" if mode == "off" else "_recorded"
            summary[f"throughput_{row['n']}{suffix}"] = round(row["runs_per_s"], 3)
        by_n = {row["n"]: row["runs_per_s"] for row in rows}
        if 1 in by_n and 8 in by_n:
            suffix = "" if mode == "off" else "_recorded"
            summary[f"efficiency_8{suffix}"] = round(by_n[8] / (8 * by_n[1]), 3)
            summary[f"goal_8_met{suffix}"] = by_n[8] >= 0.8 * 8 * by_n[1]
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
