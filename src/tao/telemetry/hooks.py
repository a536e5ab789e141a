"""What the engine calls while a run happens, so that someone may collect spans of it.

The driver holds a :class:`RunTracing` when telemetry is on and ``None`` otherwise (one
``None`` check per step). These are shapes only: this module imports no OpenTelemetry and
nothing of the engine, so the engine can depend on it and :mod:`tao.telemetry.otel` can
implement it without either climbing back.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tao.models.base import Model
    from tao.state.calls import Outcome, Ready
    from tao.state.result import RunResult, Step

#: One tool call, as the driver runs it.
Job = Callable[[], "Outcome"]


class RunTracing(Protocol):
    """One run's spans. A run observer, plus what only the driver sees: each request of the
    loop (a new step begins), the model it calls, the tool calls it runs."""

    def on_start(self, result: RunResult) -> None: ...

    def on_step(self, result: RunResult, step: Step) -> None: ...

    def on_finish(self, result: RunResult) -> None: ...

    def turn(self, step: int) -> None:
        """The loop asks for something for step ``step`` (a model reply, approval, tools)."""
        ...

    def model(self, model: Model) -> Model:
        """``model``, each of whose calls is a span."""
        ...

    def tools(self, step: int, calls: Sequence[Ready], jobs: list[Job]) -> list[Job]:
        """``jobs`` (one per call of step ``step``, in order), each of which is a span."""
        ...

    def abandon(self, error: BaseException) -> None:
        """The run stopped on ``error`` (its run log failed): end its spans with it."""
        ...


class Telemetry(Protocol):
    """Where an agent's runs send their spans; :meth:`start` is called once per run."""

    def start(self) -> RunTracing: ...


def global_provider_set() -> bool:
    """Whether the program already set an OpenTelemetry provider (without importing it)."""
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        return False
    provider = api.get_tracer_provider()
    return not isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider)
