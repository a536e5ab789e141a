"""The terminal's live activity: a status line while a run goes, and while its model loads.

A run at the terminal should never look frozen. Under the steps already printed,
one transient region shows the model's text as it streams and a status line:

    ⠹ step 2 · 14.2s · 1,873 tokens · running tool calculator
    ⠼ step 2 · 5m 36s · 261 tokens · writing

It is drawn only on a terminal: on stdout when that is one, else on stderr when
that is one (``tao run … | tee log`` still shows it), else nowhere, so piped and
``--json`` output stay exactly as they were. The elapsed time is computed when the
region is drawn (a few times a second), so it moves while the model thinks.

    console = Console(highlight=False)
    with loading("local", status_console(console)):
        agent = Agent("local", ["calc"])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from tao.cli.terminal import console as safe_console
from tao.events import (
    ActionEvent,
    AnswerEvent,
    ApprovalEvent,
    Event,
    ObservationEvent,
    TextDelta,
)
from tao.format import terminal_safe
from tao.redact.scan import redact

if TYPE_CHECKING:
    from tao.state.result import RunResult, Step

__all__ = ["RunStatus", "live_region", "loading", "status_console"]

#: Streamed text shown at most this many lines (its tail); the step rendering follows.
STREAM_LINES = 12
_P = ParamSpec("_P")
_R = TypeVar("_R")


def status_console(stdout: Console) -> Console | None:
    """Where the live display goes: stdout if it is a terminal, else stderr if it is one."""
    if stdout.is_terminal and not stdout.is_dumb_terminal:
        return stdout
    stderr = safe_console(stderr=True)
    return stderr if stderr.is_terminal and not stderr.is_dumb_terminal else None


def live_region(console: Console, renderable: RenderableType) -> Live:
    """A transient region redrawn 8 times a second; stdout and stderr are left alone, so
    output printed to stdout while the region is on stderr still goes to stdout."""
    return Live(
        renderable,
        console=console,
        transient=True,
        refresh_per_second=8,
        redirect_stdout=False,
        redirect_stderr=False,
    )


def clock(seconds: float) -> str:
    """``12.3s`` under a minute, then ``4m 06s``: a time that visibly moves."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    return f"{whole // 60}m {whole % 60:02d}s"


class _Loading:
    """``⠋ loading model local… 3.2s``, the time computed when drawn."""

    def __init__(self, name: str) -> None:
        self.name = f" {name}" if name else ""
        self.started = time.monotonic()
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> RenderableType:
        elapsed = time.monotonic() - self.started
        self.spinner.update(text=Text(f"loading model{self.name}… {clock(elapsed)}", style="dim"))
        return self.spinner


@contextmanager
def loading(name: str, console: Console | None = None, *, quiet: bool = False) -> Iterator[None]:
    """Show that the model is loading while the block runs (the embedded GGUF takes seconds);
    afterwards one dim line says how long it took, if that was noticeable.

    It goes to ``console`` (default stdout) if that is a terminal, else to stderr if that is
    one; ``quiet`` shows nothing (``--json``).
    """
    console = None if quiet else status_console(console or safe_console())
    if console is None:
        yield
        return
    shown = _Loading(terminal_safe(name))
    with live_region(console, shown):
        yield
    took = time.monotonic() - shown.started
    if took >= 1.0:
        console.print(Text(f"loaded model{shown.name} in {clock(took)}", style="dim"))


class RunStatus:
    """What a run is doing now, for the status line; fed the run's events in order.

    Also a :class:`~tao.state.result.RunObserver`: ``on_start`` hands it the live result, whose
    usage gives the tokens of the steps done (a resumed run starts at its next step).
    """

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.result: RunResult | None = None
        self.step = 1
        self.activity = "waiting for model"
        #: The current reply's text so far; cleared when its step is shown.
        self.streamed = ""
        #: Streamed chunks of the current reply (about one token each) not yet in the usage.
        self.chunks = 0
        self.spinner = Spinner("dots", style="cyan")

    def on_start(self, result: RunResult) -> None:
        self.result = result
        if result.steps:
            self.step = result.steps[-1].index + 1

    def on_step(self, result: RunResult, step: Step) -> None:
        pass

    def on_finish(self, result: RunResult) -> None:
        pass

    def see(self, event: Event) -> None:
        """Move on with ``event``: text streams, a tool runs, a step is done."""
        if isinstance(event, TextDelta):
            self.step, self.activity = event.step, "writing"
            self.streamed += terminal_safe(event.text)
            self.chunks += 1
        elif isinstance(event, ActionEvent):
            self.step, self.activity = event.step, f"running tool {terminal_safe(event.tool)}"
        elif isinstance(event, ApprovalEvent):
            self.activity = "waiting for your approval"
        elif isinstance(event, AnswerEvent):
            self.streamed, self.chunks, self.activity = "", 0, "finishing"
        elif isinstance(event, ObservationEvent):
            self.streamed, self.chunks = "", 0
            self.step, self.activity = event.step.index + 1, "waiting for model"

    @property
    def tokens(self) -> int:
        """Tokens of the steps done, plus the chunks streamed since (about one token each)."""
        usage = self.result.usage if self.result is not None else None
        done = usage.input_tokens + usage.output_tokens if usage is not None else 0
        return done + self.chunks

    def line(self) -> str:
        """``step 2 · 14.2s · 1,873 tokens · running tool calculator``."""
        elapsed = clock(time.monotonic() - self.started)
        return f"step {self.step} · {elapsed} · {self.tokens:,} tokens · {self.activity}"

    def __rich__(self) -> RenderableType:
        self.spinner.update(text=Text(self.line(), style="dim"))
        if not self.streamed:
            return self.spinner
        tail = "\n".join(redact(self.streamed).splitlines()[-STREAM_LINES:])
        return Group(Text(tail, style="dim italic"), self.spinner)


def paused(live: Live, call: Callable[_P, _R]) -> Callable[_P, _R]:
    """``call`` with the live region taken down while it runs (a prompt for a person)."""

    def without_live(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        live.stop()
        try:
            return call(*args, **kwargs)
        finally:
            live.start(refresh=True)

    return without_live
