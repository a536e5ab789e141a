"""A real HTTP server on 127.0.0.1 that replays a provider's recorded wire format.

Tests script what it answers (JSON bodies, error statuses, SSE streams) and read
back what the SDK really sent: path, headers and JSON body of every request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Sent:
    """One request as it arrived."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class WireServer:
    base_url: str
    script: list[tuple[int, dict[str, str], list[bytes]]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    def json(self, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Answer the next request with a JSON body."""
        data = json.dumps(body).encode()
        self.script.append(
            (status, {"Content-Type": "application/json", **(headers or {})}, [data])
        )

    def sse(self, events: list[str]) -> None:
        """Answer the next request with a server-sent event stream, one write per event."""
        chunks = [event.encode() for event in events]
        self.script.append((200, {"Content-Type": "text/event-stream"}, chunks))

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [s.body for s in self.sent]


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer("")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            with lock:
                server.sent.append(Sent(self.path, headers, body))
                status, reply_headers, chunks = (
                    server.script.pop(0)
                    if server.script
                    else (500, {}, [b'{"error": {"message": "no scripted reply left"}}'])
                )
            self.send_response(status)
            for name, value in reply_headers.items():
                self.send_header(name, value)
            if len(chunks) == 1:
                self.send_header("Content-Length", str(len(chunks[0])))
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's real keys or proxies never leak into these tests."""
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
    ):
        monkeypatch.delenv(name, raising=False)
