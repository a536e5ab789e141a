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


def test_report_without_results_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no results found"):
        load_results([tmp_path])
    with pytest.raises(ReportError, match="no results file or folder"):
        load_results([tmp_path / "missing.jsonl"])


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
