"""Follow-up runs from Python: ``agent.run(task, history=result)`` (issue 15 item 5).

A follow-up is a new run that records its parent and whose model sees the parent's whole
conversation, the final answer included, then the new task; its first prompt begins with
the parent's last prompt, so a prefix cache is reused.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao import Agent, Status, tool
from tao.errors import ResumeError, StoreError
from tao.store.factory import open_store

Replay = Callable[[list[Any]], Path]

SCRIPT = [
    "Thought: multiply.\nAction: calculator[17 * 23]",
    "Thought: done.\nFinal Answer: 391",
    "Thought: add.\nAction: calculator[391 + 4]",
    "Action: finish[395]",
]


def test_a_follow_up_starts_from_the_parents_transcript_and_records_its_parent(
    replay: Replay,
) -> None:
    agent = Agent(f"replay:{replay(SCRIPT)}", ["calc"], record=False)
    first = agent.run("What is 17 * 23?")
    second = agent.run("And plus 4?", history=first)
    assert (second.status, second.answer, second.parent_id) == (
        Status.FINISHED,
        "395",
        first.run_id,
    )
    assert first.parent_id is None
    parent_prompt = first.steps[-1].model_input
    sent = second.steps[0].model_input
    assert sent[: len(parent_prompt)] == parent_prompt
    assert sent[len(parent_prompt) :] == [
        {"role": "assistant", "content": "Thought: done.\nFinal Answer: 391"},
        {"role": "user", "content": "Task: And plus 4?"},
    ]
    assert second.to_json()["parent_id"] == first.run_id


def test_an_unrecorded_agent_keeps_a_runs_transcript_only_while_its_result_lives(
    replay: Replay,
) -> None:
    """A long-lived agent with no run log does not grow with every run it makes."""
    agent = Agent(f"replay:{replay(SCRIPT[:2] * 50)}", ["calc"], record=False)
    kept = agent.run("What is 17 * 23?")
    for _ in range(20):
        agent.run("What is 17 * 23?")  # each result dropped at once
    gc.collect()
    assert list(agent._memory) == [kept.run_id]
    assert agent.run("Again?", history=kept).parent_id == kept.run_id
    del kept  # the follow-up's result was dropped at once too
    gc.collect()
    assert agent._memory == {}


def test_arun_and_a_run_id_from_the_run_log_work_the_same(replay: Replay) -> None:
    script = replay(SCRIPT)
    first = Agent(f"replay:{script}", ["calc"]).run("What is 17 * 23?")
    later = Agent(f"replay:{script}", ["calc"])  # a new process, say: the same script goes on
    second = asyncio.run(later.arun("And plus 4?", history=first.run_id))
    assert (second.answer, second.parent_id) == ("395", first.run_id)
    with open_store() as store:
        assert store.get_run(second.run_id).parent_id == first.run_id
        assert store.get_summary(first.run_id).parent_id is None


def test_a_changed_system_prompt_replaces_the_parents_the_rest_is_kept(replay: Replay) -> None:
    first = Agent(f"replay:{replay(SCRIPT[:2])}", ["calc"]).run("17 * 23?")
    other = Agent(f"replay:{replay(['Action: finish[ok]'])}", ["calc"], system_prompt="Be brief.")
    sent = other.run("Again?", history=first.run_id).steps[0].model_input
    parent_prompt = first.steps[-1].model_input
    assert sent[0] == {"role": "system", "content": "Be brief."}  # the tools it has now
    assert sent[1 : len(parent_prompt)] == parent_prompt[1:]


def test_native_finish_is_answered_in_the_transcript_before_the_next_task(replay: Replay) -> None:
    script = replay(
        [
            {"content": "Done.", "tool_calls": [{"name": "finish", "arguments": {"answer": "4"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"answer": "8"}}]},
        ]
    )
    agent = Agent(f"replay:{script}", ["calc"], record=False)
    first = agent.run("2 + 2?")
    sent = agent.run("Doubled?", history=first).steps[0].model_input
    assistant, answered, task = sent[-3:]
    assert assistant["tool_calls"][0]["function"]["name"] == "finish"
    assert answered == {
        "role": "tool",
        "tool_call_id": assistant["tool_calls"][0]["id"],
        "content": "4",
    }
    assert task == {"role": "user", "content": "Task: Doubled?"}


def test_a_paused_run_is_refused_it_must_be_resumed_first(replay: Replay) -> None:
    @tool(effects="sends")
    def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    script = replay(["Action: send[ada]", "Action: finish[sent]"])
    agent = Agent(f"replay:{script}", [send])
    paused = agent.run("send it")
    assert paused.status is Status.AWAITING_APPROVAL
    with pytest.raises(ResumeError, match="has not ended \\(status awaiting_approval\\)"):
        agent.run("and then?", history=paused)
    with pytest.raises(StoreError, match="no run with id 'ffff'"):
        agent.run("and then?", history="ffff")
