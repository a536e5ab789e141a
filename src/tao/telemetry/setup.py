"""Turning telemetry on from the environment, the way OpenTelemetry's own variables say.

Kept apart from :mod:`tao.telemetry.hooks` because it is the one place that may import the
OpenTelemetry implementation (:mod:`tao.telemetry.otel`), and only when asked for.
"""

from __future__ import annotations

import logging
import os

from tao.telemetry.hooks import Telemetry, global_provider_set

#: Where OTLP exporters send spans; either one turns the export on (OpenTelemetry's names).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

_log = logging.getLogger("tao.telemetry")
_warned = False


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
