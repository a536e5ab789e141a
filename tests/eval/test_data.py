"""Question files, the paper's prompts, and clear errors for bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tao.eval.data import EvalDataError, load_questions
from tao.eval.prompts import PromptsError, find_prompts_dir, load_prompts
from tao.eval.sources import sample_dir

from ..conftest import CliResult
from .conftest import EvalData


def test_hotpotqa_questions_in_file_order(eval_data: EvalData) -> None:
    questions = load_questions("hotpotqa", eval_data.questions)
    assert [q.index for q in questions] == [0, 1, 2, 3]
    assert questions[1].id == "q1"
    assert questions[1].gold == "Richard Nixon"


def test_fever_claims(eval_data: EvalData) -> None:
    claims = load_questions("fever", eval_data.claims)
    assert [(c.question, c.gold) for c in claims][1] == ("Gal Gadot is a chef.", "REFUTES")


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match=r"questions file not found: .*nope\.jsonl"):
        load_questions("hotpotqa", tmp_path / "nope.jsonl")


def test_malformed_jsonl_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    good = json.dumps({"question": "Q?", "answer": "A"})
    path.write_text(f"{good}\n\n{good}\n{{not json\n", encoding="utf-8")
    with pytest.raises(EvalDataError, match=rf"{path}:4: not valid JSON"):
        load_questions("hotpotqa", path)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    """HotpotQA and FEVER JSONL alike; a raw U+2028 inside a string does not end a line."""
    good = json.dumps({"question": "Q\u2028?", "answer": "A"}, ensure_ascii=False).encode()
    path = tmp_path / "q.jsonl"
    path.write_bytes(good + b"\n" + good + b"\n" + b'{"question": "caf\xe9"}\n')
    with pytest.raises(EvalDataError, match=rf"{path}:3: not UTF-8 text"):
        load_questions("hotpotqa", path)
    path.write_bytes(good + b"\n" + good + b"\n")
    assert [q.question for q in load_questions("hotpotqa", path)] == ["Q\u2028?", "Q\u2028?"]
    claims = tmp_path / "claims.jsonl"
    claims.write_bytes(b'{"claim": "C", "label": "SUPPORTS"}\n\n{"claim": "\xff"}\n')
    with pytest.raises(EvalDataError, match=rf"{claims}:3: not UTF-8 text"):
        load_questions("fever", claims)


def test_missing_field_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": "Q?"}) + "\n", encoding="utf-8")
    with pytest.raises(EvalDataError, match=rf"{path}:1: needs a non-empty string field 'answer'"):
        load_questions("hotpotqa", path)


def test_fever_bad_entry_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "claims.json"
    rows = [{"id": 1, "claim": "C", "label": "SUPPORTS"}, {"id": 2, "claim": "D", "label": "MAYBE"}]
    path.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    # the second object starts on line 7 of the indented array
    with pytest.raises(EvalDataError, match=rf"{path}:7: label 'MAYBE' is not SUPPORTS"):
        load_questions("fever", path)
    path.write_text('[\n {"claim": "C", "label": "SUPPORTS"},\n {"claim": "D" "label"}\n]')
    with pytest.raises(EvalDataError, match=rf"{path}:3: not valid JSON"):
        load_questions("fever", path)


def test_prompts_are_found_beside_the_questions(eval_data: EvalData) -> None:
    assert find_prompts_dir(eval_data.questions) == eval_data.prompts
    prompts = load_prompts(eval_data.prompts, "hotpotqa")
    assert prompts.task_label == "Question"
    assert prompts.system("react").startswith("Solve a question answering task")
    assert "[REACT]" in prompts.system("react")
    act = prompts.system("act")
    assert "interleaving Action, Observation steps" in act and "Thought" not in act.split("[")[0]
    assert prompts.system("cot").startswith("[COT]")  # the paper's CoT prompt has no instruction
    # ... but a chat model is told to write the Answer: label the examples show
    assert prompts.system("standard").endswith(
        "\n\nReply to the next Question the way the examples do: one line 'Answer: ...'."
    )
    assert load_prompts(eval_data.prompts, "fever").task_label == "Claim"


def test_missing_prompt_key_is_named(eval_data: EvalData) -> None:
    (eval_data.prompts / "fever.json").write_text(json.dumps({"webqa_simple3": "x"}))
    with pytest.raises(PromptsError, match=r"fever\.json: has no prompt 'cotqa_simple3'"):
        load_prompts(eval_data.prompts, "fever")
    with pytest.raises(PromptsError, match="pass --prompts DIR"):
        find_prompts_dir(Path("/nonexistent/x/questions.jsonl"))


def test_the_papers_prompts_and_the_shipped_sample_load() -> None:
    """Issue 30: the package carries the paper's prompts and a 20-question sample (P1, P2)."""
    sample = sample_dir()
    hotpot = load_prompts(sample / "react_prompts", "hotpotqa")
    react = hotpot.system("react")
    assert react.startswith("Solve a question answering task with interleaving Thought")
    assert "Action 1: Search[Colorado orogeny]" in react
    assert "Thought" not in hotpot.system("act").split("Here are some examples.")[0]
    fever = load_prompts(sample / "react_prompts", "fever")
    assert "Determine if there is Observation that SUPPORTS or REFUTES" in fever.system("cot")
    questions = load_questions("hotpotqa", sample / "hotpotqa" / "questions_dev.jsonl")
    assert len(questions) == 20
    assert questions[0].question == "Were Scott Derrickson and Ed Wood of the same nationality?"
    claims = load_questions("fever", sample / "fever" / "claims_on_local_wiki.json")
    assert len(claims) == 20 and {c.gold for c in claims} == {"SUPPORTS", "REFUTES"}


def test_cli_errors_name_file_line_and_strategy(
    eval_data: EvalData, tao_cli: Callable[..., CliResult]
) -> None:
    bad = eval_data.root / "hotpotqa" / "bad.jsonl"
    bad.write_text(json.dumps({"question": "Q", "answer": "A"}) + "\n[1, 2\n", encoding="utf-8")
    args = ["--corpus", str(eval_data.corpus), "--model", "replay:none.json"]
    result = tao_cli("eval", "hotpotqa", "--questions", str(bad), *args)
    assert result.returncode == 2  # a usage error: the file named on the command line
    assert f"{bad}:2: not valid JSON" in result.stderr
    missing = eval_data.root / "missing.jsonl"
    result = tao_cli("eval", "hotpotqa", "--questions", str(missing), *args)
    assert result.returncode == 2 and f"questions file not found: {missing}" in result.stderr
    result = tao_cli(
        "eval", "hotpotqa", "--questions", str(eval_data.questions), *args, "--strategy", "tot"
    )
    assert result.returncode == 2
    assert "'tot' is not one of" in result.stderr and "react-cot-sc" in result.stderr
