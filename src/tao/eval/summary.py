"""Per-strategy totals beside the paper's PaLM-540B numbers, as a dict and as a table.

The ``--json`` shape of one strategy (scores are fractions, 0 to 1)::

    {"benchmark": "hotpotqa", "strategy": "react", "model": "local", "n": 10,
     "em": 0.3, "f1": 0.41, "em_ci": [0.0, 0.6], "f1_ci": [0.1, 0.7], "paper": 0.274,
     "answered": 9, "forced": 2, "unforced": 0.2, "no_answer": 1, "errors": 0,
     "parse_failures": 2, "fallbacks": 0, "avg_steps": 4.1, "avg_model_calls": 4.1,
     "avg_tokens": 15200.0, "seconds_per_question": 38.5, "cost_usd": 0.0,
     "results_file": "..."}

``cost_usd`` is the money spent on all ``n`` questions (``null``: unknown). ``forced``
counts answers given by a step that could only answer (the step budget spent, SPEC L5,
or the model repeating a call); ``unforced`` is the headline score (EM, or FEVER
accuracy) with those counted as wrong.

FEVER has ``accuracy`` (and ``accuracy_ci``) instead of ``em`` and ``f1``. The ``_ci``
fields are seeded bootstrap 95% intervals (:func:`tao.eval.metrics.bootstrap_ci`).
``--strategy all`` prints one object with every strategy under ``strategies`` and, at
the top, ``n``, the total ``parse_failures``, the scores of the ``best`` strategy and
``warnings``: why the sample cannot rank the strategies (:func:`comparison_warnings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from tao.eval.metrics import MIN_COMPARABLE_N, bootstrap_ci
from tao.eval.record import QuestionRecord, total_cost
from tao.format import format_cost

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.table import Table


class Scores(TypedDict, total=False):
    """HotpotQA has ``em`` and ``f1``, FEVER ``accuracy`` (fractions, 0 to 1)."""

    em: float
    f1: float
    accuracy: float
    em_ci: list[float]
    f1_ci: list[float]
    accuracy_ci: list[float]


class StrategySummary(Scores):
    """One strategy's totals: the ``--json`` shape of the module docstring."""

    benchmark: str
    strategy: str
    model: str
    n: int
    paper: float | None
    answered: int
    forced: int
    """Answers given by a step that could only answer (step budget spent, or repeats)."""
    unforced: float
    """The headline score (EM, FEVER accuracy) counting forced answers as wrong."""
    no_answer: int
    errors: int
    parse_failures: int
    fallbacks: int
    avg_steps: float
    avg_model_calls: float
    avg_tokens: float
    seconds_per_question: float
    cost_usd: float | None
    """US dollars over every question; ``None``: unknown (a model with no price)."""


class StrategyRunSummary(StrategySummary):
    """A summary of one eval run (:class:`tao.eval.runner.StrategyRun`): where it resumed from."""

    resumed: int
    """Questions taken from the results file instead of asked again."""
    results_file: str


class AllSummary(Scores):
    """``--strategy all``: every strategy, with the best one's scores on top."""

    benchmark: str
    strategy: str
    model: str
    n: int
    parse_failures: int
    best: str
    warnings: list[str]
    strategies: dict[str, StrategySummary]


PAPER_MODEL = "PaLM-540B"
#: The ReAct paper's Table 1 (PaLM-540B): HotpotQA exact match, FEVER accuracy, in percent.
PAPER: dict[str, dict[str, float]] = {
    "hotpotqa": {
        "standard": 28.7,
        "cot": 29.4,
        "cot-sc": 33.4,
        "act": 25.7,
        "react": 27.4,
        "cot-sc-react": 34.2,
        "react-cot-sc": 35.1,
    },
    "fever": {
        "standard": 57.1,
        "cot": 56.3,
        "cot-sc": 60.4,
        "act": 58.9,
        "react": 60.9,
        "cot-sc-react": 64.6,
        "react-cot-sc": 62.0,
    },
}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def score_name(benchmark: str) -> str:
    """The headline metric: ``em`` for HotpotQA, ``accuracy`` for FEVER."""
    return "accuracy" if benchmark == "fever" else "em"


