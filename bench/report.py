"""Run the benchmarks and write ``docs/performance.md`` from their output.

    python bench/report.py                 # full run (minutes; creates bench/.peers-venv once)
    python bench/report.py --local 2       # ... plus the embedded model on 2 HotpotQA questions
    python bench/report.py --reuse         # rebuild the page from bench/.results/ where present
    python bench/report.py --quick --out /tmp/perf.md

Each script's raw output is kept in ``bench/.results/NAME.txt`` (gitignored); the page
embeds its tables as printed and judges the goals from its ``--json`` line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / ".results"

#: What was changed in tao to reach the numbers below (kept by hand, with the evidence).
CHANGES = """\
- Checkpoints and transcript snapshots (`src/tao/loop.py`, `src/tao/episode.py`): the
  episode only appends to the transcript and never edits a message once appended, so a
  snapshot is a copy of the *list*, not of every message, and the in-memory checkpoint
  no longer JSON round-trips the whole transcript each step (23 % of a step, and
  quadratic over a run). Per step: 46 -> 29 us.
- Arguments are validated once (`prepare` validates; the executor calls `Tool.call`),
  secrets are redacted in one regex pass instead of thirteen, and `<think>` stripping
  runs no regex when the reply has no "think" in it. Profile of
  `bench/profile_tao.py --episodes 300`: 0.259 s -> 0.209 s.
- `src/tao/__init__.py`: `Tool` and `tool` are loaded on first use, like `Agent`, so
  `import tao` no longer imports pydantic and docstring_parser (they were 60-80 % of
  `import tao` under `-X importtime`); a run still pays for pydantic once (the
  `from tao import Agent, tool` row).
- The benchmark's own HTTP server sets `TCP_NODELAY` and a listen backlog of 256: without
  them, Nagle plus delayed ACKs added ~40 ms to every call and a backlog of 5 dropped
  connections at N = 8 (a 1 s SYN retry), which measured the server, not tao.
"""


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip()


def head_snapshot() -> Path:
    """``src/`` of the HEAD commit in a temporary folder: a tao nobody is editing."""
    folder = Path(tempfile.mkdtemp(prefix="tao-head-"))
    archive = subprocess.run(
        ["git", "archive", "HEAD", "src"], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder / "src"


def tao_source(env: dict[str, str]) -> str:
    """Which tao the numbers are for, as the page states it."""
    commit = git("rev-parse", "--short", "HEAD")
    if env.get("PYTHONPATH"):
        return f"tao at commit `{commit}` (HEAD, `git archive`d, so untouched by work in progress)"
    dirty = " plus uncommitted changes in src/" if git("status", "--porcelain", "src") else ""
    return f"tao from the working tree at commit `{commit}`{dirty}"


TOKENS_NOTE = """\
What this says, read with the prompts side by side: on HotpotQA tao does **not** send
fewer tokens than the naive loop, it sends more. Both loops are append-only, so both
keep a stable prefix (the naive loop's one growing user message is just as cacheable,
token for token); observation truncation never engages (the wiki tool returns one
paragraph: median 482 characters, 1 of 5,716 over the 8,000-character cut). The extra
tokens are the S4 untrusted-data fences around each observation
(`<data source="search" id="…">…</data id="…">`, hash ids that tokenize poorly): with
the fence lines removed, the same tao prompts count 1,668 tokens per question instead of
1,859, so the fences are ~190 of the ~250 extra tokens; the rest is the chat-turn
framing of separate messages. Truncation pays off where tool output is large (files:
first 20,000 characters; test logs: last 2,000), which HotpotQA does not exercise. With
the embedded model, llama.cpp's KV cache makes *evaluated* a fraction (15-18 %) of
*sent* for both loops alike: the reuse is the backend's, and tao's stable system
prompt and append-only turns keep it working.
"""


PROFILE = """\
`python bench/profile_tao.py [--record]` (pyinstrument 5.1.3, the scripted episode of
`bench/overhead.py`, 10 model calls, warm-up excluded; shares of the run's time):

- **record=False, HEAD `164ef1d` as committed** (500 episodes): one hot spot,
  `Agent._open.checkpoint` at 23 %: with no run log, every step kept an in-memory
  checkpoint as `json.loads(json.dumps(state))`, a JSON round trip of the *whole
  transcript*, so a step's cost grew with the run (quadratic over a run). Fixed (see
  the changes below): 46 → 29 µs a step in back-to-back runs of the same child, and
  the checkpoint is now 4 % of a step.
