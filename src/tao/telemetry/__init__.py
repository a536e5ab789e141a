"""Spans for every run, step, model call and tool call, when someone collects them.

OpenTelemetry is optional (``pip install 'tao[otel]'``) and off by default. It turns on
when the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
is set, and spans go there over OTLP/HTTP; or when the program running tao has already set
a global ``TracerProvider``, which is then used as it is:

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 tao run "What is 2+2?" -t calc

    agent = Agent("openai:gpt-4o-mini", ["calc"])
    agent.telemetry = OpenTelemetry(my_tracer_provider)   # tao.telemetry.otel

This module never imports OpenTelemetry itself: with nothing configured, ``import tao``
and every run stay as cheap as before (the driver checks one ``None`` per step). The spans
are made in :mod:`tao.telemetry.otel`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tao.models.base import Model
    from tao.run.act import Outcome
    from tao.run.exchange import RunTools
    from tao.state.result import RunResult, Step

#: Where OTLP exporters send spans; either one turns the export on (OpenTelemetry's names).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
#: One tool call, as the driver runs it.
Job = Callable[[], "Outcome"]

_log = logging.getLogger("tao.telemetry")
_warned = False


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

    def tools(self, request: RunTools, jobs: list[Job]) -> list[Job]:
        """``jobs`` (one per call of ``request``), each of which is a span."""
        ...

    def abandon(self, error: BaseException) -> None:
        """The run stopped on ``error`` (its run log failed): end its spans with it."""
        ...


class Telemetry(Protocol):
    """Where an agent's runs send their spans; :meth:`start` is called once per run."""

    def start(self) -> RunTracing: ...


def from_environment() -> Telemetry | None:
    """The telemetry the environment asks for; ``None`` (and nothing imported) when none.

    Used by every :class:`tao.Agent` when it is made. The export stays off under
    ``OTEL_SDK_DISABLED=true``. Asked for but not installed: one warning, and runs go on.
    """
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    asked = any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)
    if not asked and not global_provider_set():
        return None
    try:
        from tao.telemetry.otel import OpenTelemetry

        return OpenTelemetry.from_environment()
    except ImportError as error:
        _warn_missing(error)
        return None


def global_provider_set() -> bool:
    """Whether the program already set an OpenTelemetry provider (without importing it)."""
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        return False
    provider = api.get_tracer_provider()
    return not isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider)


def _warn_missing(error: ImportError) -> None:
    global _warned
    if not _warned:
        _warned = True
        set_ = [n for n in ENDPOINT_VARIABLES if os.environ.get(n, "").strip()]
        name = set_[0] if set_ else "an OpenTelemetry provider"
        _log.warning(
            "tao: %s is set, but OpenTelemetry is not installed (%s); no spans are "
            "exported. Install it with: pip install 'tao[otel]'",
            name,
            error.name or error,
        )
