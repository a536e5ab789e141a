"""``tao eval`` at a terminal (issue 15): the question in flight and its step under the bar,
and an ETA as soon as one question is done, however slow the model is (rich's own
estimate forgot samples older than 30 s and showed ``-:--:--`` for 20 minutes)."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from tests.eval.conftest import Ask, EvalData, OracleServer, scripted
from tests.fakes.terminal import Terminal, terminal_env

from tao.cli.eval_progress import BarProgress, eta_seconds, format_eta
from tao.eval.record import QuestionRecord

Oracle = Callable[..., OracleServer]
ETA = re.compile(r"ETA (\d+:\d\d:\d\d|…)")


def test_eta_is_the_pace_so_far_times_what_is_left() -> None:
    assert eta_seconds(120.0, 0, 10) is None
    assert eta_seconds(120.0, 2, 10) == 600.0
    assert format_eta(None) == "…"
    assert format_eta(634.4) == "0:10:34"
    assert format_eta(3 * 3600 + 5) == "3:00:05"


def test_questions_resumed_from_an_earlier_session_do_not_make_the_eta() -> None:
    progress = BarProgress("hotpotqa", Console(file=io.StringIO()))
    progress.start("react", total=10, done=6)  # 6 done by an earlier session, in no time
    task = progress.progress.tasks[0]
    assert progress.eta(task) is None  # nothing done in this session yet: no guess
    progress.started -= 100.0  # one question took 100 s
    record = QuestionRecord(6, "q6", "?", "a", "a", 1.0, 1.0, "react", "hotpotqa", "replay:x")
    progress.advance(record)
    eta = progress.eta(progress.progress.tasks[0])
    assert eta is not None and 290 <= eta <= 310  # 3 left at 100 s each
    progress.close()


def test_the_bar_shows_the_question_in_flight_its_step_and_an_eta_after_the_first(
    eval_data: EvalData, oracle: Oracle, tao_home: Path
) -> None:
    gates = {"Were Scott": threading.Event(), "Who was Milhouse": threading.Event()}

    def slow(ask: Ask) -> str:
        for start, gate in gates.items():
            if ask.question.startswith(start) and ask.step == 2:
                gate.wait(30)
        return scripted(ask)

    server = oracle(slow)
    args = [
        sys.executable, "-m", "tao", "eval", "hotpotqa", "--questions", str(eval_data.questions),
        "--corpus", str(eval_data.corpus), "--model", "openai:oracle", "--base-url",
        server.base_url, "--strategy", "react", "--limit", "2",
    ]  # fmt: skip
    env = terminal_env({**os.environ, "TAO_HOME": str(tao_home), "OPENAI_API_KEY": "sk-test"})
    try:
        with Terminal(args, env=env, columns=120) as term:
            first = term.wait_for(lambda s: "step 2 · Were Scott Derrickson" in s)
            assert "0/2" in first and ETA.search(first).group(1) == "…"  # type: ignore[union-attr]
            gates["Were Scott"].set()
            second = term.wait_for(lambda s: "step 2 · Who was Milhouse named after?" in s)
            assert "1/2" in second and "Were Scott" not in second
            eta = ETA.search(second)
            assert eta is not None and eta.group(1) != "…", second
            gates["Who was Milhouse"].set()
            assert term.finish() == 0
            final = term.screen_text()
    finally:
        for gate in gates.values():
            gate.set()
    assert "2/2" in final and "step 2 ·" not in final
