"""``tao eval``: the ReAct paper's benchmarks with every strategy (SPEC M4, P1, P2).

    from tao.eval import EvalConfig, answer_question, load_questions, run_strategy
    questions = load_questions("hotpotqa", Path("questions_dev.jsonl"))[:10]
    run = EVAL_RUN.replace(model="local", corpus=corpus, max_steps=7)
    config = EvalConfig(benchmark="hotpotqa", strategy="react", prompts=prompts, run=run)
    run = run_strategy(config, questions, store=None, answer=answer_question)
    run.summary()

``EvalConfig`` holds what is eval's own (benchmark, strategy, prompts, samples…) and
one :class:`tao.state.config.RunConfig` for its agents; each agent run is an ordinary run of
:class:`tao.Agent`, recorded in the run log with its ``RunConfig``.

Modules, one concept each: ``data`` (questions), ``prompts`` (the paper's few-shot
prompts), ``metrics`` (EM/F1/accuracy, voting), ``strategies`` (one question,
one strategy), ``executors`` (threads or Ray), ``results`` (the resumable file),
``runner`` (one eval), ``summary`` (totals, paper numbers), ``report`` (chart).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tao.eval.config import EVAL_RUN, STRATEGIES, EvalConfig
from tao.eval.data import EvalDataError, Question, load_questions
from tao.eval.metrics import exact_match, f1_score, label_match, majority_vote, normalize_answer
from tao.eval.record import QuestionRecord

if TYPE_CHECKING:
    from tao.eval.runner import Execution, StrategyRun, run_all, run_strategy
    from tao.eval.strategies import answer_question

#: Names that need the agent, imported on first use: ``tao eval report`` and reading
#: results files never load it.
_LAZY = {
    "Execution": "tao.eval.runner",
    "StrategyRun": "tao.eval.runner",
    "run_all": "tao.eval.runner",
    "run_strategy": "tao.eval.runner",
    "answer_question": "tao.eval.strategies",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tao.eval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "EVAL_RUN",
    "STRATEGIES",
    "EvalConfig",
    "EvalDataError",
    "Execution",
    "Question",
    "QuestionRecord",
    "StrategyRun",
    "answer_question",
    "exact_match",
    "f1_score",
    "label_match",
    "load_questions",
    "majority_vote",
    "normalize_answer",
    "run_all",
    "run_strategy",
]
