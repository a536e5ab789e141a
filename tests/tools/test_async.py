"""``async def`` tools (issue 15 item 4): awaited by ``arun``/``astream``, run on tao's loop
thread by ``run``/``stream``, bounded by the same time limits (SPEC L4, L5, T1)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao import Agent, Status, tool
from tao.events import Event, FinalEvent, ObservationEvent
from tao.state.result import RunResult

Replay = Callable[[list[Any]], Path]

SCRIPT = ["Thought: look it up.\nAction: lookup[ada]", "Action: finish[done]"]


@tool
async def lookup(name: str, loud: bool = False) -> str:
    """Look a person up in the directory.

    Args:
        name: Who to look up.
        loud: Shout the answer.
    """
    await asyncio.sleep(0)
    found = f"{name}: born 1815"
    return found.upper() if loud else found


@tool
def lookup_sync(name: str, loud: bool = False) -> str:
    """Look a person up in the directory.

    Args:
        name: Who to look up.
        loud: Shout the answer.
    """
    return name


def _agent(replay: Replay, tools: list[Any], script: list[Any] = SCRIPT, **settings: Any) -> Agent:
    return Agent(f"replay:{replay(script)}", tools, record=False, **settings)


def _first_observation(result: RunResult) -> str | None:
    assert result.status is Status.FINISHED, result.error
    return result.steps[0].observation


def test_an_async_tool_is_described_like_the_same_sync_tool_T1() -> None:
    assert lookup.description == lookup_sync.description
    assert lookup.schema == lookup_sync.schema
    assert lookup.param_names == ("name", "loud")
    assert lookup.call(lookup.validate({"name": "ada"})) == "ada: born 1815"  # plain Python too


def test_run_runs_an_async_tool_to_its_result_never_a_coroutine(replay: Replay) -> None:
    result = _agent(replay, [lookup]).run("who is ada?")
    assert _first_observation(result) == "ada: born 1815"
    assert "coroutine" not in (result.steps[0].observation or "")


def test_run_works_when_called_from_inside_a_running_event_loop(replay: Replay) -> None:
    agent = _agent(replay, [lookup])

    async def main() -> RunResult:
        return agent.run("who is ada?")  # blocking call from a coroutine: still no nested loop

    assert _first_observation(asyncio.run(main())) == "ada: born 1815"


def test_arun_awaits_an_async_tool_on_its_own_loop(replay: Replay) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    @tool
    async def where(name: str) -> str:
        """Say which loop ran this."""
        loops.append(asyncio.get_running_loop())
        return f"{name} ok"

    script = ["Action: where[x]", "Action: finish[done]"]

    async def main() -> tuple[RunResult, asyncio.AbstractEventLoop]:
        result = await _agent(replay, [where], script).arun("where?")
        return result, asyncio.get_running_loop()

    result, caller = asyncio.run(main())
    assert _first_observation(result) == "x ok"
    assert loops == [caller]  # awaited on the caller's loop, not in a thread


def test_stream_and_astream_show_the_async_tools_observation(replay: Replay) -> None:
    streamed = list(_agent(replay, [lookup]).stream("who is ada?"))

    async def collect() -> list[Event]:
        return [event async for event in _agent(replay, [lookup]).astream("who is ada?")]

    for events in (streamed, asyncio.run(collect())):
        observed = [e.step.observation for e in events if isinstance(e, ObservationEvent)]
        assert observed[0] == "ada: born 1815"
        assert isinstance(events[-1], FinalEvent)


def _slow_tool(cancelled: threading.Event) -> Any:
    @tool(timeout_s=0.3)
    async def slow(query: str) -> str:
        """Wait on a server that never answers."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    return slow


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_slow_async_tool_is_stopped_at_its_time_limit_and_cancelled_L5(
    replay: Replay, driver: str
) -> None:
    cancelled = threading.Event()
    agent = _agent(replay, [_slow_tool(cancelled)], ["Action: slow[x]", "Action: finish[gave up]"])
    result = agent.run("wait") if driver == "run" else asyncio.run(agent.arun("wait"))
    observation = _first_observation(result) or ""
    assert observation.startswith("Error: slow did not finish within 0.3 s")
    assert result.answer == "gave up"  # the run went on
    assert cancelled.wait(5)  # the coroutine itself was cancelled, not left running


def test_the_run_time_limit_bounds_an_async_tool_from_a_worker_thread(replay: Replay) -> None:
    cancelled = threading.Event()
    agent = _agent(replay, [_slow_tool(cancelled)], ["Action: slow[x]", "Action: finish[gave up]"])
    box: list[RunResult] = []
    worker = threading.Thread(target=lambda: box.append(agent.run("wait")))  # no SIGALRM here
    worker.start()
    worker.join(30)
    assert (_first_observation(box[0]) or "").startswith("Error: slow did not finish")
    assert cancelled.wait(5)


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_an_async_tool_that_raises_is_an_error_observation_L4(replay: Replay, driver: str) -> None:
    @tool
    async def broken(query: str) -> str:
        """Fail."""
        await asyncio.sleep(0)
        raise ValueError(f"no such record {query!r}")

    agent = _agent(replay, [broken], ["Action: broken[x]", "Action: finish[sorry]"])
    result = agent.run("go") if driver == "run" else asyncio.run(agent.arun("go"))
    assert _first_observation(result) == "Error: ValueError: no such record 'x'"


def _call(tool_name: str, /, **arguments: Any) -> dict[str, Any]:
    return {"name": tool_name, "arguments": arguments}


PARALLEL = [
    {"tool_calls": [_call("meet", name="a", other="b"), _call("meet", name="b", other="a")]},
    {"tool_calls": [_call("finish", answer="met")]},
]


def _meeting_tool() -> Any:
    """Each call announces itself, then waits for the other one: both finish only if they
    run at the same time; run one after the other, the first gives up waiting."""
    arrived = {"a": threading.Event(), "b": threading.Event()}

    @tool
    async def meet(name: str, other: str) -> str:
        """Meet the other call."""
        arrived[name].set()
        for _ in range(500):
            if arrived[other].is_set():
                return f"{name} met {other}"
            await asyncio.sleep(0.01)
        return f"{name} waited alone"

    return meet


def test_parallel_async_calls_overlap_in_arun(replay: Replay) -> None:
    result = asyncio.run(_agent(replay, [_meeting_tool()], PARALLEL).arun("meet"))
    assert [s.observation for s in result.steps[:2]] == ["a met b", "b met a"]


def test_parallel_async_calls_overlap_in_run(replay: Replay) -> None:
    result = _agent(replay, [_meeting_tool()], PARALLEL).run("meet")
    assert [s.observation for s in result.steps[:2]] == ["a met b", "b met a"]
