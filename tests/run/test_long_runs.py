"""Long runs against a server with a small window (issue 27: window awareness, compaction).

Every test drives a real agent over HTTP against :class:`tests.fakes.window.WindowServer`,
an OpenAI-compatible server on 127.0.0.1 that refuses what does not fit its window with
a provider's real error body, and reads back the run's record from the real run log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.http import chat_completion
from tests.fakes.window import SUMMARY, Shape, WindowServer, step_of

from tao import (
    Agent,
    CompactionEvent,
    Event,
    FinalEvent,
    ObservationEvent,
    RunConfig,
    Status,
    tool,
)
from tao.state.result import RunResult
from tao.store.factory import open_store

TASK = "Read files 1 to 60, one a step, then say you are done."
#: 60 observations of ~1,650 characters: about 4x the 6,000-token window (at 4 chars a token).
WINDOW = 6000


def body(n: int) -> str:
    """File ``n``: ~1,650 characters, unique, with its number at both ends."""
    return f"file {n} begins. " + ("lorem ipsum dolor sit amet " * 62)[:1600] + f" file {n} ends."


@tool
def read(n: int) -> str:
    """Read file number n."""
    return body(n)


def agent(server: WindowServer, **settings: Any) -> Agent:
    config = RunConfig(
        max_steps=80,
        max_tokens=10**8,
        protocol="native" if server.native else "text",
        **settings,
    )
    return Agent(
        "openai:scripted", tools=[read], base_url=server.base_url, api_key="k", config=config
    )


def stored(result: RunResult) -> RunResult:
    with open_store() as store:
        return store.get_run(result.run_id)


def observations(result: RunResult) -> dict[int, str]:
    return {s.index: s.observation or "" for s in result.steps if s.tool == "read"}


def contents(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in request["messages"]]


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
@pytest.mark.parametrize("shape", ["openai", "anthropic", "gemini"])
def test_sixty_steps_four_windows_long_finish(native: bool, shape: Shape) -> None:
    """Done-when of issue 27: 60 observations adding up to 4x the window finish, with the
    window learned from the provider's own refusal (OpenAI, Anthropic, Gemini bodies): at
    most 3 requests over the window, every request with the task and the newest observation
    whole, and all 60 observations in the run's record."""
    with WindowServer(window=WINDOW, shape=shape, native=native) as server:
        result = agent(server).run(TASK)
    assert result.status is Status.FINISHED, (result.error, result.stop_reason)
    assert 1 <= server.refused <= 3  # the window was learned from the refusal
    assert sum(len(json.dumps(m)) for m in server.fitted[-1]["messages"]) < 4 * WINDOW
    for number, request in enumerate(server.fitted, start=1):
        shown = contents(request)
        assert shown[1].endswith(TASK)
        if number > 1:  # the newest observation, whole (fenced as untrusted data)
            assert body(number - 1) in shown[-1]
    record = observations(stored(result))
    assert sorted(record.values()) == sorted(body(n) for n in range(1, 61))
    compactions = [c for s in result.steps for c in s.compactions]
    assert len(compactions) >= 3
    assert compactions[0].reason.startswith("the provider refused")
    assert all(c.tokens_after < c.tokens_before for c in compactions)


def test_a_known_window_is_never_overrun() -> None:
    """With --context-window given, compaction starts before the window: no request is refused,
    and between two compactions each prompt only grows at its end (the prefix cache stays warm)."""
    with WindowServer(window=WINDOW) as server:
        result = agent(server, context_window=WINDOW).run(TASK)
    assert result.status is Status.FINISHED
    assert server.refused == 0
    compacted_at = {c.step for s in result.steps for c in s.compactions}
    assert len(compacted_at) >= 3
    grew_at_end = 0
    for step in range(2, len(server.fitted) + 1):
        if step in compacted_at:
            continue
        before, now = server.fitted[step - 2]["messages"], server.fitted[step - 1]["messages"]
        assert now[: len(before)] == before, f"request {step} rewrote its prefix"
        grew_at_end += 1
    assert grew_at_end > 40


