"""Concurrency, `--strategy all` and the CLI's JSON, against a real HTTP model server."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tao.eval.data import load_questions
from tao.eval.runner import Execution, run_all
from tao.eval.strategies import answer_question
from tao.models import load_model
from tao.store.factory import open_store

from ..conftest import CliResult
from .conftest import Ask, EvalData, OracleServer, scripted

Oracle = Callable[..., OracleServer]


def varying() -> Callable[[Ask], str]:
    """``scripted``, except that CoT samples on q2 disagree (1 vote of 3 for each answer)."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def respond(ask: Ask) -> str:
        if ask.kind == "COT" and ask.question == "When was Ed Wood born?":
            with lock:
                k = seen[ask.question]
                seen[ask.question] += 1
            return f"Thought: t\nAnswer: {['1924', '1925', '1926'][k % 3]}"
        return scripted(ask)

    return respond


def test_results_do_not_depend_on_concurrency(
    eval_data: EvalData, oracle: Oracle, tmp_path: Path
) -> None:
    questions = load_questions("hotpotqa", eval_data.questions)
    outcomes = []
    for concurrency in (1, 4):
        server = oracle(varying())
        config = eval_data.config("react", "openai:oracle", base_url=server.base_url, samples=3)
        runs = run_all(
            config,
            questions,
            store=open_store(),
            answer=answer_question,
            execution=Execution(concurrency=concurrency, results_dir=tmp_path / f"c{concurrency}"),
            model=load_model("openai:oracle", base_url=server.base_url),
        )
        outcomes.append({r.config.strategy: [x.comparable() for x in r.records] for r in runs})
        temperatures = {(a.kind, a.temperature) for a in server.asks}
        assert temperatures == {
            ("STANDARD", 0.0),
            ("COT", 0.0),
            ("COT", 0.7),
            ("ACT", 0.0),
            ("REACT", 0.0),
        }
    assert outcomes[0] == outcomes[1]
    by = {name: [r["answer"] for r in records] for name, records in outcomes[0].items()}
    assert by["react"] == ["yes", "Richard Nixon", "1925", None]
    assert by["cot-sc"] == ["yes", "1930", "1925", "1930"]  # q2: a 1-1-1 tie, first seen
    assert by["react-cot-sc"] == ["yes", "Richard Nixon", "1925", "1930"]  # q3 fell back
    assert by["cot-sc-react"] == ["yes", "1930", "1925", "1930"]  # q2: 1 vote of 3 → ReAct
    falls = {name: [r["fallback"] for r in records] for name, records in outcomes[0].items()}
    assert falls["react-cot-sc"] == [None, None, None, "cot-sc"]
    assert falls["cot-sc-react"] == [None, None, "react", None]


def test_cli_all_json_shape_and_resume(
    eval_data: EvalData, oracle: Oracle, tao_cli: Callable[..., CliResult]
) -> None:
    server = oracle(scripted)
    args = [
        "eval", "hotpotqa", "--questions", str(eval_data.questions), "--corpus",
        str(eval_data.corpus), "--model", "openai:oracle", "--base-url", server.base_url,
        "--strategy", "all", "--samples", "3", "--concurrency", "3", "--json",
    ]  # fmt: skip
    first = tao_cli(*args)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    assert (
        summary["strategy"] == "all" and summary["n"] == 4 and summary["model"] == "openai:oracle"
    )
    assert set(summary["strategies"]) == {
        "standard", "cot", "cot-sc", "act", "react", "react-cot-sc", "cot-sc-react"
    }  # fmt: skip
    react = summary["strategies"]["react"]
    assert react["em"] == 0.5 and react["n"] == 4 and react["paper"] == 0.274
    assert react["answered"] == 3 and react["no_answer"] == 1
    assert summary["strategies"]["react-cot-sc"]["fallbacks"] == 1
    assert summary["best"] in summary["strategies"]
    assert summary["em"] == summary["strategies"][summary["best"]]["em"]
    assert "react-cot-sc" in first.stderr and "paper" in first.stderr
    asked = len(server.asks)
    again = tao_cli(*args)
    assert again.returncode == 0
    resumed = json.loads(again.stdout.strip().splitlines()[-1])
    assert all(s["resumed"] == 4 for s in resumed["strategies"].values())
    assert len(server.asks) == asked, "a rerun with the same arguments asks the model nothing"
    for name in summary["strategies"]:
        for key in ("em", "f1", "parse_failures", "fallbacks"):
            assert resumed["strategies"][name][key] == summary["strategies"][name][key]


def test_cli_fever_reports_accuracy(
    eval_data: EvalData, oracle: Oracle, tao_cli: Callable[..., CliResult]
) -> None:
    server = oracle(scripted)
    result = tao_cli(
        "eval", "fever", "--questions", str(eval_data.claims), "--corpus", str(eval_data.corpus),
        "--model", "openai:oracle", "--base-url", server.base_url, "--strategy", "react", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["accuracy"] == 1.0 and "em" not in summary and summary["n"] == 2
    assert summary["paper"] == 0.609 and summary["parse_failures"] == 0
    runs = open_store().list_runs()
    assert len(runs) == 2 and {r.status for r in runs} == {"finished"}
