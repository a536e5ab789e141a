"""``tao eval``'s progress on stderr: the bar, the running score, an ETA, and what is running.

    hotpotqa react ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 3/20 EM 33.3% 0:01:52 ETA 0:10:34
      step 2 · Who was Milhouse named after?

The ETA is this session's time per finished question times the questions left, so
it is there as soon as one question is done, however long a question takes (rich's
own estimate forgets everything older than 30 s and showed ``-:--:--`` for a slow
model). Questions resumed from an earlier session do not count towards it. Below the
bar, each question in flight with its step: the bar is an observer of every run.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from tao.cli.terminal import console as safe_console
from tao.format import terminal_safe

if TYPE_CHECKING:
    from rich.progress import TaskID

    from tao.eval.record import QuestionRecord
    from tao.state.result import RunResult, Step

__all__ = ["BarProgress", "eta_seconds", "format_eta"]

#: Questions in flight shown under the bar at most (``--concurrency`` may be high).
SHOWN_RUNS = 4
#: A question's text is cut to this many characters.
QUESTION_CHARS = 70


def eta_seconds(elapsed_s: float, done: int, left: int) -> float | None:
    """Seconds until ``left`` more questions are done at the pace of the ``done`` so far."""
    if done <= 0:
        return None
    return elapsed_s / done * left


def format_eta(seconds: float | None) -> str:
    """``0:10:34``; ``…`` before the first question is done."""
    if seconds is None:
        return "…"
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class _EtaColumn(ProgressColumn):
    """``ETA 0:10:34``, counting down between questions."""

    def __init__(self, owner: BarProgress) -> None:
        super().__init__()
        self.owner = owner

    def render(self, task: Task) -> Text:
        return Text(f"ETA {format_eta(self.owner.eta(task))}", style="cyan")


class _ActivityProgress(Progress):
    """A Progress that also shows the questions in flight under its bars."""

    activity: BarProgress | None = None

    def get_renderable(self) -> RenderableType:
        table = self.make_tasks_table(self.tasks)
        lines = self.activity.lines() if self.activity is not None else []
        return Group(table, *lines) if lines else table


class BarProgress:
    """A rich progress bar on stderr: questions done, score, elapsed, ETA, runs in flight.

    Also a :class:`tao.state.result.RunObserver` of every agent run of the eval (runs happen on
    worker threads, so what it keeps is guarded by a lock).
    """

    def __init__(self, benchmark: str, console: Console | None = None) -> None:
        self.metric = "acc" if benchmark == "fever" else "EM"
        self.progress = _ActivityProgress(
            TextColumn("[bold]{task.description:<13}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[score]}"),
            TimeElapsedColumn(),
            _EtaColumn(self),
            console=console or safe_console(stderr=True),
        )
        self.progress.activity = self
        self.task: TaskID | None = None
        self.scores: list[float] = []
        #: When this strategy started in this session, and how many it has finished since.
        self.started = time.monotonic()
        self.finished = 0
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[str, int]] = {}

    def start(self, strategy: str, total: int, done: int) -> None:
        if self.task is None:
            self.progress.start()
        self.scores, self.started, self.finished = [], time.monotonic(), 0
        self.task = self.progress.add_task(strategy, total=total, completed=done, score="")

    def advance(self, record: QuestionRecord) -> None:
        self.scores.append(record.em)
        self.finished += 1
        score = f"{self.metric} {100 * sum(self.scores) / len(self.scores):.1f}%"
        if self.task is not None:
            self.progress.update(self.task, advance=1, score=score)

    def eta(self, task: Task) -> float | None:
        """Seconds left for ``task``; ``None`` until a question is done in this session."""
        if task.finished:
            return 0.0
        if task.id != self.task:
            return None
        left = int((task.total or 0) - task.completed)
        return eta_seconds(time.monotonic() - self.started, self.finished, left)

    def lines(self) -> list[Text]:
        """``  step 2 · Who was Milhouse named after?`` per run in flight."""
        with self._lock:
            runs = list(self._runs.values())
        shown = []
        for question, step in runs[:SHOWN_RUNS]:
            cut = question if len(question) <= QUESTION_CHARS else question[: QUESTION_CHARS - 1]
            more = "…" if cut != question else ""
            shown.append(Text.assemble((f"  step {step} · ", "dim"), cut + more))
        if len(runs) > SHOWN_RUNS:
            shown.append(Text(f"  and {len(runs) - SHOWN_RUNS} more", style="dim"))
        return shown

    # -- RunObserver: every agent run of the eval ------------------------------------------

    def on_start(self, result: RunResult) -> None:
        question = " ".join(terminal_safe(result.task).split())
        with self._lock:
            self._runs[result.run_id] = (question, len(result.steps) + 1)

    def on_step(self, result: RunResult, step: Step) -> None:
        with self._lock:
            if result.run_id in self._runs:
                self._runs[result.run_id] = (self._runs[result.run_id][0], step.index + 1)

    def on_finish(self, result: RunResult) -> None:
        with self._lock:
            self._runs.pop(result.run_id, None)

    def stop(self) -> None:
        self.progress.refresh()

    def close(self) -> None:
        if self.task is not None:
            self.progress.stop()
