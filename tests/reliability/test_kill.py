"""`kill -9` at seeded random points of a real `tao run` (SPEC R1, M3; issue 14 item 6).

The command runs a scripted model through read-only tools and a tool that appends a
line to a ledger file (a side effect, pre-approved by a policy rule), and is killed
with SIGKILL at a random moment drawn from ``random.Random(seed)``. For every seed:

- `tao runs show` tells the truth about the killed run: interrupted, and every step it
  shows is the step the script made;
- `tao resume` finishes it, or, when the kill cut a side effect short, pauses it for a
  person with that very call pending and marked as possibly done; the person approves
  (it runs again) or denies (it is not run again), alternating by seed, and it finishes;
- no completed step is lost or counted twice, and each ledger line was appended at
  most once, unless a person approved running it again.

The tool set is added to the real CLI by a small wrapper (the CLI has no plugin
mechanism, and ``write_file`` overwrites, so a repeat would not show).
"""

from __future__ import annotations

import json
import os
import pty
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tao.store.factory import open_store

Replay = Callable[[list[str]], Path]

SEEDS = range(20)
WORKERS = min(4, os.cpu_count() or 1)

WRAPPER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from tao import tool
    from tao.tools import registry

    ledger = Path(os.environ["LEDGER"])

    @tool(effects="writes")
    def append_line(text: str) -> str:
        \"\"\"Append one line to the ledger.\"\"\"
        with ledger.open("a") as handle:
            handle.write(text + "\\n")
        time.sleep(float(os.environ.get("LEDGER_PAUSE", "0.15")))  # done, not yet recorded
        return "appended " + text

    @tool
    def count_lines(word: str) -> str:
        \"\"\"Count the ledger's lines that contain a word.\"\"\"
        time.sleep(0.1)
        lines = ledger.read_text().splitlines() if ledger.exists() else []
        return str(sum(word in line for line in lines))

    registry.TOOL_SETS["ledger"] = registry.ToolSet(
        name="ledger", factory=lambda context: [append_line, count_lines], help="a ledger"
    )
    from tao.cli.main import main

    main()
    """
)

LINES = ("alpha", "beta", "gamma")
SCRIPT = [
    "Thought: warm up.\nAction: calculator[2 + 2]",
    "Thought: first line.\nAction: append_line[alpha]",
    "Thought: check.\nAction: count_lines[a]",
    "Thought: second line.\nAction: append_line[beta]",
    "Thought: more sums.\nAction: calculator[3 * 7]",
    "Thought: third line.\nAction: append_line[gamma]",
    "Thought: check again.\nAction: count_lines[e]",
    "Thought: all written.\nAction: finish[done]",
]


@dataclass
class Home:
    """One seed's TAO_HOME, ledger and commands."""

    root: Path
    wrapper: Path
    script: Path
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        (self.root / "home").mkdir(parents=True)
        (self.root / "home" / "policy.toml").write_text('[[allow]]\ntool = "append_line"\n')
        self.env = {**os.environ, "TAO_HOME": str(self.root / "home"),
                    "LEDGER": str(self.ledger), "COLUMNS": "200"}  # fmt: skip

    @property
    def ledger(self) -> Path:
        return self.root / "ledger.txt"

    @property
    def db(self) -> Path:
        return self.root / "home" / "tao.db"

    def command(self, *args: str) -> list[str]:
        return [sys.executable, str(self.wrapper), *args]

    def start(self) -> subprocess.Popen[str]:
        run = ("run", "write the ledger", "--model", f"replay:{self.script}", "--tools",
               "calc,ledger", "--max-steps", "12", "--no-input", "--json")  # fmt: skip
        return subprocess.Popen(
            self.command(*run), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def tao(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args), env=self.env, capture_output=True, text=True, timeout=60
        )

    def shown(self) -> dict[str, Any] | None:
        """What `tao runs show RUN --json` prints for the only run (read here, in-process:
        a process per look would make the test too slow), or ``None`` before it exists."""
        if not self.db.exists():
            return None
        with open_store(self.db) as store:
            runs = store.list_runs()
            if not runs:
                return None
            data: dict[str, Any] = store.get_run(runs[0].run_id).to_json()
        return data

    def lines(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []


def _shape(steps: list[dict[str, Any]]) -> list[tuple[int, str | None, str | None]]:
    """Each step's index, tool and its one argument (every tool here takes one)."""
    return [(s["index"], s["tool"], *(s["arguments"] or {None: None}).values()) for s in steps]


def _one_seed(seed: int, make: Callable[[str], Home], full_s: float) -> str:
    """Kill, inspect, resume (deciding if asked) one run; returns what the kill hit."""
    home, rng = make(f"seed-{seed}"), random.Random(seed)
    delay = rng.uniform(0.0, 0.75 * full_s)  # the rest is the answer and the exit
    child = home.start()
    deadline = time.monotonic() + 60
    while not home.db.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    expected = [(i + 1, _tool(reply), _argument(reply)) for i, reply in enumerate(SCRIPT)]
    before = home.shown()
    if before is None:  # killed before the run was recorded: nothing happened, nothing to resume
        assert home.lines() == [], seed
        return "before the run"
    assert before["status"] in ("interrupted", "finished"), (seed, before["status"])
    assert _shape(before["steps"]) == expected[: len(before["steps"])], seed  # the truth
    if before["status"] == "finished":
        final, hit = before, "after the end"
    else:
        final, hit = _resume(home, before["run_id"], seed)
    assert (final["status"], final["answer"]) == ("finished", "done"), (seed, final)
    assert _shape(final["steps"]) == expected, seed  # every step, once, in order
    assert home.shown() == final, seed  # what `tao runs show --json` prints is the truth
    for kept in before["steps"]:  # nothing completed before the kill is lost or changed
        if kept["tool"] != "count_lines":
            assert final["steps"][kept["index"] - 1]["observation"] == kept["observation"], seed
    _check_ledger(home.lines(), hit, seed)
    return hit


def _resume(home: Home, run_id: str, seed: int) -> tuple[dict[str, Any], str]:
    resumed = home.tao("resume", run_id, "--json", "--no-input")
    data = json.loads(resumed.stdout)  # exactly one JSON object
    if data["status"] != "awaiting_approval":
        assert resumed.returncode == 0, (seed, resumed.stderr)
        return data, "elsewhere"
    assert resumed.returncode == 4, seed
    (call,) = data["pending"]
    assert (call["tool"], call["interrupted"]) == ("append_line", True), (seed, call)
    line = call["arguments"]["text"]
    told = home.tao("runs", "show", run_id).stdout
    assert "was running when the process stopped; it may have taken effect" in told, seed
    decision = "approve" if seed % 2 == 0 else "deny"
    assert home.tao("runs", decision, run_id, "--call", call["id"]).returncode == 0, seed
    again = home.tao("resume", run_id, "--json", "--no-input")
    assert again.returncode == 0, (seed, again.stderr)
    final: dict[str, Any] = json.loads(again.stdout)
    step = final["steps"][call["step"] - 1]
    if decision == "deny":
        assert "may have taken effect; a person chose not to run it again" in step["observation"]
    else:
        assert step["observation"] == f"appended {line}", seed
    return final, f"{decision}d {line}".replace("denyd", "denied")


def _check_ledger(lines: list[str], hit: str, seed: int) -> None:
    """Each line once; a line cut short may be there once more if a person re-approved it,
    or be missing if a person denied it."""
    for line in LINES:
        count = lines.count(line)
        if hit == f"approved {line}":
            assert count in (1, 2), (seed, lines)
        elif hit == f"denied {line}":
            assert count in (0, 1), (seed, lines)
        else:
            assert count == 1, (seed, hit, lines)
    assert [line for i, line in enumerate(lines) if line not in lines[:i]] == [
        line for line in LINES if line in lines
    ], (seed, lines)


def _tool(reply: str) -> str:
    return reply.split("Action: ")[1].split("[")[0]


def _argument(reply: str) -> str:
    return reply.split("[", 1)[1].rstrip("]")


def test_sigkill_at_seeded_random_points_never_loses_or_repeats_a_step_R1(
    tmp_path: Path, replay: Replay
) -> None:
    wrapper, script = tmp_path / "tao_ledger.py", replay(SCRIPT)
    wrapper.write_text(WRAPPER)

    def make(name: str) -> Home:
        return Home(tmp_path / name, wrapper, script)

    reference = make("reference")  # an uninterrupted run: how long the run part takes
    child = reference.start()
    while not reference.db.exists() and child.poll() is None:
        time.sleep(0.01)
    started = time.monotonic()
    out, err = child.communicate(timeout=60)
    full_s = time.monotonic() - started
    assert child.returncode == 0, err
    assert json.loads(out)["status"] == "finished" and reference.lines() == list(LINES)
    with ThreadPoolExecutor(WORKERS) as pool:
        hits = list(pool.map(lambda seed: _one_seed(seed, make, full_s), SEEDS))
    assert len(hits) == len(SEEDS)
    print("kills landed:", sorted(hits))


def test_at_a_terminal_tao_resume_asks_the_person_about_the_call_cut_short_R1(
    tmp_path: Path, replay: Replay
) -> None:
    """`tao resume` at a terminal: the prompt names the call and says it may have taken
    effect; the person's yes runs it again (the policy that pre-approved it is not asked)."""
    wrapper, script = tmp_path / "tao_ledger.py", replay(SCRIPT)
    wrapper.write_text(WRAPPER)
    home = Home(tmp_path / "terminal", wrapper, script)
    home.env["LEDGER_PAUSE"] = "60"
    child = home.start()
    deadline = time.monotonic() + 60
    while not home.lines() and time.monotonic() < deadline:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert home.lines() == ["alpha"]
    run = home.shown()
    assert run is not None and run["status"] == "interrupted"
    del home.env["LEDGER_PAUSE"]
    terminal, keyboard = pty.openpty()
    resume = subprocess.Popen(
        home.command("resume", run["run_id"], "--json"), env=home.env, stdin=keyboard,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(keyboard)
    try:
        os.write(terminal, b"y\n")
        out, err = resume.communicate(timeout=120)
    finally:
        os.close(terminal)
    assert resume.returncode == 0, err
    assert "append_line(text='alpha')" in err, err
    assert "was running when the process stopped; it may have taken effect" in err
    assert "Allow it?" in err
    done = json.loads(out)
    assert (done["status"], done["answer"]) == ("finished", "done")
    assert home.lines() == ["alpha", "alpha", "beta", "gamma"]  # the person said run it again
