"""``tao run`` as a user runs it: a real child process, real files (SPEC M1, M2, L1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Replay = Callable[[list[str]], Path]

CALC_SCRIPT = [
    "Thought: I need to compute.\nAction: calculator[17 * 23 + 4]\nObservation: 400",
    "Thought: I have it.\nAction: finish[395]",
]


def test_json_output_is_exactly_one_object_with_the_contract_keys_M1(
    tao_cli: Any, replay: Replay
) -> None:
    out = tao_cli(
        "run",
        "What is 17 * 23 + 4?",
        "--model",
        f"replay:{replay(CALC_SCRIPT)}",
        "--tools",
        "calc",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)  # the whole of stdout is one JSON document
    assert {"run_id", "status", "answer", "error", "steps", "usage"} <= data.keys()
    assert (data["status"], data["answer"], data["error"]) == ("finished", "395", None)
    assert set(data["usage"]) >= {"model_calls", "input_tokens", "output_tokens"}
    assert data["usage"]["model_calls"] == 2
    step = data["steps"][0]
    assert {
        "index",
        "thought",
        "tool",
        "arguments",
        "observation",
        "model_input",
        "model_output",
        "duration_s",
        "tokens",
    } <= step.keys()
    assert (step["index"], step["tool"], step["arguments"], step["observation"]) == (
        1,
        "calculator",
        {"expression": "17 * 23 + 4"},
        "395",
    )
    assert "argument" not in step  # issue 30: one field for the call's arguments
    assert step["model_output"] == CALC_SCRIPT[0]
    assert step["model_input"][0]["role"] == "system"
    assert data["steps"][1]["model_input"][-1] == {"role": "user", "content": "Observation: 395"}


def test_live_display_shows_each_step_and_the_answer_last_M1(tao_cli: Any, replay: Replay) -> None:
    out = tao_cli(
        "run", "What is 17 * 23 + 4?", "--model", f"replay:{replay(CALC_SCRIPT)}", "--tools", "calc"
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "I need to compute." in text and "calculator" in text and "17 * 23 + 4" in text
    assert text.index("calculator") < text.rindex("395")
    assert text.rstrip().splitlines()[-1].strip()  # something is printed last
    assert "395" in "\n".join(text.rstrip().splitlines()[-4:])


def test_bad_model_spec_is_one_line_listing_valid_forms_M1(tao_cli: Any) -> None:
    out = tao_cli("run", "hi", "--model", "gpt4")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "unknown model spec 'gpt4'" in out.stderr
    assert "local, local:PATH.gguf, openai:MODEL" in out.stderr


def test_exhausted_replay_is_status_error_with_a_message_not_a_traceback(
    tao_cli: Any, replay: Replay
) -> None:
    out = tao_cli(
        "run",
        "task",
        "--model",
        f"replay:{replay(['Action: calculator[1+1]'])}",
        "--tools",
        "calc",
        "--json",
    )
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "error"
    assert "no reply left for model call 2" in data["error"]
    assert data["steps"][0]["observation"] == "2"


def test_step_limit_exit_code_and_status(tao_cli: Any, replay: Replay) -> None:
    script = replay(["Action: calculator[1+1]"] * 5)
    out = tao_cli(
        "run",
        "task",
        "--model",
        f"replay:{script}",
        "--tools",
        "calc",
        "--max-steps",
        "2",
        "--json",
    )
    assert out.returncode == 3
    data = json.loads(out.stdout)
    assert data["status"] == "max_steps" and len(data["steps"]) == 2


def test_human_tools_the_person_types_the_observation_M2(tao_cli: Any, replay: Replay) -> None:
    script = replay(["Thought: ask\nAction: calculator[2 + 2]", "Action: finish[five]"])
    out = tao_cli(
        "run",
        "2+2?",
        "--model",
        f"replay:{script}",
        "--tools",
        "calc",
        "--human-tools",
        "--json",
        input="5 (I counted on my fingers)\n",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["steps"][0]["observation"] == "5 (I counted on my fingers)"
    assert "calculator(expression='2 + 2')" in out.stderr


def test_swedish_run_end_to_end_L8(tao_cli: Any, replay: Replay) -> None:
    script = replay(
        ["Tanke: Tolv gånger tolv.\nHandling: calculator[12*12]", "Tanke: Klart.\nSvar: 144"]
    )
    out = tao_cli(
        "run",
        "Vad är 12*12?",
        "--lang",
        "sv",
        "--model",
        f"replay:{script}",
        "--tools",
        "calc",
        "--json",
    )
    data = json.loads(out.stdout)
    assert (data["status"], data["answer"]) == ("finished", "144")
    system = data["steps"][0]["model_input"][0]["content"]
    assert "Tanke:" in system and "Handling:" in system
    assert data["steps"][0]["model_input"][1]["content"] == "Uppgift: Vad är 12*12?"


def test_file_tools_are_confined_to_the_project_S1(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.md").write_text("the cart total ignores discounts\n")
    (tmp_path / "secret.txt").write_text("TOPSECRET-CONTENT")
    script = replay(
        [
            "Action: read_file[../secret.txt]",
            "Action: read_file[notes.md]",
            "Action: finish[discounts]",
        ]
    )
    out = tao_cli(
        "run",
        "why?",
        "--model",
        f"replay:{script}",
        "--tools",
        "files",
        "--project",
        str(project),
        "--json",
    )
    steps = json.loads(out.stdout)["steps"]
    assert steps[0]["observation"].startswith("Error:")
    assert "TOPSECRET-CONTENT" not in json.dumps(steps)
    assert "the cart total ignores discounts" in steps[1]["observation"]


def test_unknown_tool_set_is_a_clear_error(tao_cli: Any, replay: Replay) -> None:
    out = tao_cli(
        "run", "x", "--model", f"replay:{replay(['Action: finish[x]'])}", "--tools", "web"
    )
    assert out.returncode == 2  # a usage error, like every other
    assert "Traceback" not in out.stderr
    assert "web" in out.stderr and "calc" in out.stderr


def test_run_is_recorded_and_can_be_shown_again_M3(tao_cli: Any, replay: Replay) -> None:
    out = tao_cli(
        "run",
        "What is 17 * 23 + 4?",
        "--model",
        f"replay:{replay(CALC_SCRIPT)}",
        "--tools",
        "calc",
        "--json",
    )
    run_id = json.loads(out.stdout)["run_id"]
    shown = tao_cli("runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    again = json.loads(shown.stdout)
    assert again["answer"] == "395"
    assert [s["observation"] for s in again["steps"]] == ["395", None]
    assert again["steps"][0]["model_input"] == json.loads(out.stdout)["steps"][0]["model_input"]


def test_help_lists_every_tool_set(tao_cli: Any) -> None:
    from tao.cli.run import TOOL_SET_NAMES
    from tao.tools.registry import TOOL_SETS

    assert TOOL_SET_NAMES.split(", ") == list(TOOL_SETS)
    assert TOOL_SET_NAMES in " ".join(tao_cli("run", "--help").stdout.split())


def test_a_forced_answer_is_no_plain_success_it_exits_5_and_says_so(
    replay: Any, tao_cli: Any
) -> None:
    """Issue 30: the last step of the budget could only answer; the run is ``finished`` but
    marked ``forced`` in --json, the footer says so, and the exit code is 5, never 0."""
    script = replay(["Action: calculator[1+1]", "Action: finish[4]"])
    args = ("run", "x", "--model", f"replay:{script}", "-t", "calc", "--max-steps", "2")
    out = tao_cli(*args, "--json")
    assert out.returncode == 5, out.stderr
    data = json.loads(out.stdout)
    assert (data["status"], data["forced"], data["answer"]) == ("finished", True, "4")
    shown = tao_cli(*args)
    assert shown.returncode == 5
    assert "answer forced: step budget spent" in shown.stdout + shown.stderr


def test_an_answer_that_was_not_forced_exits_0(replay: Any, tao_cli: Any) -> None:
    script = replay(["Action: calculator[1+1]", "Action: finish[2]"])
    out = tao_cli("run", "x", "--model", f"replay:{script}", "-t", "calc", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["forced"] is False


def test_the_trace_shows_the_call_as_bound_not_the_bracket_text(
    tmp_path: Path, replay: Any, tao_cli: Any
) -> None:
    """Issue 30: ``read_file[path="notes.txt"]`` binds by name, and the trace shows
    ``read_file(path='notes.txt')``, so a mis-bound argument would be visible."""
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    script = replay(['Action: read_file[path="notes.txt"]', "Action: finish[hello]"])
    model = f"replay:{script}"
    out = tao_cli("run", "x", "--model", model, "-t", "files", "--project", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "read_file(path='notes.txt')" in out.stdout
    assert "hello" in out.stdout and "No such file" not in out.stdout
