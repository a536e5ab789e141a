"""The Ray executor on a real local Ray instance gives the local executor's results."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tao.eval.data import load_questions
from tao.eval.runner import Execution, run_strategy
from tao.eval.strategies import answer_question
from tao.store.factory import open_store

from .conftest import EvalData, OracleServer, scripted

pytest.importorskip("ray", reason="the ray executor needs the eval-ray extra (pip install ray)")


def test_ray_executor_matches_local(
    eval_data: EvalData, oracle: Callable[..., OracleServer], tmp_path: Path
) -> None:
    server = oracle(scripted)
    questions = load_questions("hotpotqa", eval_data.questions)
    config = eval_data.config("react-cot-sc", "openai:oracle", base_url=server.base_url, samples=3)
    store = open_store()
    local = run_strategy(
        config,
        questions,
        store=store,
        answer=answer_question,
        execution=Execution(results_dir=tmp_path / "local"),
    )
    local_runs = {r.run_id for r in store.list_runs(limit=1000)}
    remote = run_strategy(
        config,
        questions,
        store=store,
        answer=answer_question,
        execution=Execution("ray", concurrency=2, results_dir=tmp_path / "ray"),
    )
    assert [r.comparable() for r in remote.records] == [r.comparable() for r in local.records]
    assert [r.answer for r in remote.records] == ["yes", "Richard Nixon", "1925", "1930"]
    assert remote.records[3].fallback == "cot-sc"
    # the workers' traces are recorded by the driver, into the driver's run log
    ray_runs = {r.run_id for r in store.list_runs(limit=1000)} - local_runs
    assert ray_runs == {i for r in remote.records for i in r.run_ids}
    shown = store.get_run(remote.records[1].run_ids[0])
    assert shown.answer == "Richard Nixon" and len(shown.steps) == 3
    assert shown.steps[1].observation is not None
    assert "named after Richard Nixon" in shown.steps[1].observation