- **record=False, after the fix** (800 episodes): flat. `parse_reply` 18 %
  (`_find_action`, `strip_thinking`, `re` cache look-ups), `Agent._act` 17 % (the S5
  `redact` 7 %, argument validation and the tool call 4 %), the sans-IO `episode`
  bookkeeping (`_calls`, `_extend`, the S4 `fence`, `_stops`) ~15 %, the scripted model
  itself ~4 %. Nothing left worth a change at ~30 µs a step.
- **record=True** (300 episodes): the loop waits for SQLite: wall time is 2.5× CPU time
  (1.91 s vs 0.75 s). `Store.add_step` is 46 % of the run (its `COMMIT` 27 %,
  `json.dumps` of the step's whole `model_input` 6 %, the per-step `ensure_run` upsert
  3 %) and the checkpoint's `Store.save_state` another 19 % (a *second* `COMMIT` per
  step, 9 %, and a `json.dumps` of the whole transcript again, 6 %). Both dumps grow
  with the transcript, so a run's writes are quadratic.

Proposed fixes for the run log (not made here: they change its schema or guarantees,
which belong to the store's owner): (1) write the step and the checkpoint in one
transaction (one `COMMIT` per step instead of two: ~9 % of the recorded step);
(2) store each step's *new* messages only, and rebuild `model_input` and the
checkpoint's transcript on read (linear instead of quadratic writes: ~12 % now, more
on long runs); (3) skip `ensure_run` once `begin_run` has written the row (3 %);
(4) optionally a writer thread that commits off the loop's thread (`record="async"`),
which takes the remaining I/O wait off the critical path.
"""


def run(name: str, command: list[str], reuse: bool, env: dict[str, str]) -> str:
    """The script's stdout, from ``bench/.results`` when reusing, else by running it."""
    saved = RESULTS / f"{name}.txt"
    if reuse and saved.exists():
        return saved.read_text(encoding="utf-8")
    print(f"$ {' '.join(command)}", file=sys.stderr)
    began_load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-2000:]}")
    RESULTS.mkdir(exist_ok=True)
    saved.write_text(done.stdout, encoding="utf-8")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    (RESULTS / f"{name}.load").write_text(f"{began_load} → {load}\n", encoding="utf-8")
    (RESULTS / f"{name}.cmd").write_text(" ".join(command) + "\n", encoding="utf-8")
    return done.stdout


def split(output: str) -> tuple[str, dict[str, Any]]:
    """Tables (everything but the last line) and the JSON summary (the last line)."""
    lines = output.rstrip().splitlines()
    return "\n".join(lines[:-1]).strip(), json.loads(lines[-1])


def machine() -> list[str]:
    cpu = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"- CPU: {cpu}, `nproc` = {os.cpu_count()}, shared with other engineers' builds and "
        f"local-model runs (load average {load} when this page was written; each command "
        "below states the load while it ran), so timings are noisy: every figure is a "
        "median, and the frameworks are measured in interleaved rounds",
        f"- Python {platform.python_version()} ({sys.executable}), {platform.platform()}",
        f"- Written {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
    ]


def goal_notes(o: dict[str, Any]) -> list[str]:
    """What a missed overhead goal means, from the numbers of this run."""
    notes = []
    tao, smol = o.get("tao_us_per_step"), o.get("smolagents_us_per_step")
    if tao and smol and not o.get("goal_smolagents_10x"):
        notes += [
            f"smolagents: reaching 1/10 needs tao at ≤ {smol / 10:.1f} µs a step, "
            f"{1 - smol / 10 / tao:.0%} less than the {tao} µs measured. The profile",
            "(below) has no hot spot left after the checkpoint fix: the rest is parsing, the S4",
            "fence and S5 redaction of every observation, argument validation and the",
            "resumable checkpoint, each a few µs, i.e. the safety design itself. The ratio",
            "also moves with load, smolagents' figure more than tao's: earlier runs the same day",
            "under load averages of 6-10 gave smolagents 390-730 µs a step and 15-27×.",
            "",
        ]
    if o.get("tao_recorded_us_per_step"):
        notes += [
            "With the run log on (tao's default, and no peer persists anything), SQLite",
            "writes dominate: see the Profile section for what they cost and how to cut them.",
            "",
        ]
    return notes


