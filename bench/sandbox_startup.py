"""What the sandbox adds to each child tao starts (SPEC S10; issue 26).

Runs ``true`` and pytest on a one-test file, each ``--runs`` times plain and inside
tao's bubblewrap sandbox (the exact argv and environment ``run_tests`` uses), and
prints the median wall time of each and the difference. The pytest children are the
real ``run_tests`` command (isolated interpreter, the launcher, ``-p no:cacheprovider``).

    python bench/sandbox_startup.py --runs 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tao.sandbox import Sandbox, availability, confine
from tao.sandbox.environment import child_environment
from tao.tools.tests import PYTEST_LAUNCHER


def median_ms(argv: list[str], env: dict[str, str], cwd: Path, runs: int) -> float:
    """Median wall time of ``runs`` runs of ``argv``, after one warm-up run."""
    times = []
    for index in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
        if index:
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if not availability().available:
        raise SystemExit(f"no sandbox here: {availability().reason}")
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "test_one.py").write_text("def test_one():\n    assert True\n")
        pytest_argv = [sys.executable, "-I", "-B", "-c", PYTEST_LAUNCHER, "-q"]
        pytest_argv += ["-p", "no:cacheprovider", "--", "test_one.py"]
        sandbox = Sandbox()
        plain_env = child_environment(sandbox, home=folder, tmp=folder)
        results = {}
        for name, argv in (("true", ["true"]), ("pytest", pytest_argv)):
            confined = confine(argv, sandbox, cwd=project, readable=[project])
            plain = median_ms(argv, plain_env, project, args.runs)
            boxed = median_ms(list(confined.argv), confined.env, project, args.runs)
            results[name] = {"plain_ms": round(plain, 1), "sandboxed_ms": round(boxed, 1),
                             "added_ms": round(boxed - plain, 1)}  # fmt: skip
    print(json.dumps({"runs": args.runs, "load": os.getloadavg(), **results}, indent=2))


if __name__ == "__main__":
    main()
