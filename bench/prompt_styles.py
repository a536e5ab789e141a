"""Which prompt style to send the embedded model: exact match per second on dev questions.

    python bench/prompt_styles.py -n 30                       # ReAct, every style
    python bench/prompt_styles.py -n 20 --styles paper,shots2-reminder --strategy act
    python bench/prompt_styles.py --benchmark fever -n 20

Every style (:data:`tao.eval.prompts.STYLES`) answers the same first ``-n`` questions of
the **dev** file with one loaded model, in this process. The styles take turns question
by question (question 1 in every style, then question 2, ...), so a change in the
machine's load falls on all of them alike. Nothing here ever reads a held-out file: the
default style is picked on ``questions_dev.jsonl`` alone.

``EM/ks`` is exact matches per thousand seconds of model time, the figure the default is
chosen by (correct answers for the time spent); ``w/o forced`` is EM counting answers
forced by the step budget or by repeated calls as wrong; ``ans`` counts answers (forced
ones in brackets). The 95% intervals are the eval's seeded bootstrap: with a few dozen
questions they are wide, and the table says when two styles cannot be told apart.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from tao.eval.config import DEFAULT_STEPS, EVAL_RUN, EvalConfig
from tao.eval.data import Benchmark, load_questions
from tao.eval.prompts import STYLES, load_prompts
from tao.eval.record import QuestionRecord
from tao.eval.strategies import answer_question
from tao.eval.summary import score, summarize
from tao.models.local import LocalModel

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
QUESTIONS: dict[str, Path] = {
    "hotpotqa": DATA / "hotpotqa" / "questions_dev.jsonl",
    "fever": DATA / "fever" / "claims_on_local_wiki.json",
}


def _config(benchmark: Benchmark, strategy: str, style: str) -> EvalConfig:
    return EvalConfig(
        benchmark=benchmark,
        strategy=strategy,
        prompts=str(DATA / "react_prompts"),
        questions=str(QUESTIONS[benchmark]),
        prompt=style,
        run=EVAL_RUN.replace(
            model="local",
            corpus=str(DATA / "hotpotqa" / "wiki.jsonl"),
            max_steps=DEFAULT_STEPS[benchmark],
        ),
    )


def _row(style: str, records: list[QuestionRecord]) -> tuple[str, float, tuple[float, float]]:
    """One style's table row (from the eval's own summary), its EM per second, its EM CI."""
    first = records[0]
    s = summarize(records, first.benchmark, first.strategy, first.model)
    low, high = s.get("em_ci") or s.get("accuracy_ci") or [0.0, 0.0]
    seconds = s["seconds_per_question"] * s["n"]
    rate = score(s, first.benchmark) * s["n"] / max(seconds, 1e-9)
    line = (
        f"| {style} | {100 * score(s, first.benchmark):.1f} | {100 * low:.0f}-{100 * high:.0f} "
        f"| {100 * s.get('f1', 0.0):.1f} | {100 * s['unforced']:.1f} "
        f"| {s['answered']} ({s['forced']}) | {s['avg_steps']:.1f} "
        f"| {s['avg_tokens']:,.0f} | {s['seconds_per_question']:.1f} | {1000 * rate:.1f} |"
    )
    return line, rate, (low, high)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=20, help="dev questions (default 20)")
    parser.add_argument("--benchmark", choices=("hotpotqa", "fever"), default="hotpotqa")
    parser.add_argument("--strategy", choices=("react", "act"), default="react")
    parser.add_argument("--styles", default=",".join(STYLES), help="comma list (default all)")
    args = parser.parse_args(argv)
    benchmark: Benchmark = args.benchmark
    styles = [name.strip() for name in args.styles.split(",")]
    configs = {style: _config(benchmark, args.strategy, style) for style in styles}
    prompts = load_prompts(DATA / "react_prompts", benchmark)
    questions = load_questions(benchmark, QUESTIONS[benchmark])[: args.n]
    model = LocalModel()
    records: dict[str, list[QuestionRecord]] = {style: [] for style in styles}
    started = time.monotonic()
    for done, question in enumerate(questions, 1):
        for style in styles:
            outcome = answer_question(configs[style], model, prompts, question, None)
            records[style].append(outcome.record)
            r = outcome.record
            print(
                f"# q{question.index} {style}: em {r.em:.0f} forced {r.forced} "
                f"{r.seconds:.0f} s ({time.monotonic() - started:.0f} s in all)",
                file=sys.stderr,
                flush=True,
            )
        if done % 5 == 0 and done < len(questions):  # a table so far, should it be stopped
            _table(records, f"after {done} questions", sys.stderr)
    _table(
        records,
        f"{benchmark} {args.strategy}, the first {len(questions)} dev questions, "
        f"max_steps {DEFAULT_STEPS[benchmark]}, embedded model, greedy",
        sys.stdout,
    )
    return 0


def _table(records: dict[str, list[QuestionRecord]], title: str, out: TextIO) -> None:
    print(title, file=out)
    print(
        "| style | EM% | 95% CI | F1% | w/o forced | ans (forced) | steps | tok/q | s/q | EM/ks |",
        file=out,
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|", file=out)
    best, best_rate, best_ci = "", -1.0, (0.0, 0.0)
    intervals: dict[str, tuple[float, float]] = {}
    for style, rows in records.items():
        line, rate, interval = _row(style, rows)
        intervals[style] = interval
        print(line, file=out)
        if rate > best_rate:
            best, best_rate, best_ci = style, rate, interval
    print(f"\nbest by EM per second: {best}", file=out)
    close = [s for s, ci in intervals.items() if s != best and ci[1] >= best_ci[0]]
    if close:
        print(
            f"its EM interval overlaps {', '.join(close)}: the EM difference may be noise",
            file=out,
            flush=True,
        )


if __name__ == "__main__":
    raise SystemExit(main())
