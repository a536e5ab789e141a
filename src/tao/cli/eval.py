"""``tao eval``: the ReAct paper's benchmarks with every strategy (SPEC M4, P1, P2).

    tao eval hotpotqa --strategy react --model local --limit 20   # the shipped sample
    tao eval fetch                        # the full dev sets, once, into the user cache
    tao eval fever --strategy all --json  # now on the full set
    tao eval hotpotqa --questions my.jsonl --corpus my-wiki.jsonl
    tao eval report ~/.local/share/tao/evals -o chart.png

Progress goes to stderr; the summary table to stdout (stderr with ``--json``,
whose single stdout line is the summary object). Results are appended to
``$TAO_HOME/evals/``: the same command again resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tao.cli.options import Decorator, shown
from tao.cli.settings import config_values, setting_options, split_options
from tao.cli.terminal import console, echo, echo_json
from tao.cli.terminal import console as terminal_console
from tao.cli.usage import cli_error
from tao.errors import TaoError
from tao.eval.config import (
    ALL_ORDER,
    DEFAULT_PROMPT,
    DEFAULT_SAMPLES,
    DEFAULT_SC_TEMPERATURE,
    DEFAULT_STEPS,
    EVAL_RUN,
    EvalConfig,
)
from tao.eval.data import Benchmark, Question
from tao.eval.prompts import STYLES

if TYPE_CHECKING:
    from tao.cli.eval_progress import BarProgress
    from tao.eval.runner import StrategyRun

STRATEGY_CHOICES = (*ALL_ORDER, "all")
_Command = TypeVar("_Command", bound=Callable[..., object])


@click.group(name="eval")
def eval_group() -> None:
    """Run the ReAct paper's benchmarks (HotpotQA, FEVER) with every strategy."""


#: The options of every benchmark command, in ``--help`` order.
_OPTIONS: list[Decorator] = [
    click.option(
        "--data",
        type=click.Path(file_okay=False, path_type=Path),
        help="A data folder (hotpotqa/, fever/, react_prompts/); default: $TAO_EVAL_DATA, "
        "else what tao eval fetch downloaded, else the shipped 20-question sample.",
    ),
    click.option(
        "--download",
        is_flag=True,
        help="Fetch the full data first (as tao eval fetch does), then run on it.",
    ),
    click.option(
        "--questions",
        type=click.Path(path_type=Path),
        help="Questions file (HotpotQA JSONL, FEVER JSON); default: the data folder's.",
    ),
    shown(
        "--strategy",
        click.Choice(STRATEGY_CHOICES),
        "react",
        "Strategy; all runs every one (combinations derived from react and cot-sc).",
    ),
    click.option("--limit", type=click.IntRange(min=1), help="Only the first N questions."),
    shown("--concurrency", click.IntRange(min=1), 1, "Questions in flight at once."),
    click.option(
        "--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True
    ),
    click.option("--ray-address", help="Ray cluster address (default: a local instance)."),
    shown("--samples", click.IntRange(min=1), DEFAULT_SAMPLES, "CoT-SC samples per question."),
    shown(
        "--sc-temperature",
        click.FloatRange(min=0),
        DEFAULT_SC_TEMPERATURE,
        "Sampling temperature of CoT-SC.",
    ),
    click.option(
        "--prompts",
        type=click.Path(file_okay=False, path_type=Path),
        help="The paper's react_prompts/ folder (default: beside --questions, else the "
        "data folder's).",
    ),
    shown(
        "--prompt",
        click.Choice(list(STYLES)),
        DEFAULT_PROMPT,
        "Prompt style: paper is the paper's prompt exactly; shotsN fewer examples; "
        "-reminder closes Act and ReAct with the format and when to finish.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON summary line."),
]


