"""``tao eval``: the ReAct paper's benchmarks with every strategy (SPEC M4, P1, P2).

    from tao.eval import EvalSettings, load_questions, run_strategy
    questions = load_questions("hotpotqa", Path("questions_dev.jsonl"))[:10]
    run = run_strategy(EvalSettings("hotpotqa", "react", "local", corpus, prompts), questions,
                       store=None)
    run.summary()

Modules, one concept each: ``data`` (questions), ``prompts`` (the paper's few-shot
prompts), ``metrics`` (EM/F1/accuracy, voting), ``strategies`` (one question,
one strategy), ``executors`` (threads or Ray), ``results`` (the resumable file),
``runner`` (one eval), ``summary`` (totals, paper numbers), ``report`` (chart).
"""

from __future__ import annotations

from tao.eval.data import EvalDataError, Question, load_questions
from tao.eval.metrics import exact_match, f1_score, label_match, majority_vote, normalize_answer
from tao.eval.record import QuestionRecord
from tao.eval.runner import Execution, StrategyRun, run_all, run_strategy
from tao.eval.strategies import STRATEGIES, EvalSettings, answer_question

__all__ = [
    "STRATEGIES",
    "EvalDataError",
    "EvalSettings",
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
