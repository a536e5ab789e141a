"""A process that acts for a run, for the run-lease tests (SPEC R5): ``python -m
tests.fakes.lease_worker run|resume SCRIPT MARKS [RUN_ID]``.

The run's one tool, ``slow_write``, is a side effect (it needs approval) that appends
``PID start TEXT`` to MARKS, sleeps ``$SLOW_S`` seconds (less once ``MARKS.go`` exists),
then appends ``PID end TEXT``: a
step that runs twice leaves two ``start`` lines. ``run`` with ``APPROVE=1`` approves it
itself (a live run, busy in its tool); without, the run pauses for approval. ``resume``
approves the waiting call. Prints one JSON object: the run's id and status, or
``{"busy": message}`` and exit 3 when another process holds the run.
"""

from __future__ import annotations

import json
import os
import sys
import time

from tao import Agent, RunBusyError
from tao.tools.base import make_tool


def main(argv: list[str]) -> int:
    mode, script, marks = argv[:3]

    def slow_write(text: str) -> str:
        """Write text down, slowly."""
        with open(marks, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} start {text}\n")
        until = time.monotonic() + float(os.environ.get("SLOW_S", "3"))
        while time.monotonic() < until and not os.path.exists(marks + ".go"):
            time.sleep(0.05)  # a test ends the call early by creating MARKS.go
        with open(marks, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} end {text}\n")
        return "written"

    tool = make_tool(slow_write, effects=("write",))
    approve = (lambda tool, arguments: True) if os.environ.get("APPROVE") == "1" else None
    agent = Agent(f"replay:{script}", [tool], approve=approve)
    try:
        if mode == "run":
            result = agent.run("write it down slowly")
        else:
            result = agent.resume(argv[3], approve=True)
    except RunBusyError as error:
        print(json.dumps({"busy": str(error), "holder": error.holder}))
        return 3
    print(json.dumps({"run_id": result.run_id, "status": str(result.status)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