def _options(command: _Command) -> _Command:
    """Eval's own options, then the run settings eval shows (RunConfig's fields with an
    ``eval`` variant), with :data:`EVAL_RUN`'s defaults."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return setting_options("eval", defaults=EVAL_RUN)(command)


@dataclass(frozen=True, kw_only=True)
class _Options:
    """The options of ``tao eval hotpotqa|fever`` as click parsed them: eval's own, and the
    run settings (``settings``, by RunConfig field name, as click parsed them)."""

    data: Path | None
    download: bool
    questions: Path | None
    strategy: str
    limit: int | None
    concurrency: int
    executor: str
    ray_address: str | None
    samples: int
    sc_temperature: float
    prompts: Path | None
    prompt: str
    as_json: bool
    settings: dict[str, object]

    @property
    def corpus(self) -> Path | None:
        return typing.cast(Path | None, self.settings["corpus"])


def _benchmark_command(benchmark: Benchmark, help_text: str) -> None:
    """``tao eval BENCHMARK``: the same options for every benchmark."""

    @eval_group.command(name=benchmark, help=help_text)
    @_options
    def command(**options: Any) -> None:
        settings, own = split_options(options, "eval")
        _run_eval(benchmark, _Options(**own, settings=settings))  # type: ignore[arg-type]


_benchmark_command("hotpotqa", "HotpotQA: exact match and F1 over a local Wikipedia corpus.")
_benchmark_command("fever", "FEVER: SUPPORTS / REFUTES / NOT ENOUGH INFO accuracy.")


def _run_eval(benchmark: Benchmark, options: _Options) -> None:

    from tao.cli.eval_progress import BarProgress
    from tao.eval.summary import combine_summaries, comparison_warnings, summary_table

    if options.download:
        _fetch()
    progress = BarProgress(benchmark)
    try:
        questions, config, header = _prepare(benchmark, options)
        if header:
            progress.progress.console.print(header, markup=False, highlight=False)
        runs = _execute(config, questions, options, progress)
    except KeyboardInterrupt:
        progress.close()
        echo(
            "\ninterrupted: every finished question is saved; run the same command again to resume",
            err=True,
        )
        sys.stdout.flush()
        if options.executor == "ray":
            _stop_ray()
        os._exit(130)  # worker threads may be mid-question; their results are not needed
    except TaoError as error:  # a bad questions file or model spec is a usage error
        progress.close()
        raise cli_error(error) from None
    except (OSError, ValueError) as error:
        progress.close()
        raise click.ClickException(str(error)) from None
    progress.close()
    summaries = [run.summary() for run in runs]
    console(stderr=options.as_json).print(summary_table(summaries))
    for warning in comparison_warnings(summaries):
        echo(f"warning: {warning}", err=True)
    if options.as_json:
        shape = summaries[0] if options.strategy != "all" else combine_summaries(summaries)
        echo_json(json.dumps(shape, ensure_ascii=False))
    else:
        for run in runs:
            echo(f"{run.config.strategy}: {run.results_file}", err=True)


def _prepare(benchmark: Benchmark, options: _Options) -> tuple[list[Question], EvalConfig, str]:
    """The questions, the eval's config and a header line saying which data they are.

    A bad file fails here, not in a worker. Each of questions, corpus and prompts comes
    from its own option if given, else from the data folder (:func:`find_data`).
    """
    from tao.eval.data import load_questions
    from tao.eval.prompts import PromptsError, find_prompts_dir, load_prompts
    from tao.eval.sources import FETCH_HINT, find_data
    from tao.tools.wiki import load_corpus

    source = find_data(options.data)
    questions_file = options.questions or source.questions(benchmark)
    corpus = options.corpus or source.corpus
    everything = load_questions(benchmark, questions_file)
    questions = everything[: options.limit]
    given = [p for p in (options.questions, options.corpus) if p is not None]
    try:
        prompts_dir = options.prompts or find_prompts_dir(*given)
    except PromptsError:  # the paper's prompts are complete in every data folder
        prompts_dir = source.prompts
    load_prompts(prompts_dir, benchmark)
    load_corpus(corpus)
    header = "" if options.questions else source.describe(benchmark, len(everything))
    if (
        source.origin == "sample"
        and not options.questions
        and (options.limit or 0) > len(everything)
    ):
        header += f"\n--limit {options.limit}: the sample has {len(everything)}; {FETCH_HINT}"
    values = config_values(options.settings)
    values["corpus"] = str(corpus.expanduser().resolve())  # the option's, or the data folder's
    values["max_steps"] = values["max_steps"] or DEFAULT_STEPS[benchmark]
    run = EVAL_RUN.replace(**values)  # the agents' settings
    config = EvalConfig(
        benchmark=benchmark,
        strategy=options.strategy if options.strategy != "all" else "react",
        prompts=str(prompts_dir.expanduser().resolve()),
        questions=str(questions_file.expanduser().resolve()),
        samples=options.samples,
        sc_temperature=options.sc_temperature,
        prompt=options.prompt,
        run=run,
    )
    return questions, config, header


def _execute(
    config: EvalConfig, questions: list[Question], options: _Options, progress: BarProgress
) -> list[StrategyRun]:
    """Run the chosen strategy (or all of them), recording every agent run."""
    from tao.cli.live import loading
    from tao.eval.runner import Execution, run_all, run_strategy
    from tao.eval.strategies import answer_question
    from tao.models import load_model

    local = options.executor == "local"
    model = None
    if local:
        with loading(config.model, progress.progress.console):
            model = load_model(config.model, base_url=config.run.base_url)
    execution = Execution(options.executor, options.concurrency, options.ray_address)
    from tao.store.factory import open_store

    store = open_store()
    if options.strategy == "all":
        return run_all(
            config,
            questions,
            store=store,
            answer=answer_question,
            execution=execution,
            progress=progress,
            model=model,
        )
    run = run_strategy(
        config,
        questions,
        store=store,
        answer=answer_question,
        execution=execution,
        progress=progress,
        model=model,
    )
    return [run]


def _stop_ray() -> None:
    """Leave no local Ray instance behind when an eval is interrupted."""
    try:
        import ray

        ray.shutdown()
    except Exception:  # noqa: S110 - best effort on the way out
        pass


@eval_group.command()
def fetch() -> None:
    """Download the full HotpotQA dev set, FEVER paper_dev and the paper's prompts (once).

    Files are checked (sha256, or size and structure) and cached; later evals and the
    wiki tools use them instead of the shipped sample. $TAO_DATA_MIRROR=URL fetches
    every file from URL/NAME instead.
    """
    echo(f"data: {_fetch()}", err=True)


def _fetch() -> Path:
    """Run the download with a progress bar on stderr; a failure is one line, exit 1."""
    from tao.eval.fetch import fetch_all

    try:
        return fetch_all(console(stderr=True))
    except TaoError as error:
        raise cli_error(error) from None
    except OSError as error:
        raise click.ClickException(f"cannot write the download cache: {error}") from None


@eval_group.command()
@click.argument("results", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also draw a PNG bar chart of every strategy against the paper (needs matplotlib).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as one JSON line.")
def report(results: tuple[Path, ...], output: Path | None, as_json: bool) -> None:
    """Summarise results files (default: all of $TAO_HOME/evals); -o FILE charts them too."""

    from tao.eval.report import load_results, write_chart
    from tao.eval.results import evals_dir
    from tao.eval.summary import comparison_warnings, summary_table

    try:
        groups = load_results(list(results) or [evals_dir()])
        console = terminal_console(stderr=as_json)
        for summaries in groups.values():
            console.print(summary_table(list(summaries.values())))
            for warning in comparison_warnings(list(summaries.values())):
                echo(f"warning: {warning}", err=True)
        if output is not None:
            echo(f"chart: {write_chart(groups, output)}", err=True)
    except TaoError as error:
        raise cli_error(error) from None
    except OSError as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        shape = [
            {
                "benchmark": b,
                "model": m,
                "warnings": comparison_warnings(list(s.values())),
                "strategies": s,
            }
            for (b, m), s in groups.items()
        ]
        echo_json(json.dumps(shape, ensure_ascii=False))
