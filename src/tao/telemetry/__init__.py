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

from tao.telemetry.hooks import Job, RunTracing, Telemetry, global_provider_set
from tao.telemetry.setup import ENDPOINT_VARIABLES, from_environment

__all__ = [
    "ENDPOINT_VARIABLES",
    "Job",
    "RunTracing",
    "Telemetry",
    "from_environment",
    "global_provider_set",
]
