"""The benchmarks run and report sane numbers (issue 7); how fast is not a test's business.

Each script runs in ``--quick`` mode in a child process, tao only (no peers' venv), and
its ``--json`` last line must carry the documented keys with plausible values.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), "--quick", "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert any(line.startswith("|") for line in lines), "no table printed"
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def test_overhead_quick_reports_tao() -> None:
    data = run_bench("overhead.py", "--no-peers")
    for key in ("tao_us_per_step", "tao_import_s", "tao_peak_mb", "tao_recorded_us_per_step"):
        assert positive(data[key]), key
    assert data["tao_us_per_step"] < 1e6  # under a second a step, or the harness is broken
    assert 1 < data["tao_peak_mb"] < 4096
    assert positive(data["import_tao_s"]) or data["import_tao_s"] <= 0.5
    assert isinstance(data["goal_import_150ms"], bool)
    assert "langgraph_us_per_step" not in data  # no peers were asked for


def test_concurrency_quick_scales() -> None:
    data = run_bench("concurrency.py")
    for n in (1, 2, 4, 8):
        assert positive(data[f"throughput_{n}"]), n
    assert data["throughput_8"] > data["throughput_1"]  # runs overlap at all
    assert isinstance(data["goal_8_met"], bool)
    assert 0 < data["efficiency_8"] <= 1.5


def test_tokens_quick_counts_both_loops() -> None:
    """On the HotpotQA sample shipped in the package (issue 30): no data beside the clone."""
    data = run_bench("tokens.py")
    assert data["tao_solved"] == data["naive_solved"] == data["questions"] == 5
    for loop in ("tao", "naive"):
        sent = data[f"{loop}_sent_per_solved"]
        assert positive(sent)
        assert 0 <= data[f"{loop}_cacheable_per_solved"] <= sent
    assert 0.5 < data["tao_over_naive_sent"] < 2


def test_long_runs_quick_stays_flat_with_compaction() -> None:
    """bench/long_runs.py (issue 27): with compaction the prompt stays under the window;
    without it, it grows with the run."""
    data = run_bench("long_runs.py")
    elide, none = data["elide"], data["none"]
    assert elide["status"] == none["status"] == "finished"
    assert elide["max_prompt_tokens"] < data["window"] < none["max_prompt_tokens"]
    assert elide["compactions"] >= 3 and none["compactions"] == 0
    assert elide["refused"] == 0