def _compaction_events(events: list[Event]) -> list[CompactionEvent]:
    """The stream's compaction events, each checked against the run's record: it is the
    recorded decision, and it came after the step before its own and before its own step."""
    final = events[-1]
    assert isinstance(final, FinalEvent)
    assert final.result.status is Status.FINISHED, (final.result.error, final.result.stop_reason)
    made = [e for e in events if isinstance(e, CompactionEvent)]
    recorded = [c for s in stored(final.result).steps for c in s.compactions]
    assert [e.compaction for e in made] == recorded
    done = [e.step.index for e in events if isinstance(e, ObservationEvent)]
    for event in made:
        made_for = event.compaction
        at = events.index(event)
        steps_before = [e.step.index for e in events[:at] if isinstance(e, ObservationEvent)]
        assert steps_before == done[: made_for.step - 1]  # emitted when made: before its step
        assert made_for.policy == "elide" and made_for.tokens_after < made_for.tokens_before
        assert event.describe() == made_for.describe()
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.compaction = made_for  # type: ignore[misc]
    return made


@pytest.mark.parametrize("known", [True, False], ids=["high-water", "refused"])
def test_stream_yields_each_compaction_as_it_happens(known: bool) -> None:
    """``Agent.stream`` yields a typed, frozen CompactionEvent for each compaction, just
    before the model request it made room for: at the high-water mark of a known window,
    and on the reactive path (the window learned from the provider's refusal)."""
    window = {"context_window": WINDOW} if known else {}
    with WindowServer(window=WINDOW) as server:
        events = list(agent(server, **window).stream(TASK))
    made = _compaction_events(events)
    assert len(made) >= 3
    if known:
        assert all(e.compaction.reason.startswith("the prompt passed") for e in made)
    else:
        first = made[0].compaction
        assert first.reason.startswith("the provider refused") and first.window == WINDOW


def test_astream_yields_the_same_compaction_events() -> None:
    """``Agent.astream`` (asyncio) yields the same events as ``stream``."""

    async def collect(server: WindowServer) -> list[Event]:
        return [e async for e in agent(server, context_window=WINDOW).astream(TASK)]

    with WindowServer(window=WINDOW) as server:
        events = asyncio.run(collect(server))
    assert len(_compaction_events(events)) >= 3


def test_recall_brings_back_an_elided_observation() -> None:
    """The stubs name a handle; the built-in read-only recall tool answers with the stored
    observation, whole, from the run's record."""
    with WindowServer(window=WINDOW, recall_at=30) as server:
        result = agent(server, context_window=WINDOW).run(TASK)
    assert result.status is Status.FINISHED
    stubbed = [c for c in contents(server.fitted[28]) if "[observation of step 1:" in c]
    assert stubbed or any("recall[1]" in c for c in contents(server.fitted[28]))
    recall = next(s for s in result.steps if s.tool == "recall")
    assert recall.observation == body(1)
    assert body(1) in contents(server.fitted[30])[-1]


def test_summarize_is_a_recorded_counted_model_call() -> None:
    """``summarize``: the model writes the summary the later requests show, and its call is
    counted in the run's usage (every token the server billed is in the totals)."""
    with WindowServer(window=WINDOW, native=True) as server:
        result = agent(server, context_window=WINDOW, compaction="summarize").run(TASK)
    assert result.status is Status.FINISHED
    assert server.summaries >= 2
    assert any(SUMMARY in c for c in contents(server.fitted[-1]))
    records = [c for s in stored(result).steps for c in s.compactions]
    assert {c.policy for c in records} == {"summarize"}
    assert all(c.input_tokens > 0 and c.output_tokens > 0 for c in records)
    billed = sum(chat_completion("", r.body)["usage"]["prompt_tokens"] for r in server.requests)
    assert server.refused == 0
    assert result.usage.input_tokens == billed  # the summary calls' prompts included
    assert stored(result).usage.input_tokens == billed


