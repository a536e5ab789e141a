"""``tao eval report``: results files → summary tables and a PNG bar chart against the paper.

    groups = load_results([Path("~/.local/share/tao/evals")])
    write_chart(groups, Path("chart.png"))

Records are grouped by benchmark and model; a strategy found in several results
files (different settings) is taken from the file with the most questions (the newest, on a tie).
matplotlib is an optional extra (``pip install 'tao[eval-report]'``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tao.errors import ConfigError
from tao.eval.config import ALL_ORDER
from tao.eval.record import QuestionRecord
from tao.eval.results import ResultsFile
from tao.eval.summary import PAPER, PAPER_MODEL, StrategySummary, score, score_name, summarize

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: (benchmark, model) → strategy → summary
Groups = dict[tuple[str, str], dict[str, StrategySummary]]


class ReportError(ConfigError):
    """No results to report, or matplotlib is missing."""


def _files(paths: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(path.glob("*.jsonl")))
        elif path.is_file():
            found.append(path)
        else:
            raise ReportError(f"no results file or folder at {path}")
    return found


def load_results(paths: Sequence[Path]) -> Groups:
    """Summaries per benchmark and model from results files (or folders of them)."""
    best: dict[tuple[str, str, str], list[QuestionRecord]] = {}
    for path in sorted(_files(paths), key=lambda p: p.stat().st_mtime):  # the newest wins ties
        by_key: dict[tuple[str, str, str], list[QuestionRecord]] = defaultdict(list)
        for record in ResultsFile(path).read():
            by_key[(record.benchmark, record.model, record.strategy)].append(record)
        for key, records in by_key.items():
            if len(records) >= len(best.get(key, [])):
                best[key] = records
    if not best:
        raise ReportError("no results found: run `tao eval ...` first, or name its results file")
    groups: defaultdict[tuple[str, str], dict[str, StrategySummary]] = defaultdict(dict)
    for (benchmark, model, strategy), records in best.items():
        groups[(benchmark, model)][strategy] = summarize(records, benchmark, strategy, model)
    return {
        key: {s: groups[key][s] for s in ALL_ORDER if s in groups[key]} for key in sorted(groups)
    }


def write_chart(groups: Groups, output: Path) -> Path:
    """One panel per benchmark and model: the model's score per strategy beside the paper's."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ReportError(
            "the chart needs matplotlib: pip install 'tao[eval-report]' (or pip install matplotlib)"
        ) from None
    panels = list(groups.items())
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(9, 3.6 * len(panels)), squeeze=False, constrained_layout=True
    )
    for ax, ((benchmark, model), summaries) in zip(axes[:, 0], panels, strict=True):
        draw_panel(ax, benchmark, model, summaries)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=120)
    plt.close(fig)
    return output


#: Fewer questions than this and a difference of a few points is likely noise.
SMALL_SAMPLE = 30
SMALL_SAMPLE_WARNING = f"small sample (n < {SMALL_SAMPLE}): differences may be noise"


def draw_panel(ax: Axes, benchmark: str, model: str, summaries: dict[str, StrategySummary]) -> None:
    """One benchmark and model: each strategy's score beside the paper's, every bar labelled
    with its value (``n/a`` where the paper has none), and a warning when a strategy was
    scored on fewer than :data:`SMALL_SAMPLE` questions."""
    metric = score_name(benchmark)
    names = list(summaries)
    ours = [100 * score(summaries[n], benchmark) for n in names]
    known = PAPER.get(benchmark, {})
    paper = [known.get(n, 0.0) for n in names]
    xs = range(len(names))
    width = 0.38
    bars = ax.bar([x - width / 2 for x in xs], ours, width, label=model, color="#3b7dd8")
    theirs = ax.bar([x + width / 2 for x in xs], paper, width, label=PAPER_MODEL, color="#bbbbbb")
    ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.bar_label(theirs, labels=[f"{known[n]:.1f}" if n in known else "n/a" for n in names],
                 fontsize=8, color="#555555")  # fmt: skip
    ax.set_xticks(list(xs), [f"{name}\nn={summaries[name]['n']}" for name in names])
    ax.set_ylabel("accuracy %" if metric == "accuracy" else "exact match %")
    ax.set_title(f"{benchmark}: {model} vs {PAPER_MODEL} (paper)")
    ax.set_ylim(0, 110)  # room for the labels above a bar at 100
    ax.legend(loc="upper left", fontsize=8)
    if any(summaries[n]["n"] < SMALL_SAMPLE for n in names):
        ax.text(0.99, 0.97, SMALL_SAMPLE_WARNING, transform=ax.transAxes, ha="right", va="top",
                fontsize=9, color="#b35900", fontweight="bold")  # fmt: skip
