"""Prompt styles (issue 16 item 3): the paper's prompt exactly, fewer examples, a reminder.

The default style is chosen by measurement on the dev questions (``bench/prompt_styles.py``);
these tests pin what each style sends, and that ``paper`` stays the paper's prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tao.errors import ConfigError
from tao.eval.config import EvalConfig
from tao.eval.prompts import PAPER, STYLES, load_prompts
from tao.eval.results import settings_digest
from tao.eval.sources import sample_dir
from tao.store.factory import open_store

from ..conftest import CliResult
from .conftest import EvalData
from .test_strategies import Replay, run

PAPER_PROMPTS = sample_dir() / "react_prompts"

THREE_EXAMPLES = (
    "\nQuestion: Q1?\nThought 1: t\nAction 1: Finish[A1]\n"
    "Question: Q2?\nThought 1: t\nAction 1: Search[X]\nObservation 1: o\n"
    "Thought 2: t\nAction 2: Finish[A2]\n"
    "Question: Q3?\nThought 1: t\nAction 1: Finish[A3]\n"
)
FEVER_THREE = (
    "\nDetermine if there is Observation that SUPPORTS or REFUTES a Claim.\n"
    "Claim: C1\nThought 1: t\nAction 1: Finish[SUPPORTS]\n\n"
    "Claim: C2\nThought 1: t\nAction 1: Finish[REFUTES]\n\n"
    "Claim: C3\nThought 1: t\nAction 1: Finish[NOT ENOUGH INFO]\n"
)


@pytest.fixture
def three(eval_data: EvalData) -> EvalData:
    """The tiny prompts, with three ReAct examples for HotpotQA and for FEVER."""
    path = eval_data.prompts / "prompts_naive.json"
    hotpot = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(hotpot | {"webthink_simple6": THREE_EXAMPLES}), encoding="utf-8")
    path = eval_data.prompts / "fever.json"
    fever = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(fever | {"webthink_simple3": FEVER_THREE}), encoding="utf-8")
    return eval_data


def test_fewer_shots_keep_whole_examples_and_the_instruction(three: EvalData) -> None:
    prompts = load_prompts(three.prompts, "hotpotqa")
    paper = prompts.system("react")
    assert paper == prompts.system("react", PAPER)  # the default is the paper's prompt
    assert paper.count("Question: ") == 3 and paper.endswith("Action 1: Finish[A3]")
    two = prompts.system("react", STYLES["shots2-reminder"])
    assert two.startswith("Solve a question answering task")
    assert "Finish[A2]" in two and "Q3?" not in two
    one = prompts.system("react", STYLES["shots1-reminder"])
    assert "Finish[A1]" in one and "Q2?" not in one
    # FEVER's instruction stands before its first example, and stays
    fever = load_prompts(three.prompts, "fever").system("react", STYLES["shots1-reminder"])
    assert fever.startswith("Determine if there is Observation that SUPPORTS or REFUTES")
    assert "Claim: C1" in fever and "Claim: C2" not in fever


def test_the_reminder_closes_acting_prompts_only(three: EvalData) -> None:
    prompts = load_prompts(three.prompts, "hotpotqa")
    style = STYLES["paper-reminder"]
    react = prompts.system("react", style)
    assert react.endswith(
        "Finish as soon as an observation gives the answer; never repeat an action."
    )
    assert "Search[entity], Lookup[keyword] or Finish[answer]" in react
    act = prompts.system("act", style)
    assert "one 'Action N:' line" in act and "Thought N" not in act
    for kind in ("cot", "standard"):  # these close with their answer line, style or not
        assert prompts.system(kind, style) == prompts.system(kind)
    fever = load_prompts(three.prompts, "fever").system("react", style)
    assert "Finish[NOT ENOUGH INFO]. Finish as soon as you can" in fever
    assert prompts.system("react", STYLES["shots3"]) == prompts.system("react")  # only 3 here


def test_the_papers_own_prompts_cut_at_example_boundaries() -> None:
    """The paper's prompts, as shipped in the package (issue 30), cut between examples."""
    prompts = load_prompts(PAPER_PROMPTS, "hotpotqa")
    paper = prompts.system("react")
    assert paper.count("\nQuestion: ") == 6
    for style in STYLES.values():
        text = prompts.system("react", style)
        shots = 6 if style.shots is None else style.shots
        assert text.count("\nQuestion: ") == shots, style.name
        examples = text.split("\nQuestion: ")[1:]
        assert all("Finish[" in example for example in examples), style.name  # none cut short
    fever = load_prompts(PAPER_PROMPTS, "fever")
    assert fever.system("react", STYLES["shots1-reminder"]).count("Claim: ") == 1


def test_a_style_is_part_of_the_results_key_unless_it_is_the_papers(eval_data: EvalData) -> None:
    paper = eval_data.config("react", prompt="paper")
    assert "prompt" not in paper.key()  # results written before styles existed still resume
    default = eval_data.config("react")  # the default, measured on dev questions: 3 examples
    assert default.prompt == "shots3" and default.key() == paper.key() | {"prompt": "shots3"}
    styled = EvalConfig(**{**paper.__dict__, "prompt": "shots2-reminder"})
    assert styled.key() == paper.key() | {"prompt": "shots2-reminder"}
    assert settings_digest(styled.key()) != settings_digest(paper.key())
    with pytest.raises(ConfigError, match="unknown prompt style 'shots9'; choose one of paper,"):
        EvalConfig(**{**paper.__dict__, "prompt": "shots9"})


def test_the_model_is_sent_the_chosen_style(three: EvalData, replay: Replay) -> None:
    (record,) = run(
        three, replay, "react", ["Thought 1: t\nAction 1: Finish[yes]"], prompt="shots1-reminder"
    )
    system = open_store().get_run(record.run_ids[0]).steps[0].model_input[0]["content"]
    assert "Finish[A1]" in system and "Q2?" not in system
    assert system.endswith("never repeat an action.")


def test_the_cli_takes_a_style_and_keys_its_results_by_it(
    three: EvalData, replay: Replay, tao_cli: Callable[..., CliResult], tao_home: Path
) -> None:
    path = replay(["Thought 1: t\nAction 1: Finish[yes]"])
    args = ["--questions", str(three.questions), "--corpus", str(three.corpus), "--limit", "1"]
    result = tao_cli("eval", "hotpotqa", *args, "--model", f"replay:{path}", "--prompt", "shots9")
    assert result.returncode == 2 and "'shots9' is not one of 'paper'" in result.stderr
    result = tao_cli(
        "eval", "hotpotqa", *args, "--model", f"replay:{path}", "--prompt", "shots1-reminder",
        "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["em"] == 1.0
    (settings,) = (tao_home / "evals").glob("hotpotqa-react-*.json")
    assert json.loads(settings.read_text())["prompt"] == "shots1-reminder"
