"""A user's own worker process, with its own Python tools (issue 28): the queue tests and
``bench/queue_throughput.py`` run it as ``python tests/workers/app.py worker|submit``.

Each run's task is ``job KEY``. The scripted model (``APP_LATENCY_S`` a call, 0.2 s by
default; ``APP_SLOW_S``, 5 s, for a key ``slow…``) asks for ``record[KEY]`` (a side effect:
it runs a child ``sleep``, then appends ``KEY pid`` to ``$APP_LEDGER``), then ``peek[KEY]``
(read-only), then finishes. The ledger is what "no side effect runs twice" is checked
against. ``APP_APPROVE=0``: no approver, so ``record`` waits for a person
(``awaiting_approval``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from tao import Agent, tool
from tao.models.base import ModelReply, ModelRequest, OnText
from tao.models.bridge import SyncFirstModel
from tao.workers.worker import Worker

LATENCY_S = float(os.environ.get("APP_LATENCY_S", "0.2"))
TOOL_S = os.environ.get("APP_TOOL_S", "0.2")
#: A call for a key ``slow…`` takes this long instead (a worker kept busy).
SLOW_S = float(os.environ.get("APP_SLOW_S", "5"))


class Script(SyncFirstModel):
    """record, then peek, then finish; ``APP_LATENCY_S`` per call."""

    name = "script"
    supports_stop = False
    supports_grammar = False
    supports_tools = False

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        text = "\n".join(str(m.get("content") or "") for m in request.messages)
        key = re.findall(r"job (\w+)", text)[0]
        time.sleep(SLOW_S if key.startswith("slow") else LATENCY_S)
        if f"recorded {key}" not in text and "not run" not in text:
            reply = f"Thought: write it down.\nAction: record[{key}]"
        elif f"peeked {key}" not in text:
            reply = f"Thought: look.\nAction: peek[{key}]"
        else:
            reply = f"Action: finish[done {key}]"
        return ModelReply(text=reply, input_tokens=len(text) // 4, output_tokens=8)


@tool(effects="writes")
def record(key: str) -> str:
    """Write the key down in the ledger (a side effect)."""
    subprocess.run(["sleep", TOOL_S], check=True)  # a child, killed with its worker
    with open(os.environ["APP_LEDGER"], "a") as ledger:
        ledger.write(f"{key} {os.getpid()}\n")
    return f"recorded {key}"


@tool
def peek(key: str) -> str:
    """Look at the key (read-only)."""
    return f"peeked {key}"


def agent(run_id: str | None = None) -> Agent:
    approve = None if os.environ.get("APP_APPROVE") == "0" else (lambda tool, args: True)
    return Agent(Script(), [record, peek], approve=approve, max_steps=6)


def main() -> None:
    command, *rest = sys.argv[1:]
    if command == "submit":  # submit N [PREFIX]: prints one run id a line
        count, prefix = int(rest[0]), rest[1] if len(rest) > 1 else "k"
        submitter = agent()
        for n in range(count):
            print(submitter.submit(f"job {prefix}{n}"), flush=True)
        return
    concurrency = int(rest[0]) if rest else 4
    sweep_s = float(os.environ.get("APP_SWEEP_S", "0.5"))  # the tests: a dead worker seen fast
    worker = Worker(concurrency=concurrency, agent=agent, sweep_s=sweep_s)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    worker.serve(ready=lambda: print(f"ready {worker.id}", flush=True))


if __name__ == "__main__":
    main()
