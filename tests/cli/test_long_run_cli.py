"""``tao run --context-window --compaction`` as a user types it (issue 27), and what
``tao runs show`` and ``--json`` say of each compaction."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.fakes.window import WindowServer


def test_a_long_cli_run_compacts_and_says_so(
    tao_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """30 files of ~1.6 KB through ``read_file`` in a 4,096-token window: the run finishes,
    no request is refused, and the trace shows each compaction (steps, policy, tokens)."""
    for n in range(1, 31):
        (tmp_path / f"f{n:02d}.txt").write_text(f"file {n}: " + "word " * 320)
    with WindowServer(window=4096, reads=30, files=True) as server:
        run = tao_cli(
            "run", "Read f01.txt to f30.txt in order.", "-m", "openai:scripted",
            "--base-url", server.base_url, "-t", "files", "--project", str(tmp_path),
            "--protocol", "text", "--max-steps", "40", "--context-window", "4096",
            "--json", env={"OPENAI_API_KEY": "k"},
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    data = run.json()
    assert data["status"] == "finished"
    assert server.refused == 0
    made = [c for step in data["steps"] for c in step["compactions"]]
    assert len(made) >= 2
    assert all(c["policy"] == "elide" and c["window"] == 4096 for c in made)
    assert all(c["tokens_after"] < c["tokens_before"] for c in made)
    reads = [s["observation"] for s in data["steps"] if s["tool"] == "read_file"]
    assert len(reads) == 30 and all("word word" in r for r in reads)

    shown = tao_cli("runs", "show", data["run_id"])
    assert shown.returncode == 0, shown.stderr
    first = made[0]
    assert f"steps {first['first_step']}-{first['last_step']} compacted (elide)" in shown.stdout
    assert "4,096-token window" in shown.stdout


def test_a_bad_policy_is_refused_before_the_run(tao_cli: Callable[..., CliResult]) -> None:
    """``--compaction`` that names no policy is a usage error (exit 2), said before any step."""
    run = tao_cli("run", "hi", "-m", "replay:x.json", "--compaction", "shrink", "--json")
    assert run.returncode == 2
    assert "compaction" in (run.stdout + run.stderr)
    assert json.loads(run.stdout or "{}").get("steps") in (None, [])
