"""One eval from start to summary: resume, run the rest, append each result, order by index.

    run = EVAL_RUN.replace(model="local", corpus=corpus)
    config = EvalConfig(benchmark="hotpotqa", strategy="react", prompts=prompts, run=run)
    run = run_strategy(config, questions[:10], store=open_store())
    run.summary()["em"]

``run_all`` runs every strategy. Its two combinations are *derived* from the
ReAct and CoT-SC results of the same eval, as in the paper: ReAct→CoT-SC takes
CoT-SC's answer where ReAct had none of its own (no answer, or one forced when its
steps ran out), CoT-SC→ReAct takes ReAct's answer where
the majority had fewer than samples/2 votes. Nothing is run twice; the derived
records are written to the combinations' own results files, so a later
``--strategy react-cot-sc`` with the same arguments resumes from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, Protocol, TypedDict, Unpack

from tao.errors import ConfigError
from tao.eval.config import ALL_ORDER, STRATEGIES, EvalConfig
from tao.eval.data import Question
from tao.eval.executors import Answerer, local_outcomes, ray_outcomes
from tao.eval.record import QuestionRecord, recorded_question, total_cost
from tao.eval.results import ResultsFile
from tao.eval.summary import StrategyRunSummary, summarize
from tao.models import Model
from tao.state.result import RunObserver, RunResult, Step

if TYPE_CHECKING:
    from tao.eval.strategies import Outcome
    from tao.store import Store


class Progress(RunObserver, Protocol):
    """What the CLI's progress bar needs to know: questions as they finish, and (as an
    observer of every agent run, on the worker threads) the steps of those in flight."""

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

    def on_start(self, result: RunResult) -> None:
        pass

    def on_step(self, result: RunResult, step: Step) -> None:
        pass

    def on_finish(self, result: RunResult) -> None:
        pass


@dataclass
class StrategyRun:
    """One strategy's results on the selected questions, ordered by question index."""

    config: EvalConfig
    records: list[QuestionRecord]
    results_file: Path
    resumed: int

    def summary(self) -> StrategyRunSummary:
        c = self.config
        return {
            **summarize(self.records, c.benchmark, c.strategy, c.model),
            "resumed": self.resumed,
            "results_file": str(self.results_file),
        }


@dataclass(frozen=True)
class Execution:
    """How questions run; none of it changes the answers (nor the results file)."""

    executor: str = "local"
    concurrency: int = 1
    ray_address: str | None = None
    results_dir: Path | None = None


class RunOptions(TypedDict):
    """Where runs are recorded and how questions run: :func:`run_strategy`'s keywords."""

    store: Store | None
    answer: NotRequired[Answerer | None]
    execution: NotRequired[Execution]
    progress: NotRequired[Progress | None]
    model: NotRequired[Model | None]


def run_strategy(
    config: EvalConfig,
    questions: Sequence[Question],
    *,
    store: Store | None,
    answer: Answerer | None = None,
    execution: Execution = Execution(),
    progress: Progress | None = None,
    model: Model | None = None,
) -> StrategyRun:
    """Run one strategy over ``questions``, skipping those its results file already holds.

    ``answer`` answers one question; by default :func:`tao.eval.strategies.answer_question`,
    which builds agents. It is handed down (or imported here, when it is used) so that this
    bookkeeping sits below the agents it runs."""
    if answer is None:
        from tao.eval.strategies import answer_question

        answer = answer_question
    if config.strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {config.strategy!r}; choose one of: {STRATEGIES}")
    progress = progress or _NoProgress()
    results = ResultsFile.for_settings(config.key(), execution.results_dir)
    done = _matching(results.load(), questions)
    todo = [q for q in questions if q.index not in done]
    progress.start(config.strategy, len(questions), len(questions) - len(todo))
    try:
        for outcome in _outcomes(config, todo, store, answer, execution, model, progress):
            _record_remote_runs(outcome, store)
            results.append(outcome.record)
            done[outcome.record.index] = outcome.record
            progress.advance(outcome.record)
    finally:
        progress.stop()
    records = [done[q.index] for q in questions]
    return StrategyRun(config, records, results.path, len(questions) - len(todo))


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
        and record.question == recorded_question(wanted[index].question)
    }


