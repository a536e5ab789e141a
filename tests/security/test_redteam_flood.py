"""Red team: one model reply that floods tao with tool calls (issue 26 item 5; SPEC L4, S4).

Measured before the cap: a reply of 5,000 parallel calls ran them all (71 s) and printed
103 MB of ``--json``. Now the first ``max_calls_per_reply`` run and the rest are refused
as one observation that says how many and why, in the live run and on resume alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao import Agent, Status, tool
from tao.approval.policy import Policy

Replay = Callable[[list[Any]], Path]


def _flood(n: int, name: str = "calculator", key: str = "expression") -> dict[str, Any]:
    """A native reply asking ``n`` different calls (no two alike: no repeat rule helps)."""
    calls = [{"id": f"c{i}", "name": name, "arguments": {key: f"{i} + 1"}} for i in range(n)]
    return {"content": "I will compute everything at once.", "tool_calls": calls}


FINISH = {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]}


def test_a_reply_of_5000_calls_runs_16_and_refuses_the_rest_in_one_observation_L4(
    tao_cli: Any, replay: Replay
) -> None:
    """Through the real CLI: fast, a small ``--json``, and the refusal names the cap."""
    script = replay([_flood(5_000), FINISH])
    started = time.perf_counter()
    out = tao_cli("run", "x", "-m", f"replay:{script}", "-t", "calc", "--json")
    elapsed = time.perf_counter() - started
    assert out.returncode == 0, out.stderr
    data = out.json()
    assert data["status"] == "finished"
    actions = [s for s in data["steps"] if s["kind"] == "action"]
    ran = [s for s in actions if s["tool"] == "calculator"]
    assert [s["observation"] for s in ran] == [str(i + 1) for i in range(16)]
    refused = [s for s in actions if s["tool"] is None]
    assert len(refused) == 1
    assert "4984 more tool calls were refused" in refused[0]["observation"]
    assert "at most 16" in refused[0]["observation"]
    assert "max_calls_per_reply" in refused[0]["observation"]
    assert len(out.stdout) < 2_000_000, len(out.stdout)  # was 103 MB
    assert elapsed < 30, elapsed  # was 71 s; most of this is starting Python


def test_the_cap_is_a_flag_and_the_model_sees_the_refusal_after_the_last_result(
    tao_cli: Any, replay: Replay
) -> None:
    """``--max-calls-per-reply 3``: three run; the note follows the third result, outside
    its fence, and every kept call has its result (a valid tool-calling transcript)."""
    script = replay([_flood(40), FINISH])
    out = tao_cli(
        "run",
        "x",
        "-m",
        f"replay:{script}",
        "-t",
        "calc",
        "--json",
        "--max-calls-per-reply",
        "3",
    )
    assert out.returncode == 0, out.stderr
    steps = out.json()["steps"]
    assert [s["tool"] for s in steps] == ["calculator"] * 3 + [None, "finish"]
    assert "37 more tool calls were refused" in steps[3]["observation"]
    sent = steps[-1]["model_input"]
    assistant = next(m for m in sent if m.get("tool_calls"))
    assert [c["id"] for c in assistant["tool_calls"]] == ["c0", "c1", "c2"]
    results = [m for m in sent if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["c0", "c1", "c2"]
    assert results[-1]["content"].endswith(steps[3]["observation"])
    assert "refused" not in results[0]["content"]


def test_one_call_over_the_cap_is_one_refusal_in_the_singular(replay: Replay) -> None:
    agent = Agent(f"replay:{replay([_flood(17), FINISH])}", ["calc"], record=False)
    result = agent.run("x")
    note = result.steps[16].observation or ""
    assert note.startswith("Error: 1 more tool call was refused")


def test_a_finish_beyond_the_cap_is_refused_with_the_rest(replay: Replay) -> None:
    """The cap applies before the reply is read: an answer hidden at call 20 is not taken."""
    reply = _flood(20)
    reply["tool_calls"].append(FINISH["tool_calls"][0])
    agent = Agent(
        f"replay:{replay([reply, FINISH])}", ["calc"], record=False, max_calls_per_reply=4
    )
    result = agent.run("x")
    assert result.status is Status.FINISHED
    assert [s.tool for s in result.steps] == ["calculator"] * 4 + [None, "finish"]
    assert "17 more tool calls were refused" in (result.steps[4].observation or "")


written: list[str] = []


@tool(effects="writes")
def write_note(text: str) -> str:
    """Write a note."""
    written.append(text)
    return f"wrote {text}"


def test_resume_refuses_the_same_calls_and_stores_only_the_kept_ones_R1(
    replay: Replay, tmp_path: Path
) -> None:
    """A flood of calls with side effects pauses for approval; the checkpoint holds the 16
    kept calls and the count, and the resumed run runs those 16 and refuses the same 84."""
    written.clear()
    script = replay([_flood(100, "write_note", "text"), FINISH])
    agent = Agent(f"replay:{script}", [write_note], policy=Policy())
    paused = agent.run("x")
    assert paused.status is Status.AWAITING_APPROVAL
    assert paused.pending is not None and len(paused.pending) == 16
    assert written == []
    store = agent.run_log()
    assert store is not None and paused.run_id is not None
    checkpoint = store.load_state(paused.run_id)  # as `tao resume` reads it, another day
    assert checkpoint is not None
    assert checkpoint.refused_calls == 84
    assert checkpoint.reply is not None and len(checkpoint.reply.tool_calls) == 16
    done = agent.resume(paused, approve=True)
    assert done.status is Status.FINISHED
    assert sorted(written) == sorted(f"{i} + 1" for i in range(16))  # run in parallel
    notes = [s.observation for s in done.steps if s.kind.value == "action" and s.tool is None]
    assert len(notes) == 1 and "84 more tool calls were refused" in (notes[0] or "")


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_calls_per_reply"):
        Agent("replay:x.json", ["calc"], record=False, max_calls_per_reply=0)
