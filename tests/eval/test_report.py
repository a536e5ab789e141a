"""`tao eval report`: results files → tables and a PNG bar chart against the paper."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tao.eval.record import QuestionRecord
from tao.eval.report import ReportError, load_results
from tao.eval.results import ResultsFile

from ..conftest import CliResult

pytest.importorskip("matplotlib", reason="the chart needs the eval-report extra")


def _write(folder: Path, strategy: str, ems: list[float], benchmark: str = "hotpotqa") -> Path:
    results = ResultsFile(folder / f"{benchmark}-{strategy}.jsonl")
    for i, em in enumerate(ems):
        results.append(
            QuestionRecord(
                i, f"q{i}", "Q?", "A", "A" if em else "B", em, em, strategy, benchmark, "m"
            )
        )
    return results.path


def test_report_writes_a_png_and_json(tmp_path: Path, tao_cli: Callable[..., CliResult]) -> None:
    folder = tmp_path / "evals"
    folder.mkdir()
    _write(folder, "react", [1.0, 0.0, 1.0, 1.0])
    _write(folder, "cot", [0.0, 0.0, 1.0, 0.0])
    _write(folder, "react", [1.0, 1.0], benchmark="fever")
    chart = tmp_path / "out" / "chart.png"
    result = tao_cli("eval", "report", str(folder), "-o", str(chart), "--json")
    assert result.returncode == 0, result.stderr
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    groups = json.loads(result.stdout.strip().splitlines()[-1])
    fever, hotpot = groups
    assert hotpot["benchmark"] == "hotpotqa" and list(hotpot["strategies"]) == ["cot", "react"]
    assert hotpot["strategies"]["react"]["em"] == 0.75
    assert fever["strategies"]["react"]["accuracy"] == 1.0


def test_report_writes_no_file_unless_asked(
    tmp_path: Path, tao_cli: Callable[..., CliResult]
) -> None:
    """A summary is read, not made: without ``-o`` nothing lands in the working directory."""
    folder, work = tmp_path / "evals", tmp_path / "work"
    folder.mkdir()
    work.mkdir()
    _write(folder, "react", [1.0, 0.0])
    result = tao_cli("eval", "report", str(folder), "--json", cwd=work)
    assert result.returncode == 0, result.stderr
    assert list(work.iterdir()) == [] and "chart:" not in result.stderr
    (group,) = json.loads(result.stdout.strip().splitlines()[-1])
    assert group["strategies"]["react"]["em"] == 0.5 and "react" in result.stderr


def test_report_without_results_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no results found"):
        load_results([tmp_path])
    with pytest.raises(ReportError, match="no results file or folder"):
        load_results([tmp_path / "missing.jsonl"])


def _texts(ax: object) -> list[str]:
    return [text.get_text() for text in ax.texts]  # type: ignore[attr-defined]


def test_chart_bars_carry_their_values_and_a_small_sample_warns(tmp_path: Path) -> None:
    """Every bar is labelled with its score (the paper's too, n/a where it has none), and a
    panel scored on fewer than 30 questions says its differences may be noise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tao.eval.report import SMALL_SAMPLE_WARNING, draw_panel
    from tao.eval.summary import PAPER

    small, large = tmp_path / "small", tmp_path / "large"
    for folder, count in ((small, 4), (large, 40)):
        folder.mkdir()
        _write(folder, "react", [1.0, 0.0, 1.0, 1.0] * (count // 4))
    for folder, warned in ((small, True), (large, False)):
        ((key, summaries),) = load_results([folder]).items()
        fig, ax = plt.subplots()
        draw_panel(ax, *key, summaries)
        texts = _texts(ax)
        plt.close(fig)
        paper = f"{PAPER['hotpotqa']['react']:.1f}"
        assert texts[:2] == ["75.0", paper], texts  # ours, then the paper's
        assert (SMALL_SAMPLE_WARNING in texts) is warned
    assert SMALL_SAMPLE_WARNING == "small sample (n < 30): differences may be noise"


def test_the_table_shows_what_each_strategy_cost(
    tmp_path: Path, tao_cli: Callable[..., CliResult]
) -> None:
    """Issue 15: a cost column, summed over the questions; unknown if one question's is."""
    folder = tmp_path / "evals"
    folder.mkdir()
    for strategy, costs in (("react", [0.0125, 0.0250]), ("cot", [0.01, None])):
        results = ResultsFile(folder / f"hotpotqa-{strategy}.jsonl")
        for i, cost in enumerate(costs):
            record = QuestionRecord(i, f"q{i}", "Q?", "A", "A", 1.0, 1.0, strategy, "hotpotqa", "m")
            record.cost_usd = cost
            results.append(record)
    out = tao_cli("eval", "report", str(folder), "-o", str(tmp_path / "c.png"), "--json")
    assert out.returncode == 0, out.stderr
    table = out.stderr  # with --json the table goes to standard error
    assert "cost" in table
    rows = {line.split()[0]: line for line in table.splitlines() if line.split()}
    assert rows["react"].rstrip().endswith("$0.0375")
    assert rows["cot"].rstrip().endswith("unknown")
    (group,) = json.loads(out.stdout.strip().splitlines()[-1])
    assert group["strategies"]["react"]["cost_usd"] == pytest.approx(0.0375)
    assert group["strategies"]["cot"]["cost_usd"] is None


def test_report_gives_seeded_95_intervals_and_flags_a_small_sample(
    tmp_path: Path, tao_cli: Callable[..., CliResult]
) -> None:
    folder = tmp_path / "evals"
    folder.mkdir()
    _write(folder, "react", [1.0, 0.0, 1.0, 1.0])
    _write(folder, "cot", [0.0, 0.0, 1.0, 0.0])
    result = tao_cli("eval", "report", str(folder), "-o", str(tmp_path / "c.png"), "--json")
    assert result.returncode == 0, result.stderr
    (hotpot,) = json.loads(result.stdout.strip().splitlines()[-1])
    react = hotpot["strategies"]["react"]
    assert react["em_ci"][0] < react["em"] < react["em_ci"][1] <= 1.0
    assert react["em_ci"] == react["f1_ci"]  # same scores, same seed, same interval
    assert any("n=4 < 30" in w for w in hotpot["warnings"])
    assert any("react, overlaps cot" in w for w in hotpot["warnings"])
    assert "warning: n=4 < 30: too few questions to compare strategies" in result.stderr
    assert "95% CI" in result.stderr
