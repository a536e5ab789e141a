"""Spans sent over OTLP/HTTP, with an exit that is bounded and quiet.

The SDK's own exit (``shutdown_on_exit``) waits for the batch processor with a 30 s
limit, and its OTLP exporter retries with back-off for ``OTEL_EXPORTER_OTLP_TIMEOUT``
(10 s), logging each retry as a raw ``Transient error HTTPConnectionPool(...)`` line: with
the collector down, ``tao run`` sat 8.5 s after its answer and printed three of them.

Here a collector that is down costs at most :data:`EXIT_SECONDS` at exit, and the user
sees one line saying what was lost and why::

    tao: OpenTelemetry: could not export 4 spans to http://127.0.0.1:4318/v1/traces:
    connection refused

The exporter's log records are kept (their reason feeds that line) but not printed.
A collector that answers gets every span, as before.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import requests
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

__all__ = ["EXIT_SECONDS", "ExportLedger", "describe", "exporting_provider", "finish"]

#: The most time the export may add to the exit of a process, all retries included.
EXIT_SECONDS = 1.0
#: Where the OTLP exporters log (the HTTP client's retries and the trace exporter).
EXPORTER_LOGGER = "opentelemetry.exporter.otlp"
#: The standard variables that set the exporter's timeout; without them tao uses 1 s.
TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")

_log = logging.getLogger("tao.telemetry")

#: Set, these give the exporter a session of the user's (with credentials); tao keeps out.
SESSION_VARIABLES = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
)

#: Substrings of a failed request's text, and the words the summary uses for them.
_REASONS = (
    ("connection refused", "connection refused"),
    ("name or service not known", "unknown host"),
    ("nodename nor servname", "unknown host"),
    ("temporary failure in name resolution", "unknown host"),
    ("timed out", "timed out"),
    ("timeout", "timed out"),
    ("certificate verify failed", "TLS certificate not trusted"),
    ("network is unreachable", "network unreachable"),
    ("connection reset", "connection reset"),
)


@dataclass
class ExportLedger:
    """How many spans ended and how many reached the collector; the last failure's reason."""

    endpoint: str
    ended: int = 0
    exported: int = 0
    reason: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note(self, reason: str) -> None:
        with self.lock:
            self.reason = reason

    def lost(self) -> int:
        with self.lock:
            return self.ended - self.exported


class _Counting(SpanProcessor):
    """Counts the spans that end (each one the batch processor must export)."""

    def __init__(self, ledger: ExportLedger) -> None:
        self.ledger = ledger

    def on_start(self, span: SdkSpan, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        with self.ledger.lock:
            self.ledger.ended += 1


class _CountingExporter(SpanExporter):
    """The OTLP exporter, counting the spans the collector accepted."""

    def __init__(self, inner: SpanExporter, ledger: ExportLedger) -> None:
        self.inner, self.ledger = inner, ledger

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            with self.ledger.lock:
                self.ledger.exported += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class _WatchedSession(requests.Session):
    """The exporter's HTTP session, noting why a request failed: the exporter itself only
    logs it (and not always: a refused connection can end in "due to timeout")."""

    def __init__(self, ledger: ExportLedger) -> None:
        super().__init__()
        self.ledger = ledger

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException as error:
            self.ledger.note(describe(str(error)))
            raise
        if response.status_code >= 400:
            self.ledger.note(f"HTTP {response.status_code} {response.reason or ''}".strip())
        return response


class _Reasons(logging.Handler):
    """Swallows the exporter's log lines; the first one's reason stands in when no request
    was watched (a session of the user's)."""

    def __init__(self, ledger: ExportLedger) -> None:
        super().__init__(logging.WARNING)
        self.ledger = ledger

    def emit(self, record: logging.LogRecord) -> None:
        with self.ledger.lock:
            if not self.ledger.reason:
                self.ledger.reason = describe(record.getMessage())


def describe(text: str) -> str:
    """A few words for why a request failed, from its error's text: the summary wants
    "connection refused", not urllib3's ``HTTPConnectionPool(host=...)`` nest."""
    lowered = text.lower()
    for needle, words in _REASONS:
        if needle in lowered:
            return words
    first = text.strip().splitlines()[0] if text.strip() else "unknown error"
    return first if len(first) <= 120 else first[:119] + "…"


def exporting_provider() -> SdkTracerProvider:
    """A provider batching spans to the OTLP/HTTP endpoint the ``OTEL_*`` variables name,
    flushed at exit within :data:`EXIT_SECONDS`, with one summary line if spans are lost."""
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "tao"}))
    user_timeout = any(os.environ.get(name, "").strip() for name in TIMEOUT_VARIABLES)
    ledger = ExportLedger(endpoint="the collector")
    own_session = any(os.environ.get(name, "").strip() for name in SESSION_VARIABLES)
    otlp = OTLPSpanExporter(
        timeout=None if user_timeout else EXIT_SECONDS,
        session=None if own_session else _WatchedSession(ledger),
    )
    ledger.endpoint = str(getattr(otlp, "_endpoint", "")) or ledger.endpoint
    quiet = logging.getLogger(EXPORTER_LOGGER)
    quiet.addHandler(_Reasons(ledger))
    quiet.propagate = False  # the summary at exit says it once, in words
    provider = SdkTracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(_Counting(ledger))
    provider.add_span_processor(BatchSpanProcessor(_CountingExporter(otlp, ledger)))
    atexit.register(finish, provider, ledger)
    return provider


def finish(
    provider: SdkTracerProvider, ledger: ExportLedger, seconds: float = EXIT_SECONDS
) -> None:
    """Flush and shut ``provider`` down, waiting at most ``seconds``; then say what was lost.

    The shutdown runs in a daemon thread: if the collector does not answer in time the
    process exits anyway and the thread goes with it.
    """
    closing = threading.Thread(target=provider.shutdown, name="tao-otel-exit", daemon=True)
    closing.start()
    closing.join(seconds)
    lost = ledger.lost()
    if lost <= 0:
        return
    with ledger.lock:
        reason = ledger.reason or f"no answer within {seconds:g} s"
    _log.warning(
        "tao: OpenTelemetry: could not export %d span%s to %s: %s",
        lost,
        "" if lost == 1 else "s",
        ledger.endpoint,
        reason,
    )
