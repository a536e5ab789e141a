"""Repeated calls: marked, answered from the earlier result, bounded (SPEC L12, issue 13)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tao import Agent, Status, tool
from tao.models.base import ModelReply, ModelRequest, ToolCall

Replay = Callable[[list[str]], Path]
ran: list[str] = []


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    ran.append(key)
    return f"value of {key}"


@tool(effects="writes")
def save(key: str) -> str:
    """Save a key."""
    ran.append(f"save {key}")
    return f"saved {key}"


@tool(effects="writes")
def put(path: str, content: str) -> str:
    """Write content to a path (refuses a path with a space)."""
    if " " in path:
        from tao.errors import ToolError

        raise ToolError("no spaces in paths")
    ran.append(f"put {path}")
    return f"wrote {path}"


def run(script: Path, **settings: object) -> Any:
    ran.clear()
    approve_all = Agent(
        f"replay:{script}", [lookup, save, put], record=False, approve=lambda t, a: True, **settings
    )
    return approve_all.run("x")


def test_a_read_only_repeat_is_marked_and_answered_from_the_earlier_result_L12(
    replay: Replay,
) -> None:
    script = replay(
        ["Action: lookup[a]", "Action: lookup[b]", "Action: lookup[a]", "Action: finish[x]"]
    )
    result = run(script)
    assert ran == ["a", "b"]  # the third call never ran
    first, _, third, _ = result.steps
    assert (first.repeat_of, third.repeat_of) == (None, 1)
    assert "already called with these arguments in step 1" in (third.observation or "")
    assert "value of a" in (third.observation or "")
    # It says what to do instead (issue 30: the embedded model re-read a file it had and
    # never wrote): use the result and move on, not the same call again.
    assert "Do not call it again" in (third.observation or "")
    assert result.status is Status.FINISHED


def test_a_state_changing_call_between_makes_it_no_repeat(replay: Replay) -> None:
    script = replay(
        ["Action: lookup[a]", "Action: save[a]", "Action: lookup[a]", "Action: finish[x]"]
    )
    result = run(script)
    assert ran == ["a", "save a", "a"]
    assert [s.repeat_of for s in result.steps] == [None, None, None, None]


def test_a_side_effecting_repeat_still_asks_and_runs_but_is_marked(replay: Replay) -> None:
    script = replay(["Action: save[a]", "Action: save[a]", "Action: finish[x]"])
    result = run(script)
    assert ran == ["save a", "save a"]
    assert result.steps[1].repeat_of == 1


def test_a_run_that_keeps_repeating_ends_with_a_budget_status_naming_repeats_L12(
    replay: Replay,
) -> None:
    script = replay(["Action: lookup[a]"] * 10)
    result = run(script, max_repeats=2)
    assert result.status is Status.MAX_STEPS
    assert result.stop_reason is not None and "repeat limit of 2" in result.stop_reason
    assert len(result.steps) == 4 and ran == ["a"]


def test_max_repeats_on_the_command_line_and_repeat_of_in_the_json(
    replay: Replay, tao_cli: Any
) -> None:
    script = replay(["Action: calculator[1+1]"] * 5)
    out = tao_cli("run", "x", "--model", f"replay:{script}", "-t", "calc", "--max-repeats", "1",
                  "--json")  # fmt: skip
    assert out.returncode == 3, out.stderr
    data = json.loads(out.stdout)
    assert [s["repeat_of"] for s in data["steps"]] == [None, 1, 1]
    assert "repeat limit of 1" in data["stop_reason"]


class Stubborn:
    """A native model that calls the calculator again and again unless it may only answer."""

    name, supports_stop, supports_grammar, supports_tools = "stubborn", True, False, True

    def __init__(self) -> None:
        self.offered: list[list[str]] = []

    def complete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        names = [t.name for t in request.tools or ()]
        self.offered.append(names)
        if names == ["finish"]:
            return ModelReply(text="", tool_calls=(ToolCall("f", "finish", {"answer": "395"}),))
        call = ToolCall(f"c{len(self.offered)}", "calculator", {"expression": "17 * 23 + 4"})
        return ModelReply(text="", tool_calls=(call,))

    async def acomplete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        return self.complete(request, on_text)


def test_after_its_repeats_a_model_may_only_answer_and_the_answer_is_marked_forced() -> None:
    model = Stubborn()
    result = Agent(model, ["calc"], record=False, max_repeats=2).run("17 * 23 + 4?")
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    assert [s.repeat_of for s in result.steps[:3]] == [None, 1, 1]
    assert model.offered[-1] == ["finish"] and "calculator" in model.offered[0]
    assert result.steps[-1].forced and not result.steps[0].forced
    assert result.stop_reason == "answer forced by repeated calls"


def test_the_last_step_of_the_budget_may_only_answer() -> None:
    model = Stubborn()
    result = Agent(model, ["calc"], record=False, max_steps=2, max_repeats=5).run("x")
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    assert model.offered == [["calculator", "finish"], ["finish"]]
    assert result.stop_reason == "answer forced by the step limit of 2"


polls: list[str] = []


@tool(volatile=True)
def job_status(job: str) -> str:
    """The status of a job, which changes while it runs (a poll)."""
    polls.append(job)
    return "done" if len(polls) >= 3 else "running"


def test_a_volatile_repeat_runs_again_and_is_a_repeat_only_when_nothing_changed_L12(
    replay: Replay,
) -> None:
    polls.clear()
    script = replay(["Action: job_status[j]"] * 3 + ["Action: finish[done]"])
    agent = Agent(f"replay:{script}", [job_status], record=False, max_repeats=1)
    result = agent.run("wait for j")
    assert polls == ["j", "j", "j"]  # every poll ran: a cached one could never see "done"
    assert result.status is Status.FINISHED and result.answer == "done"
    first, second, third, _ = result.steps
    assert (first.observation, third.observation) == ("running", "done")
    assert second.repeat_of == 1  # said what step 1 said: a repeat, and noted as one
    assert "already called with these arguments in step 1" in (second.observation or "")
    assert third.repeat_of is None  # said something new


def test_a_volatile_tool_that_keeps_saying_the_same_is_still_bounded_L12(replay: Replay) -> None:
    polls.clear()

    @tool(volatile=True)
    def stuck(job: str) -> str:
        """Always running."""
        polls.append(job)
        return "running"

    script = replay(["Action: stuck[j]"] * 10)
    result = Agent(f"replay:{script}", [stuck], record=False, max_repeats=2).run("x")
    assert result.status is Status.MAX_STEPS
    assert result.stop_reason is not None and "repeat limit of 2" in result.stop_reason
    assert len(polls) == 4  # each repeat ran, and the fourth call ended the run
    assert [s.repeat_of for s in result.steps] == [None, 1, 1, 1]


def test_a_resumed_run_counts_volatile_repeats_as_the_live_run_did(replay: Replay) -> None:
    from tao.run.repeats import Repeats, call_key

    polls.clear()
    script = replay(["Action: job_status[j]"] * 3 + ["Action: finish[done]"])
    result = Agent(f"replay:{script}", [job_status], record=False).run("wait")
    rebuilt = Repeats.replay(2, result.steps, {"job_status": job_status})
    assert rebuilt.count == 1
    # compared with its latest result (not the note the repeat was answered with)
    assert rebuilt.seen[call_key("job_status", {"job": "j"})].observation == "done"


def test_a_volatile_call_failing_the_same_way_again_is_a_repeat_and_bounded_L12(
    replay: Replay,
) -> None:
    from tao.errors import ToolError

    @tool(volatile=True)
    def next_page(cursor: str) -> str:
        """The next page after a cursor."""
        polls.append(cursor)
        raise ToolError("no such cursor")

    polls.clear()
    script = replay(["Action: next_page[c9]"] * 10)
    result = Agent(f"replay:{script}", [next_page], record=False, max_repeats=1).run("x")
    assert result.status is Status.MAX_STEPS and len(polls) == 3
    assert [s.repeat_of for s in result.steps] == [None, 1, 1]
    assert "no such cursor" in (result.steps[1].observation or "")
    assert "already called" in (result.steps[1].observation or "")


def test_a_side_effecting_call_whose_arguments_do_not_fit_is_a_repeat_when_sent_again_L12(
    replay: Replay,
) -> None:
    """Issue 30: the embedded model sent ``write_file`` the same broken arguments four times;
    a call that cannot even start changed nothing, so an identical retry is a repeat, its
    observation says so, and ``--max-repeats`` ends the run."""
    script = replay(["Action: put[count.txt]"] * 10)
    ran.clear()
    agent = Agent(
        f"replay:{script}",
        [put],
        record=False,
        approve=lambda t, a: True,
        max_repeats=2,
        max_steps=20,
    )
    result = agent.run("x")
    assert ran == []
    assert result.status is Status.MAX_STEPS
    assert result.stop_reason is not None and "repeat limit of 2" in result.stop_reason
    assert [s.repeat_of for s in result.steps] == [None, 1, 1, 1]
    assert "same call as step 1" in (result.steps[1].observation or "")
    assert "same call as step" not in (result.steps[0].observation or "")


def test_an_unknown_tool_written_again_is_a_repeat_L12(replay: Replay) -> None:
    script = replay(["Action: nosuch[a]", "Action: Nosuch[a]", "Action: nosuch[a]"] + ["x"] * 3)
    result = run(script, max_repeats=5)
    assert [s.repeat_of for s in result.steps[:3]] == [None, None, 1]


def test_a_side_effecting_call_that_failed_is_a_repeat_and_forgets_nothing_L12(
    replay: Replay,
) -> None:
    """A write that failed changed nothing: the same write again is a repeat, and a read
    before it is still answered from its first result; a write that worked starts afresh."""
    script = replay(
        [
            "Action: lookup[a]",
            'Action: put(path="a b", content="1")',
            'Action: put(path="a b", content="1")',
            "Action: lookup[a]",
            'Action: put(path="ab", content="1")',
            'Action: put(path="ab", content="1")',
            "Action: lookup[a]",
            "Action: finish[x]",
        ]
    )
    result = run(script, max_repeats=5)
    assert [s.repeat_of for s in result.steps] == [None, None, 2, 1, None, 5, None, None]
    assert ran == ["a", "put ab", "put ab", "a"]


def test_a_resumed_run_counts_repeats_of_calls_that_could_not_start(replay: Replay) -> None:
    from tao.run.repeats import Repeats, unready_key

    script = replay(["Action: put[oops]", "Action: put[oops]", "Action: finish[x]"])
    result = run(script)
    assert [s.repeat_of for s in result.steps] == [None, 1, None]
    rebuilt = Repeats.replay(2, result.steps, {"put": put, "lookup": lookup})
    assert rebuilt.count == 1 and unready_key("put", "oops") in rebuilt.seen