def score(summary: Scores, benchmark: str) -> float:
    """The headline score of ``summary`` (see :func:`score_name`)."""
    return summary.get("accuracy", 0.0) if benchmark == "fever" else summary.get("em", 0.0)


def _scores(records: Sequence[QuestionRecord], benchmark: str) -> Scores:
    ems = [r.em for r in records]
    if benchmark == "fever":
        return {"accuracy": round(_mean(ems), 4), "accuracy_ci": list(bootstrap_ci(ems))}
    f1s = [r.f1 for r in records]
    return {
        "em": round(_mean(ems), 4),
        "f1": round(_mean(f1s), 4),
        "em_ci": list(bootstrap_ci(ems)),
        "f1_ci": list(bootstrap_ci(f1s)),
    }


def _interval(summary: Scores, benchmark: str) -> list[float] | None:
    return summary.get("accuracy_ci") if benchmark == "fever" else summary.get("em_ci")


def comparison_warnings(summaries: Sequence[StrategySummary]) -> list[str]:
    """Why these summaries cannot rank their strategies; empty when they can.

    Two reasons: fewer than :data:`MIN_COMPARABLE_N` questions, or the best strategy's
    95% interval overlapping another's (the difference may be noise).
    """
    if not summaries:
        return []
    benchmark = summaries[0]["benchmark"]
    metric = "accuracy" if benchmark == "fever" else "EM"
    warnings: list[str] = []
    small = min(s["n"] for s in summaries)
    if small < MIN_COMPARABLE_N:
        warnings.append(f"n={small} < {MIN_COMPARABLE_N}: too few questions to compare strategies")
    best = max(summaries, key=lambda s: score(s, benchmark))
    best_ci = _interval(best, benchmark)
    overlapping = [
        s["strategy"]
        for s in summaries
        if s is not best
        and best_ci is not None
        and (ci := _interval(s, benchmark)) is not None
        and ci[1] >= best_ci[0]
    ]
    if overlapping:
        warnings.append(
            f"the 95% {metric} interval of the best, {best['strategy']}, overlaps "
            f"{', '.join(overlapping)}: this sample does not tell them apart"
        )
    return warnings


def summarize(
    records: Sequence[QuestionRecord], benchmark: str, strategy: str, model: str
) -> StrategySummary:
    """Totals over ``records`` (one strategy); see the module docstring for the shape."""
    paper = PAPER.get(benchmark, {}).get(strategy)
    return {
        "benchmark": benchmark,
        "strategy": strategy,
        "model": model,
        "n": len(records),
        **_scores(records, benchmark),
        "paper": None if paper is None else round(paper / 100, 4),
        "answered": sum(1 for r in records if r.answer is not None),
        "forced": sum(1 for r in records if r.forced),
        "unforced": round(_mean([0.0 if r.forced else r.em for r in records]), 4),
        "no_answer": sum(1 for r in records if r.status == "no_answer"),
        "errors": sum(1 for r in records if r.status == "error"),
        "parse_failures": sum(r.parse_failures for r in records),
        "fallbacks": sum(1 for r in records if r.fallback),
        "avg_steps": round(_mean([r.steps for r in records]), 2),
        "avg_model_calls": round(_mean([r.model_calls for r in records]), 2),
        "avg_tokens": round(_mean([r.tokens for r in records]), 1),
        "seconds_per_question": round(_mean([r.seconds for r in records]), 2),
        "cost_usd": total_cost(r.cost_usd for r in records),
    }


def combine_summaries(summaries: Sequence[StrategySummary]) -> AllSummary:
    """The ``--strategy all`` object: every strategy, plus the best one's scores on top."""
    first = summaries[0]
    best = max(summaries, key=lambda s: score(s, first["benchmark"]))
    scores: Scores = {}
    for key in ("em", "f1", "accuracy"):
        if key in best:
            scores[key] = best[key]
    return {
        "benchmark": first["benchmark"],
        "strategy": "all",
        "model": first["model"],
        "n": max(s["n"] for s in summaries),
        "parse_failures": sum(s["parse_failures"] for s in summaries),
        "best": best["strategy"],
        "warnings": comparison_warnings(summaries),
        **scores,
        "strategies": {s["strategy"]: s for s in summaries},
    }


