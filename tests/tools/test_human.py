"""ask_human puts the model's question to a person (SPEC T2); no person is an Error, not a hang."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from tao.errors import ToolError
from tao.tools.human import NO_PERSON, human_tools


def test_ask_human_uses_the_given_asker_T2() -> None:
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return "  the staging branch \n"

    (ask_human,) = human_tools(ask)
    assert ask_human.name == "ask_human"
    assert ask_human.invoke({"question": " Which branch? "}) == "the staging branch"
    assert asked == ["Which branch?"]


def test_ask_human_reads_stdin_and_prompts_on_stderr_T2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("blue\nignored\n"))
    (ask_human,) = human_tools()
    assert ask_human.invoke({"question": "Favourite colour?"}) == "blue"
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout stays clean for --json
    assert "Favourite colour?" in captured.err


def test_ask_human_closed_stdin_is_a_clear_error_L4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    (ask_human,) = human_tools()
    with pytest.raises(ToolError, match=r"no person is available to answer \(stdin closed\)"):
        ask_human.invoke({"question": "Anyone there?"})


def test_ask_human_empty_answer_and_empty_question() -> None:
    (ask_human,) = human_tools(lambda question: "")
    assert ask_human.invoke({"question": "Hm?"}) == "(the person gave an empty answer)"
    with pytest.raises(ToolError, match="needs a question"):
        ask_human.invoke({"question": " "})


def test_ask_human_in_a_real_process_with_devnull_stdin_L4() -> None:
    script = (
        "from tao.tools.human import human_tools\n"
        "from tao.errors import ToolError\n"
        "(t,) = human_tools()\n"
        "try:\n    t.invoke({'question': 'Q?'})\n"
        "except ToolError as e:\n    print('ERR', e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == f"ERR {NO_PERSON}"
    assert "Q?" in result.stderr
