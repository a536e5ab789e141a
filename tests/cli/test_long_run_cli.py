"""``tao run --context-window --compaction`` as a user types it (issue 27), and what
``tao runs show`` and ``--json`` say of each compaction."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.fakes.otlp import OtlpReceiver
from tests.fakes.window import WindowServer

from tao.format import labels_for
from tao.store.factory import open_store
from tao.ui.pages import step_html

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_long_cli_run_compacts_and_says_so(
    tao_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """30 files of ~1.6 KB through ``read_file`` in a 4,096-token window: the run finishes,
    no request is refused, and the trace shows each compaction (steps, policy, tokens) in
    ``--json``, ``tao runs show``, the web page and the OpenTelemetry step spans."""
    for n in range(1, 31):
        (tmp_path / f"f{n:02d}.txt").write_text(f"file {n}: " + "word " * 320)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    with WindowServer(window=4096, reads=30, files=True) as server, OtlpReceiver() as otlp:
        env |= {"OPENAI_API_KEY": "k", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint}
        run = tao_cli(
            "run", "Read f01.txt to f30.txt in order.", "-m", "openai:scripted",
            "--base-url", server.base_url, "-t", "files", "--project", str(tmp_path),
            "--protocol", "text", "--max-steps", "40", "--context-window", "4096",
            "--json", env=env,
        )  # fmt: skip
        spans = list(otlp.spans)
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

    with open_store() as store:
        steps = store.get_run(data["run_id"]).steps
    page = "".join(step_html(step, labels_for("en")) for step in steps)
    assert f"steps {first['first_step']}-{first['last_step']} compacted (elide)" in page

    marked = [s for s in spans if "tao.compaction.policy" in s.attributes]
    assert len(marked) == len({c["step"] for c in made})
    assert {s.attributes["tao.step.index"] for s in marked} == {c["step"] for c in made}
    assert all(s.attributes["tao.compaction.tokens_after"] < s.attributes[
        "tao.compaction.tokens_before"] for s in marked)  # fmt: skip


def test_a_bad_policy_is_refused_before_the_run(tao_cli: Callable[..., CliResult]) -> None:
    """``--compaction`` that names no policy is a usage error (exit 2), said before any step."""
    run = tao_cli("run", "hi", "-m", "replay:x.json", "--compaction", "shrink", "--json")
    assert run.returncode == 2
    assert "compaction" in (run.stdout + run.stderr)
    assert json.loads(run.stdout or "{}").get("steps") in (None, [])


def test_the_live_trace_shows_each_compaction_once_as_it_happens(
    tao_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """``tao run`` without ``--json`` prints each compaction's line when it is made, before
    the step whose request it made room for, in the words of ``tao runs show``, and once."""
    for n in range(1, 17):
        (tmp_path / f"f{n:02d}.txt").write_text(f"file {n}: " + "word " * 320)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"OPENAI_API_KEY": "k"}
    with WindowServer(window=4096, reads=16, files=True) as server:
        run = tao_cli(
            "run", "Read f01.txt to f16.txt in order.", "-m", "openai:scripted",
            "--base-url", server.base_url, "-t", "files", "--project", str(tmp_path),
            "--protocol", "text", "--max-steps", "30", "--context-window", "4096", env=env,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    with open_store() as store:
        (summary,) = store.list_runs()
        steps = store.get_run(summary.run_id).steps
    made = [c for step in steps for c in step.compactions]
    assert len(made) >= 2
    shown = tao_cli("runs", "show", summary.run_id)
    lines = run.stdout.splitlines()
    for record in made:
        line = f"⤓ {record.describe()}"
        assert line in shown.stdout  # the same words as runs show
        at = [i for i, text in enumerate(lines) if text.strip() == line]
        assert len(at) == 1, f"{line!r} shown {len(at)} times"
        rule = next(i for i, text in enumerate(lines) if f"#{record.step} " in f"{text} ")
        previous = next(i for i, text in enumerate(lines) if f"#{record.step - 1} " in f"{text} ")
        assert previous < at[0] < rule  # made after the step before, shown before its own