def tokenizer_model() -> list[str]:
    """Point tokens.py at the embedded model's GGUF (a HEAD snapshot may not know where)."""
    try:
        from tao.models.install import default_model_path
    except ImportError:
        return []
    path = default_model_path()
    return ["--tokenizer-model", str(path)] if path.exists() else []


def local_section(
    outputs: dict[str, tuple[str, dict[str, Any]]], shown: Callable[[str], str]
) -> list[str]:
    """The embedded model's rows, when ``--local N`` ran them."""
    if "tokens_local" not in outputs:
        return []
    text, _ = outputs["tokens_local"]
    return [
        f"`{shown('tokens_local')}, from the work tree, where the embedded model's backend",
        "lives; greedy, so each loop follows its own trajectory):",
        "",
        text,
        "",
    ]


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each script in --quick mode")
    parser.add_argument("--reuse", action="store_true", help="use bench/.results/ if present")
    parser.add_argument("--local", type=int, default=0, help="embedded model on N questions")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument(
        "--head", action="store_true", help="measure tao as committed (HEAD), not the work tree"
    )
    parser.add_argument(
        "--overlay",
        nargs="+",
        default=[],
        metavar="PATH",
        help="with --head: these work-tree files replace HEAD's (an uncommitted fix)",
    )
    args = parser.parse_args(argv)
    env = dict(os.environ)
    source = ""
    if args.head:
        snapshot = head_snapshot()
        for path in args.overlay:
            shutil.copyfile(ROOT / path, snapshot.parent / path)
        env["PYTHONPATH"] = str(snapshot)
    source = tao_source(env)
    if args.overlay:
        names = ", ".join(f"`{p}`" for p in args.overlay)
        source += f", with the work tree's {names} over it (uncommitted, see the changes below)"
    if not (args.reuse and (RESULTS / "source.txt").exists()):
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "source.txt").write_text(source + "\n", encoding="utf-8")
    source = (RESULTS / "source.txt").read_text(encoding="utf-8").strip()
    py = sys.executable
    quick = ["--quick"] if args.quick else []
    local = ["--model", "local", "-n", str(args.local)] if args.local else []
    commands = {
        "overhead": [py, "bench/overhead.py", "--json", *quick],
        "concurrency": [py, "bench/concurrency.py", "--json", *quick],
        "tokens": [py, "bench/tokens.py", "--json", *quick, *tokenizer_model()],
    }
    if args.local:
        commands["tokens_local"] = [py, "bench/tokens.py", "--json", *local]
    # The embedded model's backend may exist only in the work tree: its run uses that tree.
    tree_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    outputs = {
        name: split(run(name, cmd, args.reuse, tree_env if name == "tokens_local" else env))
        for name, cmd in commands.items()
    }
    (o_text, o), (c_text, c), (t_text, t) = (
        outputs["overhead"],
        outputs["concurrency"],
        outputs["tokens"],
    )

    def shown(name: str) -> str:
        saved = RESULTS / f"{name}.cmd"
        cmd = saved.read_text().split() if saved.exists() else commands[name]
        load = RESULTS / f"{name}.load"
        during = (
            f"` (load average {load.read_text().strip()} from start to end)"
            if load.exists()
            else "`"
        )
        return " ".join(["python", *cmd[1:]]) + during

    tao_us = o.get("tao_us_per_step")
    lg, sm = o.get("langgraph_us_per_step"), o.get("smolagents_us_per_step")
    rec = o.get("tao_recorded_us_per_step")
    goals = [
        (
            "Per-step overhead ≤ 1/20 of LangGraph's",
            f"{lg} / {tao_us} µs = {o.get('langgraph_over_tao')}× "
            f"(recorded: {o.get('langgraph_over_tao_recorded')}×)",
            o.get("goal_langgraph_20x"),
        ),
        (
            "Per-step overhead ≤ 1/10 of smolagents'",
            f"{sm} / {tao_us} µs = {o.get('smolagents_over_tao')}× "
            f"(recorded, {rec} µs: {o.get('smolagents_over_tao_recorded')}×)",
            o.get("goal_smolagents_10x"),
        ),
        (
            "`import tao` ≤ 150 ms",
            f"{o.get('import_tao_s', float('nan')) * 1000:.0f} ms wall "
            f"(`from tao import Agent, tool`: "
            f"{o.get('import_tao_agent_s', float('nan')) * 1000:.0f} ms)",
            o.get("goal_import_150ms"),
        ),
        (
            "Throughput(8) ≥ 0.8 × 8 × throughput(1)",
            f"efficiency {c.get('efficiency_8')} "
            f"(recorded: {c.get('efficiency_8_recorded', 'n/a')})",
            c.get("goal_8_met"),
        ),
    ]
    versions = o.get("peer_versions") or {}
    lines = [
        "# Performance",
        "",
        "What the framework itself costs, measured beside LangGraph, LangChain, smolagents",
        "and DSPy in the same run on the same machine (issue 7). Generated by "
        "`python bench/report.py`; do not edit by hand.",
        "",
        "## Machine",
        "",
        *machine(),
        f"- Measured: {source}",
        "- Peers (bench/peers-requirements.txt, in bench/.peers-venv): "
        + (", ".join(f"{k} {v}" for k, v in versions.items()) or "not measured"),
        "",
        "## Goals",
        "",
        "| goal | measured | verdict |",
        "|---|---|---|",
        *(f"| {name} | {value} | {verdict(ok)} |" for name, value, ok in goals),
        "",
        *goal_notes(o),
        "## Per-step overhead, import time, memory",
        "",
        f"`{shown('overhead')}",
        "",
        "Each framework runs in a child process of its own and drives a scripted, zero-latency",
        "model (in its native interface: tao `Model`, LangChain `BaseChatModel` with tool",
        "calls / `LLM` for the text ReAct agent, smolagents `Model` returning tool calls,",
        "DSPy's `DummyLM`) through the same two tools for episodes of the same number of",
        "model calls. µs/step = (episode wall time − the scripted model's own time) / model",
        "calls, median over episodes after warm-up. *import s*: importing what the agent",
        "needs, in the child, before anything else. *peak RSS*: `resource.getrusage`",
        "`ru_maxrss` of the child (import + all episodes). dspy.ReAct makes one more model",
        "call per episode than the others (its final extract step); its cost is included.",
        "",
        o_text,
        "",
        "## Concurrency",
        "",
        f"`{shown('concurrency')}",
        "",
        "N threads, each with its own `Agent` (own OpenAI client and connection pool), run",
        "back to back against a local OpenAI-compatible server (stdlib `ThreadingHTTPServer`",
        "on 127.0.0.1) that answers every call after a fixed latency.",
        "",
        c_text,
        "",
        "## Prompt tokens per solved HotpotQA question",
        "",
        f"`{shown('tokens')}",
        "",
        "tao versus the seeds' naive loop (the whole transcript re-sent as one user message",
        "every step, tool output uncut), same system prompt, same tools. The scripted policy",
        "sends identical replies to both loops, so any difference is the framework's.",
        "Prompts are rendered with ChatML and counted with the embedded model's tokenizer;",
        "*cacheable* is the token prefix shared with the previous call (a provider prompt",
        "cache or llama.cpp's KV cache reuses it); *evaluated* is what llama.cpp really",
        "processed (embedded model only).",
        "",
        t_text,
        "",
        *local_section(outputs, shown),
        f"Scripted policy: tao sends {t.get('tao_over_naive_sent')}× the naive loop's tokens "
        f"({t.get('tao_sent_per_solved')} vs {t.get('naive_sent_per_solved')} per solved "
        f"question); not cacheable: {t.get('tao_uncached_per_solved')} vs "
        f"{t.get('naive_uncached_per_solved')}.",
        "",
        TOKENS_NOTE,
        "## Profile",
        "",
        PROFILE,
        "## What was changed to get here",
        "",
        CHANGES,
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
