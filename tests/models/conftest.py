"""The provider tests' one wire-replay fixture: a real HTTP server on 127.0.0.1.

Tests script what it answers with payloads recorded from the real APIs (JSON
bodies, error statuses, SSE streams) and read back what the SDK really sent:
path, headers and JSON body of every request. Built on :mod:`tests.fakes.http`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from tests.fakes.http import FakeServer, Reply, Request

#: What a server answers once the script is used up.
NO_REPLY_LEFT = Reply.json({"error": {"message": "no scripted reply left"}}, 500)


class WireServer:
    """Answers requests with the scripted replies, in order; keeps what arrived."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self._lock = threading.Lock()
        self.server = FakeServer(self._next)
        self.base_url = self.server.base_url

    def _next(self, request: Request) -> Reply:
        with self._lock:
            return self.script.pop(0) if self.script else NO_REPLY_LEFT

    def json(
        self,
        body: Any,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Answer the next request with a JSON body (after ``delay_s`` seconds)."""
        self.script.append(Reply.json(body, status, headers, delay_s))

    def sse(self, events: Sequence[str]) -> None:
        """Answer the next request with a server-sent event stream, one write per event."""
        self.script.append(Reply.sse(events))

    @property
    def sent(self) -> list[Request]:
        return self.server.requests

    @property
    def bodies(self) -> list[Any]:
        return [request.body for request in self.server.requests]


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    with server.server:
        yield server


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
