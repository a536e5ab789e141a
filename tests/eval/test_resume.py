"""An eval killed with SIGKILL resumes: the rerun skips finished questions and loses none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tao.eval.results import ResultsFile

from ..conftest import CliResult
from .conftest import EvalData, OracleServer, scripted


def test_resume_after_sigkill(
    eval_data: EvalData,
    oracle: Callable[..., OracleServer],
    tao_home: Path,
    tao_cli: Callable[..., CliResult],
) -> None:
    server = oracle(scripted, delay=0.3)
    args = [
        "eval", "hotpotqa", "--questions", str(eval_data.questions), "--corpus",
        str(eval_data.corpus), "--model", "openai:oracle", "--base-url", server.base_url,
        "--strategy", "react", "--json",
    ]  # fmt: skip
    env = {**os.environ, "TAO_HOME": str(tao_home)}
    child = subprocess.Popen(
        [sys.executable, "-m", "tao", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    evals = tao_home / "evals"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            files = list(evals.glob("hotpotqa-react-*.jsonl"))
            if files and files[0].read_bytes().count(b"\n") >= 2:
                break
            assert child.poll() is None, "the eval ended before it could be killed"
            time.sleep(0.05)
        else:
            raise AssertionError("no two questions finished within 60 s")
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    (path,) = files
    before = ResultsFile(path).read()
    assert 2 <= len(before) < 4
    finished = {r.question for r in before}
    with path.open("ab") as handle:  # as if the kill had landed in the middle of a write
        handle.write(b'{"index": 3, "id": "q3", "question": "Where do')
    asked_before = len(server.asks)

    rerun = tao_cli(*args)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout.strip().splitlines()[-1])
    assert summary["n"] == 4 and summary["resumed"] == len(before)
    assert summary["em"] == 0.5  # q0 and q1 right, q2 wrong, q3 no answer
    asked_again = {ask.question for ask in server.asks[asked_before:]}
    assert asked_again and not asked_again & finished, "finished questions are not asked again"
    after = ResultsFile(path).read()
    assert sorted(r.index for r in after) == [0, 1, 2, 3]
    assert [r.to_json() for r in after[: len(before)]] == [r.to_json() for r in before]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and all(json.loads(line) for line in lines)  # the torn tail is gone


def test_results_file_tolerates_only_a_torn_last_line(tmp_path: Path) -> None:
    from tao.eval.record import QuestionRecord
    from tao.eval.results import ResultsError

    path = tmp_path / "r.jsonl"
    results = ResultsFile(path)
    record = QuestionRecord(0, "q0", "Q?", "A", "A", 1.0, 1.0, "cot", "hotpotqa", "m")
    results.append(record)
    text = path.read_text()
    path.write_text(text.rstrip("\n"))  # whole JSON, newline lost
    assert list(results.load()) == [0]
    results.append(QuestionRecord(1, "q1", "Q?", "A", None, 0.0, 0.0, "cot", "hotpotqa", "m"))
    assert list(results.load()) == [0, 1]
    path.write_text("{broken\n" + path.read_text())
    with pytest.raises(ResultsError, match=rf"{path}:1: not a results line"):
        results.load()  # a corrupt line in the middle is an error, not silently skipped


def test_results_written_by_the_first_tao_still_resume(tmp_path: Path) -> None:
    """The key (so the file name) and the line format are unchanged since tao's first evals,
    for a strategy whose reading never changed (Standard; see ``STRATEGY_FORMAT``)."""
    from tao.eval.config import EVAL_RUN, EvalConfig
    from tao.eval.results import settings_digest

    run = EVAL_RUN.replace(
        model="openai:oracle", base_url="http://127.0.0.1:1/v1", corpus="/data/wiki.jsonl"
    )
    config = EvalConfig(
        benchmark="hotpotqa",
        strategy="standard",
        prompts="/data/react_prompts",
        questions="/data/q.jsonl",
        prompt="paper",  # what every eval sent before prompt styles (issue 16)
        run=run,
    )
    assert settings_digest(config.key()) == "561b1021dcca6a3b"  # as tao at 5266247 named it
    results = ResultsFile.for_settings(config.key(), tmp_path)
    assert results.path.name == "hotpotqa-standard-561b1021dcca6a3b.jsonl"
    line = (
        '{"index": 0, "id": "q0", "question": "Q?", "gold": "yes", "answer": "yes", "em": 1.0, '
        '"f1": 1.0, "strategy": "standard", "benchmark": "hotpotqa", "model": "openai:oracle", '
        '"status": "finished", "steps": 3, "model_calls": 3, "tokens": 120, "input_tokens": 100, '
        '"output_tokens": 20, "seconds": 1.5, "parse_failures": 0, "fallback": null, '
        '"votes": null, "samples": null, "run_ids": ["0193abc"], "error": null}\n'
    )
    results.path.write_text(line, encoding="utf-8")
    (record,) = results.load().values()
    assert record.answer == "yes" and record.run_ids == ["0193abc"] and record.tokens == 120
    # Lines only gain fields: one written before costs were kept reads with an unknown cost.
    assert json.loads(line) | {"cost_usd": None, "forced": False} == record.to_json()


def test_a_mistyped_results_line_is_refused_with_its_field(tmp_path: Path) -> None:
    from tao.eval.record import QuestionRecord
    from tao.eval.results import ResultsError

    path = tmp_path / "r.jsonl"
    good = QuestionRecord(0, "q0", "Q?", "A", "A", 1.0, 1.0, "cot", "hotpotqa", "m").to_json()
    path.write_text(
        json.dumps({**good, "steps": "three"}) + "\n" + json.dumps(good) + "\n", encoding="utf-8"
    )
    with pytest.raises(ResultsError, match=r"r.jsonl:1: not a results line \(steps must be an"):
        ResultsFile(path).load()
