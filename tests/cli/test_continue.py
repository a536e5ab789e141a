"""``tao run --continue RUN_ID TASK`` as a user runs it: real child processes, a real SQLite
run log, scripted models (issue 15 item 5: conversations)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Replay = Callable[[list[str]], Path]

#: One script for the whole conversation: the follow-up goes on where the first run stopped.
CONVERSATION = [
    "Thought: multiply.\nAction: calculator[17 * 23]",
    "Thought: I have it.\nAction: finish[391]",
    "Thought: add 4 to the earlier result.\nAction: calculator[391 + 4]",
    "Action: finish[395]",
]


def _first(tao_cli: Any, script: Path, *extra: str) -> dict[str, Any]:
    model = f"replay:{script}"
    out = tao_cli("run", "What is 17 * 23?", "-m", model, "-t", "calc", *extra, "--json")
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = out.json()
    return data


def test_a_follow_up_sees_the_whole_conversation_and_records_its_parent(
    tao_cli: Any, replay: Replay
) -> None:
    first = _first(tao_cli, replay(CONVERSATION))
    out = tao_cli("run", "--continue", first["run_id"][:14], "And plus 4?", "--json")
    assert out.returncode == 0, out.stderr
    follow = out.json()
    assert (follow["status"], follow["answer"]) == ("finished", "395")
    assert follow["parent_id"] == first["run_id"] and follow["run_id"] != first["run_id"]
    assert follow["steps"][0]["observation"] == "395"  # the parent's tools (calc) came along
    sent = follow["steps"][0]["model_input"]  # the follow-up's first prompt, whole
    last = first["steps"][-1]
    parent_prompt = _whole_input(first["steps"])[-1]
    assert sent[: len(parent_prompt)] == parent_prompt  # the parent's last prompt, unchanged
    assert sent[len(parent_prompt) :] == [
        {"role": "assistant", "content": last["model_output"]},  # its final answer
        {"role": "user", "content": "Task: And plus 4?"},
    ]
    assert [m["content"] for m in sent[1:3]] == ["Task: What is 17 * 23?", CONVERSATION[0]]


def test_the_follow_ups_rendered_prompt_starts_with_the_parents_whole_prompt(
    tao_cli: Any, replay: Replay
) -> None:
    """llama.cpp reuses its KV cache for the longest common prefix of two prompts: the
    follow-up's first prompt, rendered by the chat template, begins with every byte of the
    parent's last one (and what the model generated after it)."""
    formats = pytest.importorskip("llama_cpp.llama_chat_format")
    render = formats.Jinja2ChatFormatter(
        template=formats.CHATML_CHAT_TEMPLATE,  # the ChatML format of the embedded Qwen model
        eos_token=formats.CHATML_EOS_TOKEN,
        bos_token=formats.CHATML_BOS_TOKEN,
        add_generation_prompt=True,
    )
    first = _first(tao_cli, replay(CONVERSATION))
    follow = tao_cli("run", "--continue", first["run_id"], "And plus 4?", "--json").json()
    parent = render(messages=_whole_input(first["steps"])[-1]).prompt
    child = render(messages=follow["steps"][0]["model_input"]).prompt
    assert child.startswith(parent + first["steps"][-1]["model_output"])
    assert len(child) > len(parent) + 20


def test_the_parents_settings_are_kept_except_the_options_typed(
    tao_cli: Any, replay: Replay, tao_home: Path
) -> None:
    first = _first(tao_cli, replay(CONVERSATION[:2]), "--max-steps", "5", "--lang", "en")
    other = replay(["Action: finish[395]"])
    out = tao_cli("run", "--continue", first["run_id"], "Plus 4?", "-m", f"replay:{other}")
    assert out.returncode == 0, out.stderr
    listed = tao_cli("runs", "list", "--json").json()
    assert [run["parent_id"] for run in listed] == [first["run_id"], None]
    config = listed[0]["config"]
    assert config["model"] == f"replay:{other}"  # typed: changed
    assert (config["tools"], config["max_steps"]) == (["calc"], 5)  # not typed: the parent's
    table = tao_cli("runs", "list").stdout
    assert "↳ Plus 4?" in table and "↳ What is" not in table
    shown = tao_cli("runs", "show", listed[0]["run_id"]).stdout
    assert f"continues {first['run_id']}" in shown
    assert "continues" not in tao_cli("runs", "show", first["run_id"]).stdout


def test_a_run_waiting_for_approval_cannot_be_continued_exit_2(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    script = replay(['Thought: write.\nAction: write_file(path="a.txt", content="hi")'])
    paused = tao_cli(
        "run", "write a", "-m", f"replay:{script}", "-t", "write",
        "--project", str(tmp_path), "--no-input", "--json",
    )  # fmt: skip
    assert paused.returncode == 4, paused.stderr
    run_id = paused.json()["run_id"]
    out = tao_cli("run", "--continue", run_id, "and then?")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert f"run {run_id} has not ended (status awaiting_approval)" in out.stderr
    assert f"tao resume {run_id}" in out.stderr
    assert len(tao_cli("runs", "list", "--json").json()) == 1  # nothing was started


def test_continuing_a_missing_run_is_a_usage_error_exit_2(tao_cli: Any, replay: Replay) -> None:
    _first(tao_cli, replay(CONVERSATION[:2]))
    out = tao_cli("run", "--continue", "ffffffff", "and then?", "--json")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "--continue: no run with id 'ffffffff'" in out.stderr
    assert out.json()["status"] == "error" and out.json()["run_id"] is None  # R2: one object


def test_a_chain_of_follow_ups_goes_on_with_one_script(tao_cli: Any, replay: Replay) -> None:
    script = replay([*CONVERSATION, "Action: finish[400]"])
    first = _first(tao_cli, script)
    second = tao_cli("run", "--continue", first["run_id"], "Plus 4?", "--json").json()
    third = tao_cli("run", "--continue", second["run_id"], "Plus 5?", "--json").json()
    assert [r["answer"] for r in (first, second, third)] == ["391", "395", "400"]
    assert third["parent_id"] == second["run_id"]
    contents = [m["content"] for m in third["steps"][0]["model_input"]]
    assert contents[-1] == "Task: Plus 5?"
    assert "Task: What is 17 * 23?" in contents and "Task: Plus 4?" in contents


def _whole_input(steps: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Each step's whole model input (``--json`` gives the messages new since the step before)."""
    inputs: list[list[dict[str, Any]]] = []
    for step in steps:
        before = inputs[-1][: step["model_input_from"]] if inputs else []
        inputs.append([*before, *step["model_input"]])
    return inputs
