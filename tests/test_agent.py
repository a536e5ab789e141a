"""The loop through the public Python API, driven by replay scripts (SPEC L1-L6, L9, T1)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tao import Agent, Status, StepKind, tool
from tao.models.base import ModelReply, ModelRequest

Replay = Callable[[list[str]], Path]


def agent(replies: Path, tools: Sequence[object] = ("calc",), **kwargs: object) -> Agent:
    return Agent(f"replay:{replies}", list(tools), record=False, **kwargs)  # type: ignore[arg-type]


def test_calculator_run_finishes_with_full_trace_L1(replay: Replay) -> None:
    script = replay(
        [
            "Thought: I need to compute.\nAction: calculator[17 * 23 + 4]",
            "Thought: I have it.\nAction: finish[395]",
        ]
    )
    result = agent(script).run("What is 17 * 23 + 4?")
    assert result.status is Status.FINISHED
    assert result.answer == "395"
    first, last = result.steps
    assert (first.kind, first.tool, first.arguments, first.observation) == (
        StepKind.ACTION,
        "calculator",
        {"expression": "17 * 23 + 4"},
        "395",
    )
    assert first.unparsed is None  # the bracket text bound: arguments is the one record
    assert first.thought == "I need to compute."
    assert last.kind is StepKind.FINAL and last.answer == "395"
    assert last.arguments == {"answer": "395"}
    assert result.usage.model_calls == 2
    assert result.usage.input_tokens == first.input_tokens + last.input_tokens > 0
    # The second call saw the first reply and the real observation, as user turn (local models).
    assert last.model_input[-2:] == [
        {
            "role": "assistant",
            "content": "Thought: I need to compute.\nAction: calculator[17 * 23 + 4]",
        },
        {"role": "user", "content": "Observation: 395"},
    ]


def test_made_up_observation_never_enters_the_transcript_L2(replay: Replay) -> None:
    script = replay(
        [
            "Thought: t\nAction: calculator[2 + 2]\nObservation: 5\n"
            "Thought: so 5\nAction: finish[5]",
            "Action: finish[4]",
        ]
    )
    result = agent(script).run("2 + 2?")
    assert result.answer == "4"
    sent = result.steps[1].model_input
    assert sent[-2]["content"] == "Thought: t\nAction: calculator[2 + 2]"
    assert sent[-1]["content"] == "Observation: 4"
    assert all("Observation: 5" not in m["content"] for m in sent)
    # The raw reply is still kept for the trace.
    assert "Observation: 5" in result.steps[0].model_output


def test_unknown_tool_becomes_an_observation_L4(replay: Replay) -> None:
    script = replay(["Action: browse[example.com]", "Action: finish[done]"])
    result = agent(script).run("task")
    assert result.steps[0].kind is StepKind.UNKNOWN_TOOL
    assert result.steps[0].observation == "Unknown tool: browse. Available: calculator, finish"
    assert result.status is Status.FINISHED


def test_failing_tool_becomes_an_error_observation_L4(replay: Replay) -> None:
    @tool
    def fragile(path: str) -> str:
        """Open a thing that breaks."""
        raise FileNotFoundError(f"no such file: {path}")

    script = replay(
        ["Action: fragile[missing.txt]", "Action: calculator[1/0]", "Action: finish[x]"]
    )
    result = agent(script, [fragile, "calc"]).run("task")
    assert result.steps[0].observation == "Error: FileNotFoundError: no such file: missing.txt"
    assert result.steps[1].observation is not None
    assert result.steps[1].observation.startswith("Error:")
    assert "zero" in result.steps[1].observation.lower()
    assert result.status is Status.FINISHED


def test_unparseable_reply_gets_a_reminder_in_the_active_language_L4_L8(replay: Replay) -> None:
    script = replay(["Jag vet inte riktigt.", "Tanke: ok\nSvar: 144"])
    result = agent(script, lang="sv").run("Vad är 12*12?")
    reminder = result.steps[0].observation or ""
    assert result.steps[0].kind is StepKind.PARSE_ERROR
    assert "Tanke: ...\nHandling: <tool name>[<argument>]" in reminder
    assert "Svara i exakt detta format" in reminder
    assert result.steps[1].model_input[-1] == {
        "role": "user",
        "content": f"Observation: {reminder}",
    }
    assert (result.status, result.answer) == (Status.FINISHED, "144")


def test_step_budget_is_a_status_with_the_full_trace_L1_L5(replay: Replay) -> None:
    script = replay([f"Thought: again\nAction: calculator[{i} + 1]" for i in range(10)])
    result = agent(script, max_steps=3).run("loop forever")
    assert result.status is Status.MAX_STEPS
    assert result.answer is None and result.error is None
    assert [s.observation for s in result.steps] == ["1", "2", "3"]
    assert result.stop_reason == "step limit of 3 reached"


def test_token_budget_stops_the_run_L5(replay: Replay) -> None:
    script = replay(["Thought: " + "long " * 200 + "\nAction: calculator[1 + 1]"] * 5)
    result = agent(script, max_tokens=300).run("task")
    assert result.status is Status.MAX_STEPS
    assert result.stop_reason == "token limit of 300 reached"
    assert 1 <= len(result.steps) < 5


def test_time_budget_stops_the_run_L5(replay: Replay) -> None:
    @tool
    def slow(seconds: float) -> str:
        """Wait."""
        import time

        time.sleep(seconds)
        return "waited"

    script = replay([f"Action: slow[0.3{i}]" for i in range(5)])  # distinct: no repeats
    result = agent(script, [slow], max_seconds=0.5).run("task")
    assert result.status is Status.MAX_STEPS
    assert result.stop_reason == "time limit of 0.5 s reached"
    assert len(result.steps) == 2


def test_exhausted_replay_is_status_error_not_a_crash_M1(replay: Replay) -> None:
    script = replay(["Action: calculator[1+1]"])
    result = agent(script).run("task")
    assert result.status is Status.ERROR
    assert result.error is not None and "no reply left for model call 2" in result.error
    assert result.steps[-1].kind is StepKind.MODEL_ERROR


def test_backend_exception_is_status_error() -> None:
    class Broken:
        name = "broken"
        supports_stop = True
        supports_grammar = False

        def complete(self, request: ModelRequest, on_text: object = None) -> ModelReply:
            raise ConnectionResetError("peer went away")

    result = Agent(Broken(), ["calc"], record=False).run("task")
    assert result.status is Status.ERROR
    assert result.error == "ConnectionResetError: peer went away"


def test_swedish_seed_call_form_maps_onto_typed_parameters_T1_L7(replay: Replay) -> None:
    calls: list[tuple[str, int]] = []

    @tool
    def sok_arenden(status: str, aldre_an_dagar: int = 0) -> str:
        """Search support tickets by status and minimum age in days."""
        calls.append((status, aldre_an_dagar))
        return "12 ärenden" if aldre_an_dagar else "47 ärenden"

    script = replay(
        [
            'Tanke: Hur många är öppna?\nHandling: sok_arenden(status="öppen")',
            'Tanke: Äldre än en vecka?\nHandling: sok_arenden(status="öppen", aldre_an_dagar=7)',
            "Tanke: Jag har vad jag behöver.\nSvar: 12 av 47 öppna ärenden är äldre än en vecka.",
        ]
    )
    result = agent(script, [sok_arenden], lang="sv").run(
        "Hur många öppna ärenden är äldre än en vecka?"
    )
    assert calls == [("öppen", 0), ("öppen", 7)]
    assert result.steps[1].arguments == {"status": "öppen", "aldre_an_dagar": 7}
    assert result.answer == "12 av 47 öppna ärenden är äldre än en vecka."
    assert result.steps[0].model_input[1] == {
        "role": "user",
        "content": "Uppgift: Hur många öppna ärenden är äldre än en vecka?",
    }


def test_invalid_arguments_are_refused_before_the_tool_runs_T1(replay: Replay) -> None:
    ran: list[int] = []

    @tool
    def wait_days(days: int) -> str:
        """Wait some days."""
        ran.append(days)
        return "ok"

    script = replay(["Action: wait_days[a week]", "Action: finish[no]"])
    result = agent(script, [wait_days]).run("task")
    assert ran == []
    observation = result.steps[0].observation or ""
    assert observation.startswith("Error: invalid arguments for wait_days(days): days:")


def test_long_observation_is_cut_and_the_cut_is_stated_L6(replay: Replay) -> None:
    @tool(max_chars=100, keep="tail")
    def noisy() -> str:
        """Print a lot."""
        return "x" * 1_000 + "THE END"

    script = replay(["Action: noisy[]", "Action: finish[ok]"])
    observation = agent(script, [noisy]).run("task").steps[0].observation or ""
    assert observation.startswith("[output cut: showing the last 100 of 1,007 characters]")
    assert observation.endswith("THE END")


def test_paper_style_capitalised_tool_names_are_accepted(replay: Replay) -> None:
    script = replay(["Thought 1: add\nAction 1: Calculator[2+3]", "Action 2: Finish[5]"])
    result = agent(script).run("2+3?")
    assert result.steps[0].tool == "calculator" and result.steps[0].observation == "5"
    assert result.answer == "5"


def test_each_step_records_exactly_what_was_sent(replay: Replay) -> None:
    script = replay(["Action: calculator[1+1]", "Action: calculator[2+2]", "Action: finish[4]"])
    result = agent(script).run("task")
    lengths = [len(s.model_input) for s in result.steps]
    assert lengths == [2, 4, 6]
    assert result.steps[0].model_input[0]["role"] == "system"
    assert "calculator[expression]" in result.steps[0].model_input[0]["content"]
    assert all(s.model_input[0] == result.steps[0].model_input[0] for s in result.steps)


@pytest.mark.parametrize("bad", ["nope:x", "openai:", "gpt4", ""])
def test_bad_model_spec_is_one_clear_error_M1(bad: str) -> None:
    from tao import ModelSpecError

    with pytest.raises(ModelSpecError, match=r"valid forms: local, local:PATH\.gguf, openai:MODEL"):
        Agent(bad, record=False)


def test_a_fatal_error_while_recording_carries_the_run_so_far(replay: Replay) -> None:
    """FatalError.partial: a run log that fails mid-run loses nothing the caller had."""
    from tao import StoreError
    from tao.state.result import RunResult, Step

    class FailingLog:
        def on_start(self, result: RunResult) -> None:
            pass

        def on_step(self, result: RunResult, step: Step) -> None:
            if step.index == 2:
                raise StoreError("the run log's disk is full")

        def on_finish(self, result: RunResult) -> None:
            pass

    script = replay(["Action: calculator[1+1]", "Action: calculator[2+2]", "Action: finish[4]"])
    with pytest.raises(StoreError, match="disk is full") as caught:
        agent(script).run("add", observers=[FailingLog()])
    partial = caught.value.partial
    assert partial is not None and partial.task == "add"
    assert [s.observation for s in partial.steps] == ["2", "4"]


def test_extra_argument_error_shows_the_call_that_binds_L4(replay: Replay) -> None:
    """An extra keyword on a one-parameter tool is refused with the exact call that binds
    (issue 30: the embedded model repeated ``read_file[path=..., content=...]`` when the
    error named only the extra input). SPEC L4: bad input gets a clear, specific error."""
    read: list[str] = []

    @tool
    def read_note(path: str) -> str:
        """Read a note."""
        read.append(path)
        return "ok"

    script = replay(['Action: read_note[path="a.txt", content="port"]', "Action: finish[ok]"])
    observation = agent(script, [read_note]).run("task").steps[0].observation or ""
    assert read == []
    assert observation.startswith("Error: invalid arguments for read_note(path): content:")
    assert 'call it as read_note[path="…"]' in observation
