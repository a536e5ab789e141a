"""One eval from start to summary: resume, run the rest, append each result, order by index.

    settings = EvalSettings("hotpotqa", "react", "local", corpus, prompts, questions)
    run = run_strategy(settings, questions[:10], store=Store.open())
    run.summary()["em"]

``run_all`` runs every strategy. Its two combinations are *derived* from the
ReAct and CoT-SC results of the same eval, as in the paper: ReAct→CoT-SC takes
CoT-SC's answer where ReAct had none, CoT-SC→ReAct takes ReAct's answer where
the majority had fewer than samples/2 votes. Nothing is run twice; the derived
records are written to the combinations' own results files, so a later
``--strategy react-cot-sc`` with the same arguments resumes from them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tao.eval.data import Question
from tao.eval.executors import local_outcomes, ray_outcomes
from tao.eval.record import QuestionRecord
from tao.eval.results import ResultsFile
from tao.eval.strategies import STRATEGIES, EvalSettings, Outcome
from tao.eval.summary import summarize
from tao.models import Model

if TYPE_CHECKING:
    from tao.store import Store

#: ``--strategy all``: the single strategies first, then the two derived combinations.
ALL_ORDER = ("standard", "cot", "act", "react", "cot-sc", "react-cot-sc", "cot-sc-react")


class Progress(Protocol):
    """What the CLI's progress bar needs to know."""

    def start(self, strategy: str, total: int, done: int) -> None: ...

    def advance(self, record: QuestionRecord) -> None: ...

    def stop(self) -> None: ...


class _NoProgress:
    def start(self, strategy: str, total: int, done: int) -> None:
        pass

    def advance(self, record: QuestionRecord) -> None:
        pass

    def stop(self) -> None:
        pass


@dataclass
class StrategyRun:
    """One strategy's results on the selected questions, ordered by question index."""

    settings: EvalSettings
    records: list[QuestionRecord]
    results_file: Path
    resumed: int

    def summary(self) -> dict[str, Any]:
        s = self.settings
        data = summarize(self.records, s.benchmark, s.strategy, s.model)
        data["resumed"] = self.resumed
        data["results_file"] = str(self.results_file)
        return data


@dataclass(frozen=True)
class Execution:
    """How questions run; none of it changes the answers (nor the results file)."""

    executor: str = "local"
    concurrency: int = 1
    ray_address: str | None = None
    results_dir: Path | None = None


def run_strategy(
    settings: EvalSettings,
    questions: Sequence[Question],
    *,
    store: Store | None,
    execution: Execution = Execution(),
    progress: Progress | None = None,
    model: Model | None = None,
) -> StrategyRun:
    """Run one strategy over ``questions``, skipping those its results file already holds."""
    if settings.strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {settings.strategy!r}; choose one of: {STRATEGIES}")
    progress = progress or _NoProgress()
    results = ResultsFile.for_settings(settings.key(), execution.results_dir)
    done = _matching(results.load(), questions)
    todo = [q for q in questions if q.index not in done]
    progress.start(settings.strategy, len(questions), len(questions) - len(todo))
    try:
        for outcome in _outcomes(settings, todo, store, execution, model):
            _record_remote_runs(outcome, store)
            results.append(outcome.record)
            done[outcome.record.index] = outcome.record
            progress.advance(outcome.record)
    finally:
        progress.stop()
    records = [done[q.index] for q in questions]
    return StrategyRun(settings, records, results.path, len(questions) - len(todo))


def _matching(
    stored: dict[int, QuestionRecord], questions: Sequence[Question]
) -> dict[int, QuestionRecord]:
    """Stored records that still belong to the same question (index, id and text)."""
    wanted = {q.index: q for q in questions}
    return {
        index: record
        for index, record in stored.items()
        if index in wanted
        and record.id == wanted[index].id
        and record.question == wanted[index].question
    }


