"""Record what `tao run --json` gives per scenario: the reference for tests/test_golden.py.

Run once with the tao whose behaviour is the reference (the redesign kept 0.1's):

    PYTHONPATH=/path/to/old/src python tests/data/golden/make_golden.py

Each scenario is a replay script, a task and CLI options; the output, with
what varies between runs (ids, clocks, paths) normalised, goes to golden.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def normalise(data: dict[str, object], replay: Path) -> dict[str, object]:
    """Drop what differs from run to run: ids, clocks, durations, temp paths."""
    text = json.dumps(data, ensure_ascii=False)
    text = text.replace(str(replay), "REPLAY").replace(str(HERE / "project"), "PROJECT")
    out = json.loads(text)
    for key in ("run_id", "started_at", "duration_s", "pending"):
        out.pop(key, None)
    full: list[object] = []
    for step in out["steps"]:
        for key in ("duration_s", "model_duration_s", "tool_duration_s"):
            step.pop(key, None)
        if "model_input_from" in step:  # tao >= 0.2 prints only each step's new messages
            full = full[: step.pop("model_input_from")] + step["model_input"]
            step["model_input"] = full
    return out


def run_scenario(scenario: dict[str, object], python: str = sys.executable) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / f"{scenario['name']}.json"
        replay.write_text(json.dumps(scenario["replies"]), encoding="utf-8")
        args = [str(a).replace("{project}", str(HERE / "project")) for a in scenario["args"]]
        env = {**os.environ, "TAO_HOME": tmp}
        out = subprocess.run(
            [
                python,
                "-m",
                "tao",
                "run",
                str(scenario["task"]),
                "--model",
                f"replay:{replay}",
                *args,
                "--json",
                "--no-log",
                "--no-input",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        data = json.loads(out.stdout)
        data["exit_code"] = out.returncode
        return normalise(data, replay)


def main() -> None:
    scenarios = json.loads((HERE / "scenarios.json").read_text(encoding="utf-8"))
    golden = {s["name"]: run_scenario(s) for s in scenarios}
    (HERE / "golden.json").write_text(
        json.dumps(golden, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
