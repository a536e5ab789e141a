"""A real OTLP/HTTP trace receiver on 127.0.0.1, as Jaeger, Phoenix or a collector run one.

It accepts ``POST /v1/traces`` with a protobuf ``ExportTraceServiceRequest`` (gzip or not),
decodes it with opentelemetry-proto and keeps every span, flattened for assertions:

    with OtlpReceiver() as receiver:
        run tao with OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint
        receiver.wait_for("invoke_agent tao")
        receiver.spans[0].name, .attributes, .parent_id, .status_code
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

__all__ = ["OtlpReceiver", "ReceivedSpan"]


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    #: ``""`` for a root span.
    parent_id: str
    kind: str
    attributes: dict[str, Any]
    #: ``"UNSET"``, ``"OK"`` or ``"ERROR"``.
    status_code: str
    status_message: str
    #: The resource's attributes (service.name…).
    resource: dict[str, Any]
    start_ns: int
    end_ns: int


@dataclass
class OtlpReceiver:
    """A threaded HTTP server; ``spans`` grows as exports arrive."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    #: (path, content-type) of every POST, in order.
    posts: list[tuple[str, str]] = field(default_factory=list)
    endpoint: str = ""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver._receive(self.path, self.headers.get("Content-Type", ""), body)
                status = 200 if self.path == "/v1/traces" else 404
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _receive(self, path: str, content_type: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                spans.extend(_span(span, resource) for span in scope_spans.spans)
        with self._lock:
            self.posts.append((path, content_type))
            self.spans.extend(spans)

    def __enter__(self) -> OtlpReceiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, name: str, timeout_s: float = 10.0) -> list[ReceivedSpan]:
        """Every span received, once one named ``name`` is among them."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if any(span.name == name for span in self.spans):
                    return list(self.spans)
            time.sleep(0.02)
        raise AssertionError(f"no span {name!r} within {timeout_s} s; got {self.named()}")

    def named(self) -> list[str]:
        with self._lock:
            return [span.name for span in self.spans]


def _span(span: Span, resource: dict[str, Any]) -> ReceivedSpan:
    return ReceivedSpan(
        name=span.name,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex(),
        kind=Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
        attributes=_attributes(span.attributes),
        status_code=Status.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_"),
        status_message=span.status.message,
        resource=resource,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
    )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which) if which else None