def _outcomes(
    config: EvalConfig,
    todo: Sequence[Question],
    store: Store | None,
    answer: Answerer,
    execution: Execution,
    model: Model | None,
    progress: Progress,
) -> Iterator[Outcome]:
    if not todo:
        return iter(())
    if execution.executor == "ray":
        return ray_outcomes(
            answer,
            config,
            todo,
            address=execution.ray_address,
            concurrency=execution.concurrency,
        )
    if execution.executor != "local":
        raise ConfigError(f"unknown executor {execution.executor!r}; choose local or ray")
    return local_outcomes(
        answer,
        config,
        todo,
        store,
        concurrency=execution.concurrency,
        model=model,
        observers=(progress,),
    )


def _record_remote_runs(outcome: Outcome, store: Store | None) -> None:
    """Runs that came back from a Ray worker go into the driver's run log."""
    if store is None:
        return
    for result, config in outcome.runs:
        store.finish_run(result, config)


def run_all(
    base: EvalConfig, questions: Sequence[Question], **options: Unpack[RunOptions]
) -> list[StrategyRun]:
    """Every strategy of ``ALL_ORDER``; the combinations are derived from ReAct and CoT-SC.

    ``options`` are :func:`run_strategy`'s keywords (``store`` is required).
    """
    runs: dict[str, StrategyRun] = {}
    for strategy in ALL_ORDER:
        config = replace(base, strategy=strategy)
        if strategy in ("react-cot-sc", "cot-sc-react"):
            runs[strategy] = derive_combination(
                config,
                runs["react"],
                runs["cot-sc"],
                questions,
                options.get("execution", Execution()),
                options.get("progress"),
            )
        else:
            runs[strategy] = run_strategy(config, questions, **options)
    return [runs[name] for name in ALL_ORDER]


def derive_combination(
    config: EvalConfig,
    react: StrategyRun,
    cot_sc: StrategyRun,
    questions: Sequence[Question],
    execution: Execution = Execution(),
    progress: Progress | None = None,
) -> StrategyRun:
    """ReAct→CoT-SC or CoT-SC→ReAct from the two runs' records (same questions, same order)."""
    progress = progress or _NoProgress()
    results = ResultsFile.for_settings(config.key(), execution.results_dir)
    done = _matching(results.load(), questions)
    resumed = len(done)
    combine: Callable[[QuestionRecord, QuestionRecord], QuestionRecord] = (
        _react_then_cot_sc if config.strategy == "react-cot-sc" else _cot_sc_then_react
    )
    progress.start(config.strategy, len(questions), resumed)
    try:
        for react_record, sc_record in zip(react.records, cot_sc.records, strict=True):
            if react_record.index in done:
                continue
            record = combine(react_record, sc_record)
            record.strategy = config.strategy
            results.append(record)
            done[record.index] = record
            progress.advance(record)
    finally:
        progress.stop()
    return StrategyRun(config, [done[q.index] for q in questions], results.path, resumed)


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
        forced=answer_from.forced,
        run_ids=[*first.run_ids, *then.run_ids],
    )
    for name in _COSTS:
        setattr(merged, name, getattr(first, name) + getattr(then, name))
    merged.seconds = round(first.seconds + then.seconds, 3)
    merged.cost_usd = total_cost((first.cost_usd, then.cost_usd))
    return merged


_COSTS = ("steps", "model_calls", "tokens", "input_tokens", "output_tokens", "parse_failures")


def _react_then_cot_sc(react: QuestionRecord, sc: QuestionRecord) -> QuestionRecord:
    own_answer = react.status == "finished" and not react.forced
    if own_answer or react.status == "error":  # a failed model call: no fallback either
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