def test_none_ends_with_an_error_that_names_the_settings() -> None:
    """``--compaction none`` is today's behaviour, but the error says what would make room;
    the steps before it are kept."""
    with WindowServer(window=WINDOW) as server:
        result = agent(server, compaction="none").run(TASK)
    assert result.status is Status.ERROR
    assert "--context-window" in (result.error or "")
    assert "--compaction" in (result.error or "")
    assert len(observations(stored(result))) >= 10


def test_a_custom_policy_decides_what_is_shown() -> None:
    """A policy named module:attribute is called with the span and its answer is shown."""
    with WindowServer(window=WINDOW) as server:
        result = agent(server, context_window=WINDOW, compaction="tests.fakes.window:dropped").run(
            TASK
        )
    assert result.status is Status.FINISHED
    assert any(c.startswith("[dropped steps 1-") for c in contents(server.fitted[-1]))
    assert {c.policy for s in result.steps for c in s.compactions} == {"dropped"}


def test_no_room_is_a_budget_status_naming_the_context() -> None:
    """When compaction cannot make room (one observation is bigger than the window), the run
    ends as a spent budget that names the context window, not as a crash."""

    @tool(name="read", max_chars=100_000)
    def huge(n: int) -> str:
        """Read a big file."""
        return "x" * 30_000

    with WindowServer(window=2000) as server:
        config = RunConfig(max_steps=10, protocol="text", max_reply_tokens=256)
        result = Agent(
            "openai:scripted", tools=[huge], base_url=server.base_url, api_key="k", config=config
        ).run("Read the big file.")
    assert result.status is Status.MAX_STEPS
    assert "context window" in (result.stop_reason or "")


_CHILD = """
import sys
sys.path.insert(0, {repo!r})
from tests.run.test_long_runs import agent_for
result = agent_for(sys.argv[1]).run({task!r})
"""


def agent_for(base_url: str) -> Agent:
    """The agent the kill test runs in a child process, and resumes in the test's."""
    config = RunConfig(max_steps=80, max_tokens=10**8, protocol="text", context_window=WINDOW)
    return Agent("openai:scripted", tools=[read], base_url=base_url, api_key="k", config=config)


def test_resume_after_kill_between_two_compactions_shows_the_same_view(tmp_path: Path) -> None:
    """``kill -9`` between two compactions, then resume: the model is shown exactly the view
    it was shown before (the compaction is read back, not decided again), the prompt goes
    on growing at its end, and the finished run holds all 60 observations."""
    repo = str(Path(__file__).resolve().parents[2])
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(_CHILD.format(repo=repo, task=TASK)))
    with WindowServer(window=WINDOW, hold_at=16) as server:
        child = subprocess.Popen([sys.executable, str(script), server.base_url], env=os.environ)
        try:
            assert server.holding.wait(120), "the child never reached step 16"
            os.kill(child.pid, signal.SIGKILL)
            child.wait(30)
        finally:
            if child.poll() is None:
                child.kill()
        server.release.set()
        before = [r for r in server.fitted]
        with open_store() as store:
            (run_id,) = [r.run_id for r in store.list_runs()]
            killed = store.get_run(run_id)
        made = [c for s in killed.steps for c in s.compactions]
        assert made and 10 <= len(killed.steps) <= 15  # the last ones may be in a group commit
        time.sleep(0.1)
        result = agent_for(server.base_url).resume(run_id)
    assert result.status is Status.FINISHED, (result.error, result.stop_reason)
    after = server.fitted[len(before) :]
    by_step = {step_of(r): r["messages"] for r in before}
    resumed_at = step_of(after[0])
    assert resumed_at == len(killed.steps) + 1
    assert after[0]["messages"] == by_step[resumed_at]  # exactly what the killed run sent
    record = stored(result)
    assert sorted(observations(record).values()) == sorted(body(n) for n in range(1, 61))
    everything = [c for s in record.steps for c in s.compactions]
    assert everything[: len(made)] == made  # read back as recorded, not decided again
    assert len(everything) > len(made)  # and the run compacted again after its resume