def _outcomes(
    settings: EvalSettings,
    todo: Sequence[Question],
    store: Store | None,
    execution: Execution,
    model: Model | None,
) -> Any:
    if not todo:
        return iter(())
    if execution.executor == "ray":
        return ray_outcomes(
            settings, todo, address=execution.ray_address, concurrency=execution.concurrency
        )
    if execution.executor != "local":
        raise ValueError(f"unknown executor {execution.executor!r}; choose local or ray")
    return local_outcomes(settings, todo, store, concurrency=execution.concurrency, model=model)


def _record_remote_runs(outcome: Outcome, store: Store | None) -> None:
    """Runs that came back from a Ray worker go into the driver's run log."""
    if store is None:
        return
    for result, config in outcome.runs:
        store.finish_run(result, config)


def run_all(
    base: EvalSettings,
    questions: Sequence[Question],
    *,
    store: Store | None,
    execution: Execution = Execution(),
    progress: Progress | None = None,
    model: Model | None = None,
) -> list[StrategyRun]:
    """Every strategy of ``ALL_ORDER``; the combinations are derived from ReAct and CoT-SC."""
    runs: dict[str, StrategyRun] = {}
    for strategy in ALL_ORDER:
        settings = replace(base, strategy=strategy)
        if strategy in ("react-cot-sc", "cot-sc-react"):
            runs[strategy] = derive_combination(
                settings, runs["react"], runs["cot-sc"], questions, execution, progress
            )
        else:
            runs[strategy] = run_strategy(
                settings,
                questions,
                store=store,
                execution=execution,
                progress=progress,
                model=model,
            )
    return [runs[name] for name in ALL_ORDER]


def derive_combination(
    settings: EvalSettings,
    react: StrategyRun,
    cot_sc: StrategyRun,
    questions: Sequence[Question],
    execution: Execution = Execution(),
    progress: Progress | None = None,
) -> StrategyRun:
    """ReAct→CoT-SC or CoT-SC→ReAct from the two runs' records (same questions, same order)."""
    progress = progress or _NoProgress()
    results = ResultsFile.for_settings(settings.key(), execution.results_dir)
    done = _matching(results.load(), questions)
    resumed = len(done)
    combine: Callable[[QuestionRecord, QuestionRecord], QuestionRecord] = (
        _react_then_cot_sc if settings.strategy == "react-cot-sc" else _cot_sc_then_react
    )
    progress.start(settings.strategy, len(questions), resumed)
    try:
        for react_record, sc_record in zip(react.records, cot_sc.records, strict=True):
            if react_record.index in done:
                continue
            record = combine(react_record, sc_record)
            record.strategy = settings.strategy
            results.append(record)
            done[record.index] = record
            progress.advance(record)
    finally:
        progress.stop()
    return StrategyRun(settings, [done[q.index] for q in questions], results.path, resumed)


def _merged(
    first: QuestionRecord, then: QuestionRecord, answer_from: QuestionRecord
) -> QuestionRecord:
    """``first`` followed by ``then``: the cost of both, the answer of ``answer_from``."""
    merged = replace(
        first,
        answer=answer_from.answer,
        em=answer_from.em,
        f1=answer_from.f1,
        status=answer_from.status,
        error=answer_from.error,
        run_ids=[*first.run_ids, *then.run_ids],
    )
    for name in _COSTS:
        setattr(merged, name, getattr(first, name) + getattr(then, name))
    merged.seconds = round(first.seconds + then.seconds, 3)
    return merged


_COSTS = ("steps", "model_calls", "tokens", "input_tokens", "output_tokens", "parse_failures")


def _react_then_cot_sc(react: QuestionRecord, sc: QuestionRecord) -> QuestionRecord:
    if react.status != "no_answer":  # an answer (or a failed model call): no fallback
        return replace(react)
    merged = _merged(react, sc, sc)
    merged.fallback, merged.votes, merged.samples = "cot-sc", sc.votes, sc.samples
    return merged


def _cot_sc_then_react(react: QuestionRecord, sc: QuestionRecord) -> QuestionRecord:
    samples = sc.samples or 0
    if sc.status == "error" or (sc.votes or 0) >= samples / 2:
        return replace(sc)
    merged = _merged(sc, react, react)
    merged.fallback = "react"
    return merged