def _span(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _compact(value: float) -> str:
    return f"{value / 1000:.0f}k" if value >= 10_000 else f"{value:.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _ci(interval: list[float] | None) -> str:
    return "-" if not interval else f"{100 * interval[0]:.0f}-{100 * interval[1]:.0f}"


#: The columns after the scores: what answering cost (the second table on a narrow terminal).
_COST_COLUMNS = ("ans", "w/o", "parse", "fallb", "steps", "tok/q", "s/q", "cost")


def summary_table(summaries: Sequence[StrategySummary]) -> RenderableType:
    """Each strategy's scores next to the paper's, with cost per question (tokens, seconds)
    and the money all its questions cost: one table where the terminal is wide enough, else
    two (scores, then costs), each keyed by strategy, so no header, strategy or number is
    ever cut to "strat… E…" (issue 30)."""
    benchmark = summaries[0]["benchmark"]
    fever = benchmark == "fever"
    scores = ["acc%", "95% CI"] if fever else ["EM%", "95% CI", "F1%", "95% CI"]
    headers = ["strategy", *scores, "paper", *_COST_COLUMNS]
    rows = [_row(s, fever) for s in summaries]
    title = (
        f"{benchmark} · {summaries[0]['model']} · n={_span([s['n'] for s in summaries])} "
        f"(paper: {PAPER_MODEL}; ans = answered (of them forced: budget spent or repeats), "
        "w/o = the score without forced answers, parse = parse errors, fallb = fallbacks)"
    )
    split = len(scores) + 2  # strategy, the scores, paper | the costs
    first = _table(headers[:split], [row[:split] for row in rows])
    second = _table(headers[:1] + headers[split:], [row[:1] + row[split:] for row in rows])
    stacked = [_table(["strategy", row[0]], list(zip(headers[1:], row[1:], strict=True)))
               for row in rows]  # fmt: skip
    return _Fitted(title, ((_table(headers, rows),), (first, second), tuple(stacked)))


def _row(s: StrategySummary, fever: bool) -> list[str]:
    scores = (
        [_pct(s.get("accuracy")), _ci(s.get("accuracy_ci"))]
        if fever
        else [_pct(s.get("em")), _ci(s.get("em_ci")), _pct(s.get("f1")), _ci(s.get("f1_ci"))]
    )
    return [
        s["strategy"],
        *scores,
        _pct(s["paper"]),
        f"{s['answered']} ({s['forced']})" if s["forced"] else str(s["answered"]),
        _pct(s["unforced"]),
        str(s["parse_failures"]),
        str(s["fallbacks"]),
        f"{s['avg_steps']:.1f}",
        _compact(s["avg_tokens"]),
        f"{s['seconds_per_question']:.0f}",
        format_cost(s.get("cost_usd")),
    ]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """A table whose cells are never cut: the strategy column folds before anything else."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for i, header in enumerate(headers):
        if i == 0:
            table.add_column(header, overflow="fold", min_width=len(header))
        else:
            table.add_column(header, justify="right", no_wrap=True, min_width=len(header),
                             style="dim" if header == "paper" else None)  # fmt: skip
    for row in rows:
        table.add_row(*row)
    return table


class _Fitted:
    """The title (wrapped at the terminal's width), then the first of ``layouts`` whose every
    table fits the terminal whole: one table, then two, then one small table per strategy."""

    def __init__(self, title: str, layouts: Sequence[Sequence[Table]]) -> None:
        self.title = title
        self.layouts = layouts

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.measure import Measurement
        from rich.text import Text

        wide = options.update(width=10_000)

        def fits(layout: Sequence[Table]) -> bool:
            widths = (Measurement.get(console, wide, table).maximum for table in layout)
            return all(width <= options.max_width for width in widths)

        yield Text(self.title)
        yield from next((layout for layout in self.layouts if fits(layout)), self.layouts[-1])
